package suite

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestRollingRestartFrontdoors restarts two frontdoors one at a time (SIGTERM, drain, start again
// with the same node id and state dir: what a rolling upgrade does) while an idempotent franz-go
// producer keeps producing to six partitions spread over both. Every acknowledged record must be
// in Fluss exactly once at its acknowledged offset, none may fail, and the longest time without
// any acknowledgement around each restart is reported. The frontdoors have a catalogsvc of their
// own, so the suite's shared frontdoor keeps its partitions. FERRY_TEST_FAULTS=0 skips it.
func TestRollingRestartFrontdoors(t *testing.T) {
	testenv.SkipFaults(t)
	e, f := need(t)
	requireInitProducerID(t, e.kafka)
	db := dbName(t, f, "rolling")
	cols := []testenv.Column{{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()}, {Name: "pad", Type: "STRING"}}
	const partitions = 6
	topic := topicTable(t, f, db, "rolled", partitions, cols, nil)

	names, seeds := startFrontdoors(t, e, "rolling", []int{11, 12}, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(2000),
		kgo.MetadataMinAge(250*time.Millisecond), kgo.RecordDeliveryTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	waitForBrokers(t, cl, topic, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var (
		mu       sync.Mutex
		acked    = map[int64]sent{}
		failed   = map[int64]error{}
		ackTimes = map[int32][]time.Time{} // per partition, in callback order
		wg       sync.WaitGroup
	)
	stop := make(chan struct{})
	produced := make(chan int64, 1)
	go func() {
		var id int64
		for ; ; id++ {
			select {
			case <-stop:
				produced <- id
				return
			default:
			}
			i := id
			rec := &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: fmt.Appendf(nil, `{"id": %d, "pad": "%040d"}`, i, i)}
			wg.Add(1)
			cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed[i] = err
					return
				}
				acked[i] = fromKgo(r)
				ackTimes[r.Partition] = append(ackTimes[r.Partition], time.Now())
			})
			if i%partitions == partitions-1 {
				time.Sleep(2 * time.Millisecond) // a steady stream, not a flood
			}
		}
	}()

	type window struct {
		name           string
		start, up, end time.Time
	}
	var windows []window
	time.Sleep(2 * time.Second)
	for _, name := range names {
		w := window{name: name, start: time.Now()}
		before := e.stack.Service(name).Pid()
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
		err := e.stack.Restart(rctx, name)
		rcancel()
		if err != nil {
			close(stop)
			t.Fatalf("restart %s: %v", name, err)
		}
		if e.stack.Service(name).Pid() == before {
			t.Fatalf("%s was not restarted (same pid %d)", name, before)
		}
		w.up = time.Now()
		time.Sleep(3 * time.Second) // producers find it again and catch up
		w.end = time.Now()
		windows = append(windows, w)
	}
	close(stop)
	total := <-produced
	wg.Wait()

	for id, err := range failed {
		t.Errorf("record %d not acknowledged: %v (%d of %d failed)", id, err, len(failed), total)
		break
	}
	// The pause a restart causes: per partition, the longest time without an acknowledgement
	// from the restart's start to 3 s after it serves again; the worst partition is the one
	// the restarted frontdoor led. Every partition must be acknowledged again after the restart.
	for _, w := range windows {
		var worst time.Duration
		worstPart := int32(-1)
		for p, times := range ackTimes {
			slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
			gap, prev, resumed := time.Duration(0), w.start, false
			for _, at := range times {
				if at.Before(w.start) || at.After(w.end) {
					continue
				}
				gap = max(gap, at.Sub(prev))
				prev = at
				resumed = resumed || at.After(w.up)
			}
			gap = max(gap, w.end.Sub(prev))
			if !resumed {
				t.Errorf("restart of %s: partition %d got no acknowledgement after the restart", w.name, p)
			}
			if gap > worst {
				worst, worstPart = gap, p
			}
		}
		t.Logf("restart of %s (%v until it served again): longest time without an acknowledgement %v (partition %d)",
			w.name, w.up.Sub(w.start).Round(time.Millisecond), worst.Round(time.Millisecond), worstPart)
	}

	rows := f.Scan(t, db, "rolled", testenv.ScanOptions{Timeout: 60 * time.Second})
	at, copies := rowIDs(t, rows)
	dups, missing, misplaced := 0, 0, 0
	for id := int64(0); id < total; id++ {
		n := copies[id]
		if n > 1 {
			dups++
		}
		s, ok := acked[id]
		if !ok {
			continue
		}
		if n == 0 {
			missing++
		} else if at[pos{s.Partition, s.Offset}] != id {
			misplaced++
		}
	}
	t.Logf("%d produced, %d acknowledged, %d failed; Fluss holds %d rows: %d duplicated, %d acknowledged but missing, %d not at their acknowledged offset",
		total, len(acked), len(failed), len(rows), dups, missing, misplaced)
	if dups > 0 || missing > 0 || misplaced > 0 || len(acked) != int(total) {
		t.Errorf("want every record acknowledged and stored exactly once at its acknowledged offset")
	}
}

