package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/produce"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func testRegistry(t testing.TB) *kafka.Registry {
	t.Helper()
	noop := func(context.Context, *kafka.Session, kafka.Request) (kafka.Reply, error) { return kafka.Reply{}, nil }
	var reg *kafka.Registry
	reg, err := kafka.NewRegistry(
		kafka.ApiVersionsAPI(func() *kafka.Registry { return reg }),
		kafka.API{Key: kafka.MetadataKey, MinVersion: kafka.MetadataMin, MaxVersion: kafka.MetadataMax, Serve: noop},
		kafka.API{Key: kafka.ProduceKey, MinVersion: produce.ProduceMin, MaxVersion: produce.ProduceMax, Serve: noop},
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestReadRequest(t *testing.T) {
	reg := testRegistry(t)
	cid := "client-1"
	// frame() adds the 4-byte size; readRequest takes what follows it.
	body := func(req kmsg.Request, clientID *string) []byte { return frame(req, 42, clientID)[4:] }
	md := func(v int16) kmsg.Request { r := kmsg.NewPtrMetadataRequest(); r.Version = v; return r }
	av := func(v int16) kmsg.Request { r := kmsg.NewPtrApiVersionsRequest(); r.Version = v; return r }
	withTags := func(b []byte) []byte {
		// Metadata v12 header with one tagged field (tag 5, 2 bytes).
		hdrEnd := 8 + 2 + len(cid)
		out := append([]byte(nil), b[:hdrEnd]...)
		out = append(out, 1, 5, 2, 0xaa, 0xbb)
		return append(out, b[hdrEnd+1:]...)
	}
	for _, tc := range []struct {
		name     string
		in       []byte
		err      error
		key      int16
		clientID *string
		nilBody  bool
	}{
		{"metadata v0", body(md(0), &cid), nil, kafka.MetadataKey, &cid, false},
		{"metadata v12 flexible", body(md(12), &cid), nil, kafka.MetadataKey, &cid, false},
		{"null client id", body(md(4), nil), nil, kafka.MetadataKey, nil, false},
		{"header tagged fields skipped", withTags(body(md(12), &cid)), nil, kafka.MetadataKey, &cid, false},
		{"apiversions v4", body(av(4), &cid), nil, kafka.ApiVersionsKey, &cid, false},
		{"apiversions v9 reaches handler", body(av(9), &cid), nil, kafka.ApiVersionsKey, &cid, true},
		{"empty", nil, kafka.ErrTruncatedHeader, 0, nil, false},
		{"7 bytes", make([]byte, 7), kafka.ErrTruncatedHeader, 0, nil, false},
		{"no client id length", body(md(4), &cid)[:8], kafka.ErrTruncatedHeader, 0, nil, false},
		{"client id cut", body(md(4), &cid)[:12], kafka.ErrTruncatedHeader, 0, nil, false},
		{"unknown key", func() []byte { b := body(md(4), nil); binary.BigEndian.PutUint16(b, 500); return b }(), kafka.ErrUnknownAPIKey, 0, nil, false},
		{"known but not served", func() []byte { b := body(md(4), nil); binary.BigEndian.PutUint16(b, 1); return b }(), kafka.ErrUnknownAPIKey, 0, nil, false},
		{"metadata v14", func() []byte { b := body(md(13), nil); binary.BigEndian.PutUint16(b[2:], 14); return b }(), kafka.ErrUnsupportedVer, 0, nil, false},
		{"produce v2", func() []byte { r := kmsg.NewPtrProduceRequest(); r.Version = 2; return body(r, nil) }(), kafka.ErrUnsupportedVer, 0, nil, false},
		{"metadata body cut", body(md(4), nil)[:11], kafka.ErrMalformedBody, 0, nil, false},
		{"header tags cut", body(md(12), nil)[:10], kafka.ErrBadTaggedFields, 0, nil, false},
		{"header tag count huge", append(body(md(12), nil)[:10], 0xff, 0xff, 0xff, 0x7f), kafka.ErrBadTaggedFields, 0, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := kafka.ReadRequest(tc.in, reg)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if r.Header.Key != tc.key || r.Header.CorrelationID != 42 {
				t.Fatalf("header %+v", r.Header)
			}
			if (tc.clientID == nil) != (r.Header.ClientID == nil) || (tc.clientID != nil && *tc.clientID != *r.Header.ClientID) {
				t.Fatalf("client id %v, want %v", r.Header.ClientID, tc.clientID)
			}
			if (r.Body == nil) != tc.nilBody {
				t.Fatalf("body %v, want nil=%v", r.Body, tc.nilBody)
			}
		})
	}
}

