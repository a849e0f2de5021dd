package suite

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/stack"
)

// adversarialInflight is the -kafka-inflight-bytes (and per-connection budget) of the frontdoor
// under attack; -kafka-max-request-bytes stays at its default, 100 MiB.
const adversarialInflight = 128 << 20

// TestAdversarialRequestsBoundHeap: attackers on concurrent connections send the worst request
// shapes at the byte budgets to a frontdoor of its own (-kafka-inflight-bytes 128 MiB) while a
// franz-go producer keeps producing through it:
//
//   - Produce v3 with 1 000 000 null record sets for partitions 0-2 of a real topic (8 MB, the
//     request of issue #17), and a 100 MiB variant with 12 500 000;
//   - Produce v9 with 60 000 entries for distinct partitions (just under the element limit, so
//     served: each answered with an error), and with 60 000 entries of the same topic and
//     partition (duplicates, merged);
//   - Metadata v12 naming 60 000 distinct unknown topics, and 3 000 000 (80 MB);
//   - ApiVersions v3 (no authentication needed) with 1 000 000 tagged fields.
//
// frontdoor's peak RSS (VmHWM) must stay under baseline + 4 x 128 MiB. The derivation: what a
// request holds is charged to two budgets of -kafka-inflight-bytes each, its frame bytes and
// its decoded work (docs/kafka-api.md, "What a request may cost"), so live request memory stays
// under 2 x 128 MiB; Go's collector (GOGC=100) lets the heap grow to twice the live heap before
// it collects, hence 4 x. Before the fix a single 8 MB request took frontdoor to 964 MiB.
// Every record the producer had acknowledged must be in Fluss at its offset, and frontdoor must
// still serve afterwards.
func TestAdversarialRequestsBoundHeap(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "adversarial")
	addr, pid := startBoundedFrontdoor(t, e)
	topic := topicTableAt(t, f, addr, db, "target", jsonBuckets, jsonColumns, jsonProps)
	baseline := procStatusKiB(t, pid, "VmRSS")
	ceiling := baseline + 4*(adversarialInflight>>10) // kB, as /proc reports

	// A watchdog samples RSS and kills frontdoor once it passes the ceiling, so that a
	// regression fails this test without taking the machine's memory with it.
	stop := make(chan struct{})
	var killedAt atomic.Int64 // the RSS that got frontdoor killed, kB
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if rss, err := readProcStatus(pid, "VmRSS"); err == nil && rss > ceiling {
				killedAt.Store(rss)
				_ = e.stack.Kill(boundedFrontdoor)
				return
			}
		}
	}()

	// The producer: 1500 records in chunks of 10, through the frontdoor under attack.
	cl := newKgo(t, addr, kgo.ProducerLinger(time.Millisecond))
	recs := make([]sent, 1500)
	for i := range recs {
		recs[i] = jsonRecord("target", i)
	}
	var acked []sent
	var produceErr error
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		acked, produceErr = kgoProduceErr(cl, toKgo(topic, recs), 10)
	}()

	shapes := []attackShape{
		{"produce v3, 1 000 000 null entries on partitions 0-2", produceNullEntries(3, topic, 1_000_000, func(i int) int32 { return int32(i % 3) })},
		{"produce v3, 12 500 000 null entries (100 MB)", produceNullEntries(3, topic, 12_500_000, func(i int) int32 { return int32(i % 3) })},
		{"produce v9, 60 000 distinct partitions", produceNullEntries(9, topic, 60_000, func(i int) int32 { return int32(i) })},
		{"produce v9, 60 000 duplicates of partition 0", produceNullEntries(9, topic, 60_000, func(int) int32 { return 0 })},
		{"metadata v12, 60 000 unknown topics", metadataTopics(60_000)},
		{"metadata v12, 3 000 000 unknown topics", metadataTopics(3_000_000)},
		{"api versions v3, 1 000 000 tagged fields", apiVersionsTags(1_000_000)},
	}
	const attackers, rounds = 4, 2
	var attacks sync.WaitGroup
	outcomes := make([][]string, attackers)
	for a := range attackers {
		attacks.Add(1)
		go func() {
			defer attacks.Done()
			for r := range rounds {
				for i := range shapes {
					s := shapes[(i+a)%len(shapes)]
					outcomes[a] = append(outcomes[a], fmt.Sprintf("round %d %s: %s", r, s.name, attack(addr, s.frame)))
				}
			}
		}()
	}
	attacks.Wait()
	<-produced
	close(stop)
	watch.Wait()
	for _, o := range outcomes[0] {
		t.Log(o)
	}

	if rss := killedAt.Load(); rss > 0 {
		t.Fatalf("frontdoor's RSS reached %d MiB, over the ceiling of %d MiB (baseline %d MiB + 4 x -kafka-inflight-bytes): killed",
			rss>>10, ceiling>>10, baseline>>10)
	}
	peak := procStatusKiB(t, pid, "VmHWM")
	t.Logf("frontdoor RSS: baseline %d MiB, peak %d MiB, ceiling %d MiB", baseline>>10, peak>>10, ceiling>>10)
	if peak > ceiling {
		t.Fatalf("frontdoor's peak RSS %d MiB is over the ceiling of %d MiB", peak>>10, ceiling>>10)
	}
	if produceErr != nil {
		t.Fatalf("the producer beside the attack: %v", produceErr)
	}
	if len(acked) != len(recs) {
		t.Fatalf("%d of %d records acknowledged", len(acked), len(recs))
	}
	// frontdoor still serves: one more record, then everything is in Fluss at its offset.
	more := jsonRecord("target", len(recs))
	acked = append(acked, kgoProduce(t, cl, toKgo(topic, []sent{more}), 1)...)
	verifyRows(t, f, db, "target", acked, jsonRow(len(recs)+1))
}

