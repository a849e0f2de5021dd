package broker

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/consume"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/groupapi"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/produce"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestApiVersionsAdvertisesRegistry(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for v := int16(0); v <= kafka.ApiVersionsMax; v++ {
		c := dialRaw(t, h.addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "ferry-test", "1.0"
		resp := c.roundTrip(req).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		want := map[int16][2]int16{
			kafka.ProduceKey: {produce.ProduceAdvertisedMin, produce.ProduceMax}, groupapi.FindCoordinatorKey: {groupapi.FindCoordinatorMin, groupapi.FindCoordinatorMax}, kafka.MetadataKey: {kafka.MetadataMin, kafka.MetadataMax}, kafka.ApiVersionsKey: {kafka.ApiVersionsMin, kafka.ApiVersionsMax},
			consume.FetchKey: {consume.FetchMin, consume.FetchMax}, produce.InitProducerIDKey: {produce.InitProducerIDMin, produce.InitProducerIDMax},
		}
		for _, a := range adminServed { // admin.go: served with every configuration
			want[a.key] = [2]int16{a.min, a.max}
		}
		if len(resp.ApiKeys) != len(want) {
			t.Fatalf("v%d: %d api keys, want %d (no SASL configured)", v, len(resp.ApiKeys), len(want))
		}
		for _, k := range resp.ApiKeys {
			if w, ok := want[k.ApiKey]; !ok || w != [2]int16{k.MinVersion, k.MaxVersion} {
				t.Errorf("v%d: key %d range %d-%d, want %v", v, k.ApiKey, k.MinVersion, k.MaxVersion, w)
			}
		}
	}
}

// TestApiVersionsUnsupportedVersion: a newer ApiVersions gets a v0 answer
// with UNSUPPORTED_VERSION and our ranges, on a connection that stays open.
func TestApiVersionsUnsupportedVersion(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, v := range []int16{5, 9, 127} {
		c := dialRaw(t, h.addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		corr := c.send(req)
		v0 := kmsg.NewPtrApiVersionsRequest() // decode the answer as v0
		resp := c.recv(v0, corr).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Fatalf("v%d: error %d, want UNSUPPORTED_VERSION", v, resp.ErrorCode)
		}
		i := slices.IndexFunc(resp.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == kafka.ApiVersionsKey })
		if i < 0 || resp.ApiKeys[i].MaxVersion != kafka.ApiVersionsMax {
			t.Fatalf("v%d: ApiVersions range missing from the v0 answer: %+v", v, resp.ApiKeys)
		}
		// The client retries on the same connection.
		retry := kmsg.NewPtrApiVersionsRequest()
		retry.Version = kafka.ApiVersionsMax
		retry.ClientSoftwareName, retry.ClientSoftwareVersion = "ferry-test", "1.0"
		if r := c.roundTrip(retry).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
			t.Fatalf("retry with v%d: error %d", kafka.ApiVersionsMax, r.ErrorCode)
		}
	}
}

func TestApiVersionsInvalidSoftwareName(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := dialRaw(t, h.addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "bad name!", "1.0"
	if r := c.roundTrip(req).(*kmsg.ApiVersionsResponse); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("error %d, want INVALID_REQUEST", r.ErrorCode)
	}
}

