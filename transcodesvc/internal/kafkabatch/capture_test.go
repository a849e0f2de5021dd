package kafkabatch

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// captureBroker is the smallest Kafka broker a real client will produce to:
// it answers ApiVersions, Metadata, InitProducerId and Produce on one
// partition and keeps every record batch exactly as the client sent it. It
// exists to record fixtures from real client libraries.
type captureBroker struct {
	t  testing.TB
	ln net.Listener

	mu      sync.Mutex
	batches map[string][][]byte // topic -> raw batches in arrival order

	wg sync.WaitGroup
}

// apiRange is what the broker advertises. Produce stops at 12 because v13
// names topics by id only.
var captureAPIs = map[int16][2]int16{
	0:  {0, 12}, // Produce
	3:  {0, 12}, // Metadata
	18: {0, 3},  // ApiVersions
	22: {0, 4},  // InitProducerId
}

// advertisedOnly are APIs announced but never served. librdkafka 2.0
// derives "features" from the advertised ranges: message format v2 and zstd
// need Fetch listed, gzip and snappy need Produce v2 in range (MsgVer1), lz4
// needs FindCoordinator v0. And librdkafka <= 2.11 asks whether Produce v0
// is in range before it uses gzip, snappy or lz4 (a zeroed table entry), so
// the range starts at 0. Without these it silently sends uncompressed.
var advertisedOnly = map[int16][2]int16{
	1:  {0, 12}, // Fetch
	10: {0, 4},  // FindCoordinator
}

func newCaptureBroker(t testing.TB) *captureBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("capture broker: %v", err)
	}
	b := &captureBroker{t: t, ln: ln, batches: map[string][][]byte{}}
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(b.close)
	return b
}

func (b *captureBroker) addr() string { return b.ln.Addr().String() }

func (b *captureBroker) close() {
	b.ln.Close()
	b.wg.Wait()
}

func (b *captureBroker) captured(topic string) [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([][]byte(nil), b.batches[topic]...)
}

func (b *captureBroker) accept() {
	defer b.wg.Done()
	var conns sync.WaitGroup
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
		conns.Wait()
	}()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		open = append(open, c)
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer c.Close()
			if err := b.serve(c); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				b.t.Logf("capture broker connection: %v", err)
			}
		}()
	}
}

func (b *captureBroker) serve(c net.Conn) error {
	r := bufio.NewReader(c)
	for {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > 64<<20 {
			return fmt.Errorf("request of %d bytes", n)
		}
		msg := make([]byte, n)
		if _, err := io.ReadFull(r, msg); err != nil {
			return err
		}
		resp, err := b.handle(msg)
		if err != nil {
			return err
		}
		if resp == nil { // acks=0
			continue
		}
		if _, err := c.Write(resp); err != nil {
			return err
		}
	}
}

func (b *captureBroker) handle(msg []byte) ([]byte, error) {
	if len(msg) < 10 {
		return nil, fmt.Errorf("short request header")
	}
	key := int16(binary.BigEndian.Uint16(msg))
	version := int16(binary.BigEndian.Uint16(msg[2:]))
	corr := int32(binary.BigEndian.Uint32(msg[4:]))
	clientLen := int(int16(binary.BigEndian.Uint16(msg[8:])))
	pos := 10
	if clientLen > 0 {
		pos += clientLen
	}
	req := kmsg.RequestForKey(key)
	rng, ok := captureAPIs[key]
	if req == nil || !ok {
		return nil, fmt.Errorf("unexpected api key %d", key)
	}
	if key == 18 && version > rng[1] {
		// Too new: answer v0 with UNSUPPORTED_VERSION and our range so the
		// client retries with a version we know.
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		b.addVersions(resp)
		return frame(corr, false, resp.AppendTo(nil)), nil
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		var err error
		if pos, err = skipTags(msg, pos); err != nil {
			return nil, err
		}
	}
	if err := req.ReadFrom(msg[pos:]); err != nil {
		return nil, fmt.Errorf("api %d v%d: %w", key, version, err)
	}
	var resp kmsg.Response
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		out := r.ResponseKind().(*kmsg.ApiVersionsResponse)
		b.addVersions(out)
		resp = out
	case *kmsg.MetadataRequest:
		resp = b.metadata(r)
	case *kmsg.InitProducerIDRequest:
		out := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		out.ProducerID = 4242
		out.ProducerEpoch = 0
		resp = out
	case *kmsg.ProduceRequest:
		out := b.produce(r)
		if r.Acks == 0 {
			return nil, nil
		}
		resp = out
	}
	resp.SetVersion(version)
	// ApiVersions answers always use header v0 so any client can read them.
	flexHeader := resp.IsFlexible() && key != 18
	return frame(corr, flexHeader, resp.AppendTo(nil)), nil
}

func (b *captureBroker) addVersions(out *kmsg.ApiVersionsResponse) {
	for _, k := range []int16{0, 1, 3, 10, 18, 22} {
		rng, ok := captureAPIs[k]
		if !ok {
			rng = advertisedOnly[k]
		}
		out.ApiKeys = append(out.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: rng[0], MaxVersion: rng[1]})
	}
}

func (b *captureBroker) metadata(r *kmsg.MetadataRequest) kmsg.Response {
	out := r.ResponseKind().(*kmsg.MetadataResponse)
	host, portStr, _ := net.SplitHostPort(b.addr())
	var port int32
	fmt.Sscan(portStr, &port)
	out.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: host, Port: port}}
	out.ControllerID = 0
	clusterID := "capture"
	out.ClusterID = &clusterID
	for _, rt := range r.Topics {
		if rt.Topic == nil {
			continue
		}
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = rt.Topic
		t.TopicID = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, byte(len(*rt.Topic))}
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition = 0
		p.Leader = 0
		p.Replicas = []int32{0}
		p.ISR = []int32{0}
		t.Partitions = append(t.Partitions, p)
		out.Topics = append(out.Topics, t)
	}
	return out
}

func (b *captureBroker) produce(r *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	out := r.ResponseKind().(*kmsg.ProduceResponse)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range r.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset = int64(len(b.batches[t.Topic]))
			rp.LogAppendTime = -1
			b.batches[t.Topic] = append(b.batches[t.Topic], append([]byte(nil), p.Records...))
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

func frame(corr int32, flexHeader bool, body []byte) []byte {
	n := 4 + len(body)
	if flexHeader {
		n++
	}
	out := make([]byte, 0, 4+n)
	out = binary.BigEndian.AppendUint32(out, uint32(n))
	out = binary.BigEndian.AppendUint32(out, uint32(corr))
	if flexHeader {
		out = append(out, 0) // no tagged fields
	}
	return append(out, body...)
}

func skipTags(b []byte, pos int) (int, error) {
	n, m := binary.Uvarint(b[pos:])
	if m <= 0 {
		return 0, fmt.Errorf("bad tag count")
	}
	pos += m
	for i := uint64(0); i < n; i++ {
		_, m = binary.Uvarint(b[pos:])
		if m <= 0 {
			return 0, fmt.Errorf("bad tag")
		}
		pos += m
		size, m := binary.Uvarint(b[pos:])
		if m <= 0 || size > uint64(len(b)-pos-m) {
			return 0, fmt.Errorf("bad tag size")
		}
		pos += m + int(size)
	}
	return pos, nil
}

var _ = context.Background