const boundedFrontdoor = "frontdoor-bounded"

// startBoundedFrontdoor starts catalogsvc-bounded and frontdoor-bounded (in-flight budgets of
// adversarialInflight) on free ports and returns the frontdoor's Kafka address and pid. Both stop
// when the test ends.
func startBoundedFrontdoor(t *testing.T, e *suiteEnv) (string, int) {
	t.Helper()
	cat, ok := e.stack.Spec(stack.Catalog)
	fd, ok2 := e.stack.Spec(stack.Frontdoor)
	if !ok || !ok2 {
		t.Fatal("stack has no catalogsvc or frontdoor spec")
	}
	ports, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	host := e.stack.Config().Host
	addr := func(p int) string { return net.JoinHostPort(host, strconv.Itoa(p)) }
	catSpec := cloneSpec(cat, "catalogsvc-bounded", map[string]int{"grpc": ports[0]})
	catSpec.Env["FERRY_LISTEN"] = addr(ports[0])
	fdSpec := cloneSpec(fd, boundedFrontdoor, map[string]int{"grpc": ports[1], "kafka": ports[2]})
	fdSpec.Env["FERRY_LISTEN"] = addr(ports[1])
	fdSpec.Env["FERRY_KAFKA_LISTEN"] = addr(ports[2])
	fdSpec.Env["FERRY_ADVERTISED_ADDR"] = addr(ports[2])
	fdSpec.Env["FERRY_CATALOG_ADDR"] = addr(ports[0])
	fdSpec.Env["FERRY_KAFKA_INFLIGHT_BYTES"] = strconv.Itoa(adversarialInflight)
	fdSpec.Env["FERRY_KAFKA_CONN_INFLIGHT_BYTES"] = strconv.Itoa(adversarialInflight)
	// Debug logs a line per refused partition: a million of them would be the test's cost.
	fdSpec.Env["FERRY_LOG_LEVEL"] = "info"

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, spec := range []stack.ServiceSpec{catSpec, fdSpec} {
		if err := e.stack.StartService(ctx, spec); err != nil {
			t.Fatalf("start %s: %v", spec.Name, err)
		}
		name := spec.Name
		t.Cleanup(func() {
			if err := e.stack.StopService(name); err != nil && name != boundedFrontdoor {
				t.Errorf("stop %s: %v", name, err)
			}
		})
	}
	return addr(ports[2]), e.stack.Service(boundedFrontdoor).Pid()
}

type attackShape struct {
	name  string
	frame []byte
}