// startFrontdoors starts a catalogsvc and frontdoors with the given node ids registered with it
// (each with its own state dir, env added to each frontdoor's) and returns the frontdoors' names
// and Kafka addresses. They stop when the test ends.
func startFrontdoors(t *testing.T, e *suiteEnv, name string, nodes []int, env map[string]string) (names, kafka []string) {
	t.Helper()
	cat, ok := e.stack.Spec(stack.Catalog)
	fd, ok2 := e.stack.Spec(stack.Frontdoor)
	if !ok || !ok2 {
		t.Fatal("stack has no catalogsvc or frontdoor spec")
	}
	ports, err := freePorts(1 + 3*len(nodes))
	if err != nil {
		t.Fatal(err)
	}
	host := e.stack.Config().Host
	addr := func(p int) string { return net.JoinHostPort(host, strconv.Itoa(p)) }
	catSpec := cloneSpec(cat, "catalogsvc-"+name, map[string]int{"grpc": ports[0]})
	catSpec.Env["FERRY_LISTEN"] = addr(ports[0])
	specs := []stack.ServiceSpec{catSpec}
	for i, node := range nodes {
		fdName := "frontdoor-" + name + "-" + strconv.Itoa(node)
		s := cloneSpec(fd, fdName, map[string]int{"grpc": ports[1+2*i], "kafka": ports[2+2*i], "metrics": ports[1+2*len(nodes)+i]})
		s.Env["FERRY_LISTEN"] = addr(ports[1+2*i])
		s.Env["FERRY_KAFKA_LISTEN"] = addr(ports[2+2*i])
		s.Env["FERRY_ADVERTISED_ADDR"] = addr(ports[2+2*i])
		s.Env["FERRY_CATALOG_ADDR"] = addr(ports[0])
		s.Env["FERRY_NODE_ID"] = strconv.Itoa(node)
		for k, v := range env {
			s.Env[k] = v
		}
		specs = append(specs, s)
		names = append(names, fdName)
		kafka = append(kafka, addr(ports[2+2*i]))
	}
	startServices(t, e, specs...)
	return names, kafka
}

// waitForBrokers waits until Metadata lists n brokers and spreads topic's leaders over all of
// them (each frontdoor registers with catalogsvc on its own schedule).
func waitForBrokers(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		leaders, brokers, err := partitionLeaders(ctx, cl, topic)
		cancel()
		if err == nil && brokers == n && len(leaders) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Metadata did not list %d brokers leading %s within 60s: leaders %v, %d brokers, %v", n, topic, leaders, brokers, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// partitionLeaders asks Metadata for topic and returns the set of its partitions' leaders and
// how many brokers the answer lists.
func partitionLeaders(ctx context.Context, cl *kgo.Client, topic string) (map[int32]bool, int, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, 0, err
	}
	leaders := map[int32]bool{}
	for _, tp := range resp.Topics {
		if err := kerr.ErrorForCode(tp.ErrorCode); err != nil {
			return nil, 0, err
		}
		for _, p := range tp.Partitions {
			leaders[p.Leader] = true
		}
	}
	return leaders, len(resp.Brokers), nil
}