// TestMalformedInputClosesConnection sends broken frames; each must close
// that connection while another connection keeps being served.
func TestMalformedInputClosesConnection(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: func(c *kafka.Config) {
		c.MaxRequestBytes = 1 << 16
		c.ConnInFlightBytes = 1 << 17
		c.ServerInFlightBytes = 1 << 18
	}})
	bystander := dialRaw(t, h.addr)

	header := func(key, version int16) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, 1)
		return binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	}
	framed := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	produceV2 := kmsg.NewPtrProduceRequest()
	produceV2.Version = 2

	for _, tc := range []struct {
		name  string
		bytes []byte
		// halfClose: the client stops sending after the bytes (truncated
		// frame); the server must give up on the frame.
		halfClose bool
	}{
		{"oversize frame", binary.BigEndian.AppendUint32(nil, 1<<20), false},
		{"negative size", binary.BigEndian.AppendUint32(nil, 0xfffffff0), false},
		{"header shorter than 8 bytes", framed([]byte{0, 18, 0}), false},
		{"client id longer than frame", framed(append(header(18, 0)[:8], 0, 50, 'a')), false},
		{"client id length below -1", framed(append(header(18, 0)[:8], 0xff, 0xf0)), false},
		{"unknown api key", framed(header(999, 0)), false},
		{"api not served (ListOffsets)", framed(header(2, 5)), false},
		{"fetch is advertised but not served", framed(append(header(1, 4), make([]byte, 40)...)), false},
		{"produce v2 below the Kafka 4 floor (though advertised)", frame(produceV2, 1, nil), false},
		{"metadata v14 above our max", framed(append(header(3, 14), 0)), false},
		{"truncated body", framed(append(header(3, 13), 0)), false},
		{"bad header tag count", framed(append(header(3, 13), 0xff, 0xff, 0xff, 0xff, 0x0f)), false},
		{"frame cut short", append(binary.BigEndian.AppendUint32(nil, 100), header(18, 0)...), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, h.addr)
			c.write(tc.bytes)
			if tc.halfClose {
				_ = c.conn.(interface{ CloseWrite() error }).CloseWrite()
			}
			c.expectClosed()
			// The server keeps serving others.
			req := kmsg.NewPtrApiVersionsRequest()
			if r := bystander.roundTrip(req).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
				t.Fatalf("bystander got error %d", r.ErrorCode)
			}
		})
	}
}

// TestPipelinedResponsesInOrder sends many requests without waiting and
// checks the answers come back in request order; produce answers need
// the backends, ApiVersions answers are immediate, so internal completion
// order differs from request order.
func TestPipelinedResponsesInOrder(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := dialRaw(t, h.addr)
	type sent struct {
		req  kmsg.Request
		corr int32
	}
	var all []sent
	for i := 0; i < 30; i++ {
		var req kmsg.Request
		switch i % 3 {
		case 0:
			req = produceReq(12, 1, "orders", 3, batchOf(t, "pipelined"))
		case 1:
			md := kmsg.NewPtrMetadataRequest()
			md.Version = 12
			req = md
		default:
			req = kmsg.NewPtrApiVersionsRequest()
		}
		all = append(all, sent{req, c.send(req)})
	}
	for _, s := range all {
		resp := c.recv(s.req, s.corr) // fails on a correlation mismatch
		if pr, ok := resp.(*kmsg.ProduceResponse); ok {
			if ec := pr.Topics[0].Partitions[0].ErrorCode; ec != 0 {
				t.Fatalf("produce error %d", ec)
			}
		}
	}
	if got := len(h.ap.Log(100, 3)); got != 10 {
		t.Fatalf("appended %d records, want 10", got)
	}
}

func TestIdleTimeoutClosesConnection(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: func(c *kafka.Config) { c.IdleTimeout = 100 * time.Millisecond }})
	c := dialRaw(t, h.addr)
	c.roundTrip(kmsg.NewPtrApiVersionsRequest())
	c.expectClosed()
}

func TestConnectionLimit(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: func(c *kafka.Config) { c.MaxConnections = 1 }})
	first := dialRaw(t, h.addr)
	first.roundTrip(kmsg.NewPtrApiVersionsRequest())
	second := dialRaw(t, h.addr)
	second.expectClosed()
	if n := h.srv.NumConns(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
	first.roundTrip(kmsg.NewPtrApiVersionsRequest())
}

// TestGracefulDrain: Shutdown while a produce waits on the transcoder; the
// response is still written before the connection closes.
func TestGracefulDrain(t *testing.T) {
	hold := make(chan struct{})
	h := newHarness(t, harnessOpts{hold: hold})
	c := dialRaw(t, h.addr)
	req := produceReq(12, -1, "orders", 0, batchOf(t, "drained"))
	corr := c.send(req)
	waitFor(t, func() bool { return h.tcs[0].Jobs.Load() == 1 })

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- h.srv.Shutdown(ctx)
	}()
	// New connections are refused once draining started.
	waitFor(t, func() bool { return h.srv.Draining.Load() })
	close(hold)
	resp := c.recv(req, corr).(*kmsg.ProduceResponse)
	if ec := resp.Topics[0].Partitions[0].ErrorCode; ec != 0 {
		t.Fatalf("drained produce error %d", ec)
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if n := h.srv.NumConns(); n != 0 {
		t.Fatalf("%d connections open after shutdown", n)
	}
	c.expectClosed()
}