// attack sends frame on a new connection and says how it was answered.
func attack(addr string, frame []byte) string {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	start := time.Now()
	if _, err := c.Write(frame); err != nil {
		return fmt.Sprintf("write failed after %v (connection closed): %v", time.Since(start).Round(time.Millisecond), err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "reset") {
			return fmt.Sprintf("connection closed after %v", time.Since(start).Round(time.Millisecond))
		}
		return "read: " + err.Error()
	}
	n, err := io.Copy(io.Discard, io.LimitReader(c, int64(binary.BigEndian.Uint32(size[:]))))
	if err != nil {
		return "read answer: " + err.Error()
	}
	return fmt.Sprintf("answered with %d bytes after %v", n, time.Since(start).Round(time.Millisecond))
}

// frameOf wraps body as a request frame: size, api key, version, correlation id, client id, and
// the header's empty tag section in flexible versions.
func frameOf(key, version int16, flexible bool, body func([]byte) []byte) []byte {
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, uint16(len("attacker")))
	b = append(b, "attacker"...)
	if flexible {
		b = append(b, 0)
	}
	b = body(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// produceNullEntries is a Produce request (v3 or v9) for topic with n null record sets, entry i
// for partition part(i), written by hand: kmsg would take 40 bytes a entry to build it.
func produceNullEntries(version int16, topic string, n int, part func(int) int32) []byte {
	flexible := version >= 9
	return frameOf(0, version, flexible, func(b []byte) []byte {
		b = slices.Grow(b, n*8+len(topic)+32)
		if flexible {
			b = append(b, 0) // null transactional id
		} else {
			b = binary.BigEndian.AppendUint16(b, 0xffff)
		}
		b = binary.BigEndian.AppendUint16(b, 0xffff) // acks -1
		b = binary.BigEndian.AppendUint32(b, 30_000) // timeout
		if flexible {
			b = binary.AppendUvarint(b, 2) // one topic
			b = binary.AppendUvarint(b, uint64(len(topic)+1))
			b = append(b, topic...)
			b = binary.AppendUvarint(b, uint64(n+1))
			for i := range n {
				b = binary.BigEndian.AppendUint32(b, uint32(part(i)))
				b = append(b, 0, 0) // null records, no tags
			}
			return append(b, 0, 0) // topic tags, request tags
		}
		b = binary.BigEndian.AppendUint32(b, 1)
		b = binary.BigEndian.AppendUint16(b, uint16(len(topic)))
		b = append(b, topic...)
		b = binary.BigEndian.AppendUint32(b, uint32(n))
		for i := range n {
			b = binary.BigEndian.AppendUint32(b, uint32(part(i)))
			b = binary.BigEndian.AppendUint32(b, 0xffffffff) // null records
		}
		return b
	})
}

// metadataTopics is a Metadata v12 request naming n distinct topics that do not exist.
func metadataTopics(n int) []byte {
	return frameOf(3, 12, true, func(b []byte) []byte {
		b = binary.AppendUvarint(b, uint64(n+1))
		for i := range n {
			name := "nx" + strconv.Itoa(i)
			b = append(b, make([]byte, 16)...) // topic id
			b = binary.AppendUvarint(b, uint64(len(name)+1))
			b = append(b, name...)
			b = append(b, 0) // tags
		}
		return append(b, 0, 0, 0) // allow auto creation, topic operations, tags
	})
}

// apiVersionsTags is an ApiVersions v3 request with n distinct empty tagged fields.
func apiVersionsTags(n int) []byte {
	return frameOf(18, 3, true, func(b []byte) []byte {
		for _, s := range []string{"ferry-e2e", "1.0"} {
			b = binary.AppendUvarint(b, uint64(len(s)+1))
			b = append(b, s...)
		}
		b = binary.AppendUvarint(b, uint64(n))
		for i := range n {
			b = binary.AppendUvarint(b, uint64(i+100)) // tags the request does not define
			b = append(b, 0)
		}
		return b
	})
}

// readProcStatus reads a kB field of /proc/<pid>/status (VmRSS, VmHWM).
func readProcStatus(pid int, field string) (int64, error) {
	fh, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

func procStatusKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	v, err := readProcStatus(pid, field)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
