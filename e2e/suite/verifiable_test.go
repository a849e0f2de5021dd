package suite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	stdmaps "maps"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// vcEvent is one JSON line of Kafka's VerifiableConsumer.
type vcEvent struct {
	Name       string `json:"name"`
	Partitions []struct {
		Partition int32 `json:"partition"`
		MinOffset int64 `json:"minOffset"`
		MaxOffset int64 `json:"maxOffset"`
	} `json:"partitions"`
	Offsets []struct {
		Partition int32 `json:"partition"`
		Offset    int64 `json:"offset"`
	} `json:"offsets"`
	Success bool `json:"success"`
}

// vcGroup is what the group's VerifiableConsumers reported, in the order it arrived.
type vcGroup struct {
	mu        sync.Mutex
	consumed  map[int32][][2]int64 // partition: consumed offset ranges
	committed map[int32]int64      // partition: last committed offset
	backwards []string             // commits below an earlier one
	assigned  map[string]int       // instance: partitions_assigned events seen
	failed    []string
}

func (g *vcGroup) record(instance string, ev vcEvent) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch ev.Name {
	case "partitions_assigned":
		g.assigned[instance]++
	case "records_consumed":
		for _, p := range ev.Partitions {
			g.consumed[p.Partition] = append(g.consumed[p.Partition], [2]int64{p.MinOffset, p.MaxOffset})
		}
	case "offsets_committed":
		if !ev.Success {
			g.failed = append(g.failed, fmt.Sprintf("%s: a commit failed: %+v", instance, ev.Offsets))
		}
		for _, o := range ev.Offsets {
			if last, ok := g.committed[o.Partition]; ok && o.Offset < last {
				g.backwards = append(g.backwards, fmt.Sprintf("%s: partition %d committed %d after %d", instance, o.Partition, o.Offset, last))
			}
			g.committed[o.Partition] = o.Offset
		}
	}
}

// maxConsumed is the highest offset consumed of each partition.
func (g *vcGroup) maxConsumed() map[int32]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[int32]int64{}
	for p, rs := range g.consumed {
		for _, r := range rs {
			out[p] = max(out[p], r[1])
		}
	}
	return out
}

