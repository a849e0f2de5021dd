package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func testRegistry(t testing.TB) *Registry {
	t.Helper()
	noop := func(context.Context, *Session, Request) (Reply, error) { return Reply{}, nil }
	var reg *Registry
	reg, err := NewRegistry(
		apiVersionsAPI(func() *Registry { return reg }),
		API{Key: metadataKey, MinVersion: metadataMin, MaxVersion: metadataMax, Serve: noop},
		API{Key: produceKey, MinVersion: produceMin, MaxVersion: produceMax, Serve: noop},
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
		{"metadata v0", body(md(0), &cid), nil, metadataKey, &cid, false},
		{"metadata v12 flexible", body(md(12), &cid), nil, metadataKey, &cid, false},
		{"null client id", body(md(4), nil), nil, metadataKey, nil, false},
		{"header tagged fields skipped", withTags(body(md(12), &cid)), nil, metadataKey, &cid, false},
		{"apiversions v4", body(av(4), &cid), nil, apiVersionsKey, &cid, false},
		{"apiversions v9 reaches handler", body(av(9), &cid), nil, apiVersionsKey, &cid, true},
		{"empty", nil, ErrTruncatedHeader, 0, nil, false},
		{"7 bytes", make([]byte, 7), ErrTruncatedHeader, 0, nil, false},
		{"no client id length", body(md(4), &cid)[:8], ErrTruncatedHeader, 0, nil, false},
		{"client id cut", body(md(4), &cid)[:12], ErrTruncatedHeader, 0, nil, false},
		{"unknown key", func() []byte { b := body(md(4), nil); binary.BigEndian.PutUint16(b, 500); return b }(), ErrUnknownAPIKey, 0, nil, false},
		{"known but not served", func() []byte { b := body(md(4), nil); binary.BigEndian.PutUint16(b, 1); return b }(), ErrUnknownAPIKey, 0, nil, false},
		{"metadata v14", func() []byte { b := body(md(13), nil); binary.BigEndian.PutUint16(b[2:], 14); return b }(), ErrUnsupportedVer, 0, nil, false},
		{"produce v2", func() []byte { r := kmsg.NewPtrProduceRequest(); r.Version = 2; return body(r, nil) }(), ErrUnsupportedVer, 0, nil, false},
		{"metadata body cut", body(md(4), nil)[:11], ErrMalformedBody, 0, nil, false},
		{"header tags cut", body(md(12), nil)[:10], ErrBadTaggedFields, 0, nil, false},
		{"header tag count huge", append(body(md(12), nil)[:10], 0xff, 0xff, 0xff, 0x7f), ErrBadTaggedFields, 0, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := readRequest(tc.in, reg)
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
			b := appendResponse(nil, 9, tc.resp)
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
		if got := snakeName(in); got != want {
			t.Errorf("snakeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRegistryRejectsBadRanges(t *testing.T) {
	noop := func(context.Context, *Session, Request) (Reply, error) { return Reply{}, nil }
	for _, tc := range []struct {
		name string
		apis []API
	}{
		{"beyond kmsg", []API{{Key: produceKey, MinVersion: 3, MaxVersion: 99, Serve: noop}}},
		{"min above max", []API{{Key: produceKey, MinVersion: 5, MaxVersion: 3, Serve: noop}}},
		{"unknown key", []API{{Key: 900, MinVersion: 0, MaxVersion: 0, Serve: noop}}},
		{"no handler", []API{{Key: produceKey, MinVersion: 3, MaxVersion: 9}}},
		{"twice", []API{{Key: produceKey, MaxVersion: 3, Serve: noop}, {Key: produceKey, MaxVersion: 3, Serve: noop}}},
	} {
		if _, err := NewRegistry(tc.apis...); err == nil {
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
		r, err := readRequest(in, reg)
		if err != nil {
			return
		}
		api := reg.Lookup(r.Header.Key)
		if api == nil {
			t.Fatalf("decoded an unserved key %d", r.Header.Key)
		}
		inRange := r.Header.Version >= api.MinVersion && r.Header.Version <= api.MaxVersion
		if r.Body == nil && (inRange || r.Header.Key != apiVersionsKey) {
			t.Fatalf("nil body for key %d v%d", r.Header.Key, r.Header.Version)
		}
		if r.Body != nil {
			// What we decoded must encode again without panicking.
			_ = r.Body.AppendTo(nil)
		}
	})
}