// TestBackpressureStopsReading: with a budget of one request in flight,
// the second request is not read (nor transcoded) until the first is done.
func TestBackpressureStopsReading(t *testing.T) {
	hold := make(chan struct{})
	h := newHarness(t, harnessOpts{hold: hold, cfg: func(c *kafka.Config) {
		c.MaxRequestBytes = 1024
		c.ConnInFlightBytes = 1024
		c.ServerInFlightBytes = 1 << 20
	}})
	c := dialRaw(t, h.addr)
	// Two requests of ~600 bytes: together over the 1 KiB budget.
	val := strings.Repeat("x", 450)
	r1 := produceReq(12, 1, "orders", 0, batchOf(t, val))
	r2 := produceReq(12, 1, "orders", 0, batchOf(t, val+"2"))
	c1, c2 := c.send(r1), c.send(r2)
	waitFor(t, func() bool { return h.tcs[0].Jobs.Load() == 1 })
	time.Sleep(100 * time.Millisecond)
	if n := h.tcs[0].Jobs.Load(); n != 1 {
		t.Fatalf("%d transcode jobs while the budget allows one request", n)
	}
	close(hold)
	for _, x := range []struct {
		r    kmsg.Request
		corr int32
	}{{r1, c1}, {r2, c2}} {
		if ec := c.recv(x.r, x.corr).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; ec != 0 {
			t.Fatalf("error %d", ec)
		}
	}
	if log := h.ap.Log(100, 0); len(log) != 2 || log[1] != val+"2" {
		t.Fatalf("log has %d records", len(log))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFindCoordinatorNotAvailable(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for v := int16(groupapi.FindCoordinatorMin); v <= groupapi.FindCoordinatorMax; v++ {
		c := dialRaw(t, h.addr)
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version = v
		req.CoordinatorKey = "group-a"
		req.CoordinatorKeys = []string{"group-a", "group-b"}
		resp := c.roundTrip(req).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			if resp.ErrorCode != kerr.CoordinatorNotAvailable.Code || resp.NodeID != -1 {
				t.Fatalf("v%d: %+v", v, resp)
			}
			continue
		}
		if len(resp.Coordinators) != 2 {
			t.Fatalf("v%d: %d coordinators, want 2", v, len(resp.Coordinators))
		}
		for _, co := range resp.Coordinators {
			if co.ErrorCode != kerr.CoordinatorNotAvailable.Code || co.NodeID != -1 {
				t.Fatalf("v%d: %+v", v, co)
			}
		}
	}
}

// TestServerBudgetSpansConnections: the server-wide budget holds back a
// second connection while the first one's request is in flight.
func TestServerBudgetSpansConnections(t *testing.T) {
	hold := make(chan struct{})
	h := newHarness(t, harnessOpts{hold: hold, cfg: func(c *kafka.Config) {
		c.MaxRequestBytes = 1024
		c.ConnInFlightBytes = 1024
		c.ServerInFlightBytes = 1024
	}})
	val := strings.Repeat("y", 450)
	a, b := dialRaw(t, h.addr), dialRaw(t, h.addr)
	ra, rb := produceReq(12, 1, "orders", 1, batchOf(t, val)), produceReq(12, 1, "orders", 2, batchOf(t, val))
	ca := a.send(ra)
	waitFor(t, func() bool { return h.tcs[0].Jobs.Load() == 1 })
	cb := b.send(rb)
	time.Sleep(100 * time.Millisecond)
	if n := h.tcs[0].Jobs.Load(); n != 1 {
		t.Fatalf("%d transcode jobs while the server budget allows one request", n)
	}
	close(hold)
	if ec := a.recv(ra, ca).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; ec != 0 {
		t.Fatalf("a: error %d", ec)
	}
	if ec := b.recv(rb, cb).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; ec != 0 {
		t.Fatalf("b: error %d", ec)
	}
}

// TestStalledSizeFieldCloses: two bytes of a size field and then silence
// must end the connection at the idle timeout, not spin.
func TestStalledSizeFieldCloses(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: func(c *kafka.Config) { c.IdleTimeout = 100 * time.Millisecond }})
	c := dialRaw(t, h.addr)
	c.write([]byte{0, 0})
	c.expectClosed()
}