// startVerifiableConsumer runs one org.apache.kafka.tools.VerifiableConsumer (commits after each
// poll) and feeds its events to g; stop ends it with SIGTERM, as Kafka's system tests bounce one.
// name tells the consumer's events apart; instance is its group.instance.id ("" for a dynamic
// member).
func startVerifiableConsumer(t *testing.T, lib, addr, topic, group, instance string, g *vcGroup, name string) (stop func()) {
	t.Helper()
	args := []string{"-cp", filepath.Join(lib, "*"), "org.apache.kafka.tools.VerifiableConsumer",
		"--bootstrap-server", addr, "--topic", topic, "--group-id", group, "--session-timeout", "30000",
		"--reset-policy", "earliest"}
	if instance != "" {
		args = append(args, "--group-instance-id", instance)
	}
	cmd := exec.Command("java", args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev vcEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				g.record(name, ev)
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(40 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			_ = cmd.Wait()
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestVerifiableConsumersBounce: three Kafka VerifiableConsumers share a topic of six partitions
// while a producer writes; each is stopped and started again in turn, as Kafka's system tests
// bounce consumers. Every acknowledged record is consumed. As static members (group.instance.id)
// no committed offset goes back and the restarts start no rebalance
// (ferry_frontdoor_group_rebalances_total stays); as dynamic members they do rebalance, which
// the metric shows.
func TestVerifiableConsumersBounce(t *testing.T) {
	t.Run("static", func(t *testing.T) { bounceVerifiableConsumers(t, true) })
	t.Run("dynamic", func(t *testing.T) { bounceVerifiableConsumers(t, false) })
}

func bounceVerifiableConsumers(t *testing.T, static bool) {
	e, f := need(t)
	lib := kafkaToolsLib(t)
	db := dbName(t, f, "verifiable")
	topic := topicTable(t, f, db, "bounce", 6, []testenv.Column{{Name: "id", Type: "BIGINT"}}, nil)
	group := "vc-" + db
	g := &vcGroup{consumed: map[int32][][2]int64{}, committed: map[int32]int64{}, assigned: map[string]int{}}
	rebalances := func() float64 {
		v, _ := scrapeService(t, e, stack.Frontdoor).sum("ferry_frontdoor_group_rebalances_total", map[string]string{"group": group})
		return v
	}

	// The producer writes until told to stop, keeping what was acknowledged.
	producer := newKgo(t, e.kafka)
	acked := map[int32]int64{} // partition: highest acknowledged offset
	var ackMu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for n := 0; ctx.Err() == nil; n++ {
			var recs []*kgo.Record
			for p := range int32(6) {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, `{"id": %d}`, n*6+int(p))})
			}
			pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
			res := producer.ProduceSync(pctx, recs...)
			pcancel()
			ackMu.Lock()
			for _, r := range res {
				if r.Err == nil {
					acked[r.Record.Partition] = max(acked[r.Record.Partition], r.Record.Offset)
				}
			}
			ackMu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()

	instances := []string{"vc-0", "vc-1", "vc-2"}
	stops := map[string]func(){}
	id := func(inst string) string {
		if static {
			return inst
		}
		return ""
	}
	for _, inst := range instances {
		stops[inst] = startVerifiableConsumer(t, lib, e.kafka, topic, group, id(inst), g, inst)
	}
	waitUntil := func(what string, d time.Duration, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v", what, d)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	waitUntil("every consumer assigned and consuming every partition", 2*time.Minute, func() bool {
		g.mu.Lock()
		n := len(g.assigned)
		g.mu.Unlock()
		return n == 3 && len(g.maxConsumed()) == 6
	})
	waitUntil("the first generation counted in ferry_frontdoor_group_rebalances_total", 30*time.Second, func() bool { return rebalances() >= 1 })
	time.Sleep(3 * time.Second) // the group settles
	before := rebalances()

	for _, inst := range instances {
		stops[inst]()
		time.Sleep(time.Second)
		stops[inst] = startVerifiableConsumer(t, lib, e.kafka, topic, group, id(inst), g, inst)
		g.mu.Lock()
		was := g.assigned[inst]
		g.mu.Unlock()
		waitUntil(inst+" back with its partitions", time.Minute, func() bool {
			g.mu.Lock()
			defer g.mu.Unlock()
			return g.assigned[inst] > was
		})
		time.Sleep(2 * time.Second)
	}
	cancel()
	<-produced
	ackMu.Lock()
	last := stdmaps.Clone(acked)
	ackMu.Unlock()
	waitUntil("every acknowledged record consumed", 2*time.Minute, func() bool {
		got := g.maxConsumed()
		for p, o := range last {
			if got[p] < o {
				return false
			}
		}
		return true
	})
	for _, inst := range instances {
		stops[inst]()
	}
	after := rebalances()

	g.mu.Lock()
	defer g.mu.Unlock()
	// Every acknowledged offset lies in a consumed range (offsets are dense: one record each).
	for p, end := range last {
		for o := int64(0); o <= end; o++ {
			found := false
			for _, r := range g.consumed[p] {
				if r[0] <= o && o <= r[1] {
					found = true
					break
				}
			}
			if !found {
				t.Fatalf("partition %d offset %d was acknowledged and never consumed", p, o)
			}
		}
	}
	if !static {
		// Partitions move between processes: commits fail during a rebalance and their events
		// may arrive out of order, so only the static case checks the commits.
		if after <= before {
			t.Errorf("dynamic members' restarts: %v generations before, %v after; want rebalances counted", before, after)
		}
		t.Logf("acknowledged up to %v; %v generations, %v from the restarts", last, after, after-before)
		return
	}
	for _, b := range append(g.backwards, g.failed...) {
		t.Error(b)
	}
	if after != before {
		t.Errorf("the three restarts rebalanced the group: %v generations before, %v after", before, after)
	}
	t.Logf("acknowledged up to %v; %v generations, none from the restarts", last, after)
}