func TestAppendResponseHeaders(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resp     kmsg.Response
		wantTags bool
	}{
		{"metadata v8 header v0", func() kmsg.Response { r := kmsg.NewPtrMetadataResponse(); r.Version = 8; return r }(), false},
		{"metadata v9 header v1", func() kmsg.Response { r := kmsg.NewPtrMetadataResponse(); r.Version = 9; return r }(), true},
		{"apiversions v3 header stays v0", func() kmsg.Response { r := kmsg.NewPtrApiVersionsResponse(); r.Version = 3; return r }(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := kafka.AppendResponse(nil, 9, tc.resp)
			if int(binary.BigEndian.Uint32(b)) != len(b)-4 {
				t.Fatalf("size prefix %d for %d bytes", binary.BigEndian.Uint32(b), len(b)-4)
			}
			body := tc.resp.AppendTo(nil)
			hdr := len(b) - 4 - len(body)
			if want := map[bool]int{false: 4, true: 5}[tc.wantTags]; hdr != want {
				t.Fatalf("header of %d bytes, want %d", hdr, want)
			}
		})
	}
}

func TestSnakeName(t *testing.T) {
	for in, want := range map[string]string{
		"Produce": "produce", "ApiVersions": "api_versions", "SASLHandshake": "sasl_handshake",
		"SASLAuthenticate": "sasl_authenticate", "Metadata": "metadata", "InitProducerID": "init_producer_id",
	} {
		if got := kafka.SnakeName(in); got != want {
			t.Errorf("snakeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRegistryRejectsBadRanges(t *testing.T) {
	noop := func(context.Context, *kafka.Session, kafka.Request) (kafka.Reply, error) { return kafka.Reply{}, nil }
	for _, tc := range []struct {
		name string
		apis []kafka.API
	}{
		{"beyond kmsg", []kafka.API{{Key: kafka.ProduceKey, MinVersion: 3, MaxVersion: 99, Serve: noop}}},
		{"min above max", []kafka.API{{Key: kafka.ProduceKey, MinVersion: 5, MaxVersion: 3, Serve: noop}}},
		{"unknown key", []kafka.API{{Key: 900, MinVersion: 0, MaxVersion: 0, Serve: noop}}},
		{"no handler", []kafka.API{{Key: kafka.ProduceKey, MinVersion: 3, MaxVersion: 9}}},
		{"twice", []kafka.API{{Key: kafka.ProduceKey, MaxVersion: 3, Serve: noop}, {Key: kafka.ProduceKey, MaxVersion: 3, Serve: noop}}},
	} {
		if _, err := kafka.NewRegistry(tc.apis...); err == nil {
			t.Errorf("%s: registry accepted", tc.name)
		}
	}
}

// FuzzReadRequest feeds arbitrary frames to the decoder: it must return a
// request or an error, never panic, and a decoded request must be served.
func FuzzReadRequest(f *testing.F) {
	reg := testRegistry(f)
	cid := "fuzz"
	for _, req := range []kmsg.Request{
		func() kmsg.Request { r := kmsg.NewPtrMetadataRequest(); r.Version = 12; return r }(),
		func() kmsg.Request { r := kmsg.NewPtrMetadataRequest(); r.Version = 0; return r }(),
		func() kmsg.Request { r := kmsg.NewPtrApiVersionsRequest(); r.Version = 3; return r }(),
		produceReq(9, 1, "orders", 0, batchOf(f, "a", "b")),
		produceReq(3, -1, "orders", 0, batchOf(f, "c")),
	} {
		f.Add(frame(req, 1, &cid)[4:])
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := kafka.ReadRequest(in, reg)
		if err != nil {
			return
		}
		api := reg.Lookup(r.Header.Key)
		if api == nil {
			t.Fatalf("decoded an unserved key %d", r.Header.Key)
		}
		inRange := r.Header.Version >= api.MinVersion && r.Header.Version <= api.MaxVersion
		if r.Body == nil && (inRange || r.Header.Key != kafka.ApiVersionsKey) {
			t.Fatalf("nil body for key %d v%d", r.Header.Key, r.Header.Version)
		}
		if r.Body != nil {
			// What we decoded must encode again without panicking.
			_ = r.Body.AppendTo(nil)
		}
	})
}
