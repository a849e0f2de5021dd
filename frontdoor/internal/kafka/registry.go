package kafka

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	ProduceKey          int16 = 0
	MetadataKey         int16 = 3
	SASLHandshakeKey    int16 = 17
	ApiVersionsKey      int16 = 18
	SASLAuthenticateKey int16 = 36
)

// Reply is what a handler's Serve returns. Serve runs on the connection's
// read loop in request order, so it must only do cheap work (validation,
// taking sequencer tickets, changing connection state); anything that
// waits on a backend goes into Later, which the connection runs on its own
// goroutine. Responses are still written in request order.
type Reply struct {
	// Resp is the response when it is known at once.
	Resp kmsg.Response
	// Later computes the response. It is always called exactly once after
	// Serve returned it, and runs to completion even if the client goes
	// away (its ctx ends only when a shutdown runs out of time), so it may
	// own resources Serve acquired and must bound its own duration.
	Later func(ctx context.Context) (kmsg.Response, error)
	// NoResponse: nothing is written back (Produce with acks=0). Later
	// still runs; if it returns an error the connection is closed, which
	// is how a broker tells an acks=0 producer that something failed.
	NoResponse bool
	// Raw is written as a frame of its own instead of a Kafka response:
	// the SASL token reply of the pre-KIP-152 handshake v0 flow.
	Raw []byte
	// CloseAfter closes the connection once Resp is written (a failed
	// SASL authentication).
	CloseAfter bool
}

// Ready wraps a response that is known now.
func Ready(resp kmsg.Response) Reply { return Reply{Resp: resp} }

// API is one Kafka API the server speaks: its key, the versions it serves
// and its handler.
type API struct {
	Key        int16
	MinVersion int16
	MaxVersion int16
	// AdvertisedMin, when below MinVersion, is the minimum ApiVersions
	// reports. Requests below MinVersion are still refused. Only for
	// clients that gate features on old versions being listed (see
	// produce.go).
	AdvertisedMin *int16
	// PreAuth: allowed before SASL authentication has completed.
	PreAuth bool
	// Serve handles a request whose Body is set and whose version is in
	// range (ApiVersions also gets out-of-range versions with a nil Body).
	// An error closes the connection after a log line.
	Serve func(ctx context.Context, s *Session, req Request) (Reply, error)
	// spanName is "kafka." plus the snake-case API name.
	spanName string
}

// Registry knows every served API. ApiVersions answers from it, so the
// advertised ranges are exactly what the handlers accept.
type Registry struct {
	byKey map[int16]*API
	keys  []kmsg.ApiVersionsResponseApiKey
}

// NewRegistry checks and indexes apis. Versions must lie within what kmsg
// can encode, since responses are encoded with kmsg.
func NewRegistry(apis ...API) (*Registry, error) {
	r := &Registry{byKey: map[int16]*API{}}
	for i := range apis {
		a := apis[i]
		req := kmsg.RequestForKey(a.Key)
		if req == nil {
			return nil, fmt.Errorf("kafka registry: unknown api key %d", a.Key)
		}
		if a.MinVersion < 0 || a.MinVersion > a.MaxVersion || a.MaxVersion > req.MaxVersion() {
			return nil, fmt.Errorf("kafka registry: %s versions %d-%d outside 0-%d",
				kmsg.NameForKey(a.Key), a.MinVersion, a.MaxVersion, req.MaxVersion())
		}
		if a.Serve == nil {
			return nil, fmt.Errorf("kafka registry: %s has no handler", kmsg.NameForKey(a.Key))
		}
		if _, dup := r.byKey[a.Key]; dup {
			return nil, fmt.Errorf("kafka registry: %s registered twice", kmsg.NameForKey(a.Key))
		}
		a.spanName = "kafka." + SnakeName(kmsg.NameForKey(a.Key))
		r.byKey[a.Key] = &a
		adv := a.MinVersion
		if a.AdvertisedMin != nil {
			if *a.AdvertisedMin < 0 || *a.AdvertisedMin > a.MinVersion {
				return nil, fmt.Errorf("kafka registry: %s advertised min %d outside 0-%d", kmsg.NameForKey(a.Key), *a.AdvertisedMin, a.MinVersion)
			}
			adv = *a.AdvertisedMin
		}
		r.keys = append(r.keys, kmsg.ApiVersionsResponseApiKey{ApiKey: a.Key, MinVersion: adv, MaxVersion: a.MaxVersion})
	}
	sort.Slice(r.keys, func(i, j int) bool { return r.keys[i].ApiKey < r.keys[j].ApiKey })
	return r, nil
}

// Lookup returns the API for key, or nil.
func (r *Registry) Lookup(key int16) *API { return r.byKey[key] }

// Ranges returns the served version range of every API, by key.
func (r *Registry) Ranges() []kmsg.ApiVersionsResponseApiKey {
	return append([]kmsg.ApiVersionsResponseApiKey(nil), r.keys...)
}

// SnakeName turns kmsg's API names (Produce, ApiVersions, SASLHandshake)
// into span name suffixes (produce, api_versions, sasl_handshake).
func SnakeName(name string) string {
	out := make([]byte, 0, len(name)+4)
	for i := 0; i < len(name); i++ {
		c := name[i]
		isUpper := c >= 'A' && c <= 'Z'
		if isUpper {
			// A boundary is an upper-case letter after a lower-case one,
			// or the last capital of an acronym before a lower-case letter.
			prevLower := i > 0 && name[i-1] >= 'a' && name[i-1] <= 'z'
			acronymEnd := i > 0 && name[i-1] >= 'A' && name[i-1] <= 'Z' && i+1 < len(name) && name[i+1] >= 'a' && name[i+1] <= 'z'
			if prevLower || acronymEnd {
				out = append(out, '_')
			}
			c += 'a' - 'A'
		}
		out = append(out, c)
	}
	return string(out)
}
