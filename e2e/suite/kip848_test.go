package suite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/e2e/clients"
	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// memberEvents is what the members of one consumer protocol group reported (Kafka's
// VerifiableConsumer event lines, which the confluent-kafka member prints too), by member name.
type memberEvents struct {
	mu       sync.Mutex
	owned    map[string]map[int32]bool
	consumed map[string]map[int32][][2]int64
	// ownedTopics is owned by "topic/partition", for members of several topics.
	ownedTopics map[string]map[string]bool
}

// topicEvent is an event line's topic names, which vcEvent leaves out.
type topicEvent struct {
	Name       string `json:"name"`
	Partitions []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
	} `json:"partitions"`
}

func newMemberEvents() *memberEvents {
	return &memberEvents{owned: map[string]map[int32]bool{}, consumed: map[string]map[int32][][2]int64{}, ownedTopics: map[string]map[string]bool{}}
}

func (m *memberEvents) record(name string, ev vcEvent, tev topicEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.owned[name] == nil {
		m.owned[name], m.consumed[name], m.ownedTopics[name] = map[int32]bool{}, map[int32][][2]int64{}, map[string]bool{}
	}
	for i, p := range ev.Partitions {
		tp := fmt.Sprintf("%s/%d", tev.Partitions[i].Topic, p.Partition)
		switch ev.Name {
		case "partitions_assigned":
			m.owned[name][p.Partition], m.ownedTopics[name][tp] = true, true
		case "partitions_revoked", "partitions_lost":
			delete(m.owned[name], p.Partition)
			delete(m.ownedTopics[name], tp)
		case "records_consumed":
			m.consumed[name][p.Partition] = append(m.consumed[name][p.Partition], [2]int64{p.MinOffset, p.MaxOffset})
		}
	}
}

// ownedTopicPartitions lists the "topic/partition"s a member holds, sorted.
func (m *memberEvents) ownedTopicPartitions(name string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.ownedTopics[name]))
}

// ownedBy lists the partitions a member holds.
func (m *memberEvents) ownedBy(name string) map[int32]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int32]bool{}
	for p := range m.owned[name] {
		out[p] = true
	}
	return out
}

// lastConsumed is the highest offset any member consumed of each partition.
func (m *memberEvents) lastConsumed() map[int32]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int32]int64{}
	for _, parts := range m.consumed {
		for p, rs := range parts {
			for _, r := range rs {
				if o, ok := out[p]; !ok || r[1] > o {
					out[p] = r[1]
				}
			}
		}
	}
	return out
}

// firstConsumed is the lowest offset one member consumed of each partition.
func (m *memberEvents) firstConsumed(name string) map[int32]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int32]int64{}
	for p, rs := range m.consumed[name] {
		for _, r := range rs {
			if o, ok := out[p]; !ok || r[0] < o {
				out[p] = r[0]
			}
		}
	}
	return out
}

// startMember runs a group member process whose stdout is event lines and feeds them to ev under
// name; stop sends SIGTERM (the member closes, leaving the group) and waits for it to end.
func startMember(t *testing.T, ev *memberEvents, name string, cmd *exec.Cmd) (stop func()) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e vcEvent
			var te topicEvent
			if json.Unmarshal(sc.Bytes(), &e) == nil && json.Unmarshal(sc.Bytes(), &te) == nil {
				ev.record(name, e, te)
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
			if s := stderr.String(); s != "" {
				t.Logf("member %s stderr:\n%s", name, tailString(s, 3000))
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// javaMember is Kafka's VerifiableConsumer with group.protocol=consumer and the uniform assignor
// (it commits after every poll).
func javaMember(t *testing.T, addr, topic, group string) *exec.Cmd {
	lib := kafkaToolsLib(t)
	return exec.Command("java", "-cp", filepath.Join(lib, "*"), "org.apache.kafka.tools.VerifiableConsumer",
		"--bootstrap-server", addr, "--topic", topic, "--group-id", group, "--group-protocol", "consumer",
		"--group-remote-assignor", "uniform", "--reset-policy", "earliest")
}

// pythonMember is confluent-kafka (librdkafka 2.x) with group.protocol=consumer and the range
// assignor.
func pythonMember(t *testing.T, addr, topic, group string) *exec.Cmd {
	py := filepath.Join(clients.RepoRoot(), ".cache", "clients", "venv", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		if os.Getenv(testenv.EnvRequireFluss) == "1" {
			t.Fatalf("confluent-kafka venv missing (tools/install-clients.sh): %v", err)
		}
		t.Skipf("confluent-kafka venv missing: %v", err)
	}
	return exec.Command(py, "-B", filepath.Join("testdata", "kip848_consumer.py"), addr, topic, group, "range")
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// produceRound writes n records to each of the topic's partitions.
func produceRound(t *testing.T, addr, topic string, partitions, n, round int) {
	t.Helper()
	var recs []*kgo.Record
	for p := range int32(partitions) {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, `{"id": %d}`, round*1000+int(p)*100+i)})
		}
	}
	kgoProduce(t, newKgo(t, addr), recs, len(recs))
}

// TestConsumerProtocolJava: KIP-848 with Java kafka-clients 4.4 (Kafka's VerifiableConsumer,
// group.protocol=consumer). Two members share a 4-partition topic, two partitions each, the
// second getting its partitions only after the first revoked them; kafka-consumer-groups
// --describe shows the group; one member leaves and the other takes all four; after the members
// and then frontdoor and fetchsvc restart, a new member resumes at the committed offsets.
func TestConsumerProtocolJava(t *testing.T) {
	consumerProtocolMembers(t, javaMember, "uniform", true)
}

// TestConsumerProtocolConfluentKafka: the same with confluent-kafka (librdkafka 2.x,
// group.protocol=consumer, group.remote.assignor=range); the restart is of the members only.
func TestConsumerProtocolConfluentKafka(t *testing.T) {
	consumerProtocolMembers(t, pythonMember, "range", false)
}

// consumerProtocolMembers runs the scenario with members that ask for assignor.
func consumerProtocolMembers(t *testing.T, member func(t *testing.T, addr, topic, group string) *exec.Cmd, assignor string, restartServices bool) {
	e, f := need(t)
	db := dbName(t, f, "kip848")
	topic := topicTable(t, f, db, "shared", 4, []testenv.Column{{Name: "id", Type: "BIGINT"}}, nil)
	group := "kip848-" + db
	ev := newMemberEvents()
	produceRound(t, e.kafka, topic, 4, 10, 0)
	upTo := func(want int64) func() bool {
		return func() bool {
			got := ev.lastConsumed()
			for p := range int32(4) {
				if o, ok := got[p]; !ok || o < want {
					return false
				}
			}
			return true
		}
	}

	stopA := startMember(t, ev, "a", member(t, e.kafka, topic, group))
	waitFor(t, "member a owning all four partitions", 2*time.Minute, func() bool { return len(ev.ownedBy("a")) == 4 })
	waitFor(t, "the first ten records of each partition consumed", time.Minute, upTo(9))
	stopB := startMember(t, ev, "b", member(t, e.kafka, topic, group))
	waitFor(t, "a and b owning two partitions each", 2*time.Minute, func() bool {
		a, b := ev.ownedBy("a"), ev.ownedBy("b")
		for p := range b {
			if a[p] {
				t.Fatalf("partition %d owned by a and b at once: a %v, b %v", p, a, b)
			}
		}
		return len(a) == 2 && len(b) == 2
	})

	r := kmsg.NewPtrConsumerGroupDescribeRequest()
	r.Groups = []string{group}
	resp, _ := wireRoundTrip(t, e.kafka, r)
	if g := resp.(*kmsg.ConsumerGroupDescribeResponse).Groups[0]; g.ErrorCode != 0 || g.AssignorName != assignor || len(g.Members) != 2 {
		t.Fatalf("ConsumerGroupDescribe: %+v, want two members and the %s assignor", g, assignor)
	}
	out := consumerGroupsTool(t, e.kafka, "--describe", "--group", group)
	rows := toolRows(t, out, group, topic, 9, 3)
	if len(rows) != 4 {
		t.Fatalf("kafka-consumer-groups --describe shows %d partitions of %s, want 4:\n%s", len(rows), topic, out)
	}
	for p, cur := range rows {
		if cur != "10" {
			t.Fatalf("--describe: partition %d at %s, want 10:\n%s", p, cur, out)
		}
	}
	members := consumerGroupsTool(t, e.kafka, "--describe", "--members", "--group", group)
	n := 0
	for _, line := range strings.Split(members, "\n") {
		if f := strings.Fields(line); len(f) == 5 && f[0] == group && f[4] == "2" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("--describe --members lists %d members of two partitions, want 2:\n%s", n, members)
	}
	if list := consumerGroupsTool(t, e.kafka, "--list", "--type", "consumer"); !strings.Contains(list, group) {
		t.Fatalf("--list --type consumer does not name %s:\n%s", group, list)
	}
	if list := consumerGroupsTool(t, e.kafka, "--list", "--type", "classic"); strings.Contains(list, group) {
		t.Fatalf("--list --type classic names the consumer protocol group %s:\n%s", group, list)
	}

	stopB()
	waitFor(t, "a owning all four partitions after b left", time.Minute, func() bool { return len(ev.ownedBy("a")) == 4 })
	produceRound(t, e.kafka, topic, 4, 10, 1)
	waitFor(t, "the second round consumed by a", time.Minute, upTo(19))
	stopA()

	if restartServices {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for _, svc := range []string{stack.Frontdoor, stack.Fetch} {
			if err := e.stack.Kill(svc); err != nil {
				t.Fatalf("kill %s: %v", svc, err)
			}
		}
		for _, svc := range []string{stack.Fetch, stack.Frontdoor} {
			if err := e.stack.Restart(ctx, svc); err != nil {
				t.Fatalf("restart %s: %v", svc, err)
			}
		}
		waitTopic(t, topic, 4)
	}
	produceRound(t, e.kafka, topic, 4, 10, 2)
	startMember(t, ev, "c", member(t, e.kafka, topic, group))
	waitFor(t, "the third round consumed by a new member", 2*time.Minute, upTo(29))
	for p, o := range ev.firstConsumed("c") {
		if o != 20 {
			t.Fatalf("the new member started partition %d at %d, want the committed 20 (all of c: %v)", p, o, ev.firstConsumed("c"))
		}
	}
}

// TestConsumerProtocolRegexConfluentKafka: a confluent-kafka member subscribes to a regex, which
// librdkafka sends as the member's SubscribedTopicRegex; the coordinator assigns the partitions
// of every topic it matches, and not those of a topic it does not.
func TestConsumerProtocolRegexConfluentKafka(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "kip848regex")
	cols := []testenv.Column{{Name: "id", Type: "BIGINT"}}
	a := topicTable(t, f, db, "logs_a", 2, cols, nil)
	b := topicTable(t, f, db, "logs_b", 1, cols, nil)
	topicTable(t, f, db, "other", 2, cols, nil)
	ev := newMemberEvents()
	regex := "^" + strings.ReplaceAll(db, ".", `\.`) + `\.logs_.*`
	startMember(t, ev, "r", pythonMember(t, e.kafka, regex, "kip848-regex-"+db))
	want := []string{a + "/0", a + "/1", b + "/0"}
	waitFor(t, "the regex member owning the partitions of both matching topics", 2*time.Minute, func() bool {
		return slices.Equal(ev.ownedTopicPartitions("r"), want)
	})
}

// TestConsumerProtocolStaticJava: two static members (group.instance.id) of the consumer
// protocol; one is stopped (it leaves with epoch -2) and started again: the other keeps its two
// partitions meanwhile, the restarted one gets its old two back, and the group epoch stays.
func TestConsumerProtocolStaticJava(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "kip848static")
	topic := topicTable(t, f, db, "static", 4, []testenv.Column{{Name: "id", Type: "BIGINT"}}, nil)
	group := "kip848-static-" + db
	produceRound(t, e.kafka, topic, 4, 5, 0)
	ev := newMemberEvents()
	static := func(instance string) *exec.Cmd {
		cmd := javaMember(t, e.kafka, topic, group)
		cmd.Args = append(cmd.Args, "--group-instance-id", instance)
		return cmd
	}
	stop1 := startMember(t, ev, "s1", static("i1"))
	startMember(t, ev, "s2", static("i2"))
	waitFor(t, "s1 and s2 owning two partitions each", 2*time.Minute, func() bool {
		return len(ev.ownedBy("s1")) == 2 && len(ev.ownedBy("s2")) == 2
	})
	groupEpoch := func() int32 {
		r := kmsg.NewPtrConsumerGroupDescribeRequest()
		r.Groups = []string{group}
		resp, _ := wireRoundTrip(t, e.kafka, r)
		g := resp.(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
		if g.ErrorCode != 0 {
			t.Fatalf("ConsumerGroupDescribe: %v", kerr.ErrorForCode(g.ErrorCode))
		}
		return g.Epoch
	}
	waitFor(t, "the group stable", time.Minute, func() bool { return len(ev.lastConsumed()) == 4 })
	before, had, other := groupEpoch(), ev.ownedBy("s1"), ev.ownedBy("s2")
	stop1()
	time.Sleep(7 * time.Second) // more than a heartbeat interval: s2 would have been told
	if got := ev.ownedBy("s2"); fmt.Sprint(got) != fmt.Sprint(other) {
		t.Fatalf("s2 owns %v while s1 is away, want its own %v only", got, other)
	}
	startMember(t, ev, "s1-again", static("i1"))
	waitFor(t, "the restarted s1 owning its partitions", time.Minute, func() bool { return len(ev.ownedBy("s1-again")) == 2 })
	if got := ev.ownedBy("s1-again"); fmt.Sprint(got) != fmt.Sprint(had) {
		t.Fatalf("the restarted static member owns %v, want its old %v", got, had)
	}
	if after := groupEpoch(); after != before {
		t.Fatalf("group epoch %d after the static member's restart, want %d (no new assignment)", after, before)
	}
}

// TestConsumerProtocolWireMatchesKafkaBroker: ConsumerGroupHeartbeat and ConsumerGroupDescribe
// error answers, field by field against a Kafka 4.4 broker (error codes and messages, null
// member id and assignment).
func TestConsumerProtocolWireMatchesKafkaBroker(t *testing.T) {
	e, f := need(t)
	if !clients.BrokerInstalled() {
		t.Fatal(clients.ErrBrokerNotInstalled)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	broker, err := clients.StartBroker(ctx, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Stop() })
	group := "kip848-wire-" + dbName(t, f, "kip848wire")
	for _, addr := range []string{broker.Bootstrap, e.kafka} {
		waitCoordinator(t, ctx, addr, group)
	}
	// Both APIs listed at the broker's versions.
	listed := func(addr string) map[int16][2]int16 {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "ferry-e2e", "1.0"
		resp, err := newKgo(t, addr).SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int16][2]int16{}
		for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
			out[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		return out
	}
	brokerRanges, ferryRanges := listed(broker.Bootstrap), listed(e.kafka)
	for _, key := range []int16{68, 69} {
		if ferryRanges[key] != brokerRanges[key] {
			t.Errorf("%s: ferry lists v%d-v%d, the broker v%d-v%d", kmsg.NameForKey(key),
				ferryRanges[key][0], ferryRanges[key][1], brokerRanges[key][0], brokerRanges[key][1])
		}
	}
	heartbeat := func(v int16, member string, epoch int32, edit func(*kmsg.ConsumerGroupHeartbeatRequest)) func() kmsg.Request {
		return func() kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.SetVersion(v)
			r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = group, member, epoch, 30000
			r.SubscribedTopicNames, r.Topics = []string{"orders"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			if edit != nil {
				edit(r)
			}
			return r
		}
	}
	cases := []wireCase{
		{"heartbeat v1 without member id", heartbeat(1, "", 0, nil)},
		{"heartbeat v0 of an unknown member", heartbeat(0, "m-1", 3, nil)},
		{"heartbeat v1 of an unknown member", heartbeat(1, "m-1", 3, nil)},
		{"leave of an unknown member", heartbeat(1, "m-1", -1, nil)},
		{"join without rebalance timeout", heartbeat(1, "m-1", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 })},
		{"join owning partitions", heartbeat(1, "m-1", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{Partitions: []int32{0}}}
		})},
		{"join without subscription", heartbeat(1, "m-1", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil })},
		{"join with an unknown assignor", heartbeat(1, "m-1", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") })},
		{"static leave without instance id", heartbeat(1, "m-1", -2, nil)},
		{"epoch below -2", heartbeat(1, "m-1", -3, nil)},
		{"empty instance id", heartbeat(1, "m-1", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("") })},
	}
	for _, v := range []int16{0, 1} {
		cases = append(cases, wireCase{fmt.Sprintf("describe v%d of no group", v), func() kmsg.Request {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			r.SetVersion(v)
			r.Groups = []string{group}
			return r
		}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, wantRaw := wireRoundTrip(t, broker.Bootstrap, tc.req())
			// A fresh broker loads its group coordinator a while after FindCoordinator answers.
			for deadline := time.Now().Add(time.Minute); coordinatorLoading(want) && time.Now().Before(deadline); {
				time.Sleep(500 * time.Millisecond)
				want, wantRaw = wireRoundTrip(t, broker.Bootstrap, tc.req())
			}
			got, gotRaw := wireRoundTrip(t, e.kafka, tc.req())
			compareWire(t, want, got, wantRaw, gotRaw)
		})
	}
	liveGroupWire(t, ctx, broker.Bootstrap, e.kafka, group+"-live")
}

// liveGroupWire compares the answers about a live group, in order: a member subscribed to a
// topic neither side has (so that no answer holds topic ids, which differ), its heartbeat, the
// group as ConsumerGroupDescribe and DescribeGroups show it, an offset fetch with a stale epoch,
// a second static member refused, a member fenced by an instance id, a leave. Epoch numbers are
// not compared: a Kafka 4.4 broker bumps the group epoch twice at a group's first join and
// computes later assignments after a delay (the group is Assigning meanwhile), Ferry once and at
// once; each side's heartbeat carries the epoch that side gave.
func liveGroupWire(t *testing.T, ctx context.Context, brokerAddr, ferryAddr, group string) {
	waitCoordinator(t, ctx, brokerAddr, group)
	addrs := [2]string{brokerAddr, ferryAddr}
	epochs := [2]int32{}
	heartbeat := func(id string, epoch int32, instance *string) func(side int) kmsg.Request {
		return func(side int) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.SetVersion(1)
			r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis, r.InstanceID = group, id, epoch, -1, instance
			switch epoch {
			case 0:
				r.RebalanceTimeoutMillis, r.SubscribedTopicNames = 30000, []string{group + ".missing"}
				r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			case 1:
				r.MemberEpoch = epochs[side]
			}
			return r
		}
	}
	instance := kmsg.StringPtr("instance-1")
	steps := []struct {
		name string
		req  func(side int) kmsg.Request
	}{
		{"join of a live group", heartbeat("m-one", 0, nil)},
		{"heartbeat of a stable member", heartbeat("m-one", 1, nil)},
		{"ConsumerGroupDescribe v1 of a live group", func(int) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			r.SetVersion(1)
			r.Groups = []string{group}
			return r
		}},
		{"DescribeGroups v5 of a consumer protocol group", func(int) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.SetVersion(5)
			r.Groups = []string{group}
			return r
		}},
		{"DescribeGroups v6 of a consumer protocol group", func(int) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.SetVersion(6)
			r.Groups = []string{group}
			return r
		}},
		{"OffsetFetch v9 with a stale member epoch", func(int) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.SetVersion(9)
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group, rg.MemberID, rg.MemberEpoch = group, kmsg.StringPtr("m-one"), 99
			r.Groups = append(r.Groups, rg)
			return r
		}},
		{"static join", heartbeat("m-static", 0, instance)},
		{"second member with a live instance id", heartbeat("m-other", 0, instance)},
		{"heartbeat under another member's instance id", heartbeat("m-one", 1, instance)},
		{"leave", heartbeat("m-one", -1, nil)},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			var resps [2]kmsg.Response
			var canon [2]bool
			for side, addr := range addrs {
				var raw []byte
				resps[side], raw = wireRoundTrip(t, addr, st.req(side))
				canon[side] = bytes.Equal(resps[side].AppendTo(nil), raw)
				if hb, ok := resps[side].(*kmsg.ConsumerGroupHeartbeatResponse); ok && hb.ErrorCode == 0 && deref(hb.MemberID) == "m-one" && hb.MemberEpoch > 0 {
					epochs[side] = hb.MemberEpoch
				}
				maskEpochs(resps[side])
			}
			if canon[0] != canon[1] {
				t.Errorf("null/empty encoding differs: the broker's answer re-encodes to its bytes: %v, frontdoor's: %v", canon[0], canon[1])
			}
			// Both re-encoded after masking: compareWire compares the fields.
			compareWire(t, resps[0], resps[1], resps[0].AppendTo(nil), resps[1].AppendTo(nil))
		})
	}
}

// maskEpochs zeroes the positive epoch numbers of KIP-848 answers (see liveGroupWire).
func maskEpochs(resp kmsg.Response) {
	switch r := resp.(type) {
	case *kmsg.ConsumerGroupHeartbeatResponse:
		if r.MemberEpoch > 0 {
			r.MemberEpoch = 0
		}
	case *kmsg.ConsumerGroupDescribeResponse:
		for i := range r.Groups {
			r.Groups[i].Epoch, r.Groups[i].AssignmentEpoch = 0, 0
			for j := range r.Groups[i].Members {
				r.Groups[i].Members[j].MemberEpoch = 0
			}
		}
	}
}

// coordinatorLoading tells whether a KIP-848 answer says the coordinator is not ready yet.
func coordinatorLoading(resp kmsg.Response) bool {
	code := int16(0)
	switch r := resp.(type) {
	case *kmsg.ConsumerGroupHeartbeatResponse:
		code = r.ErrorCode
	case *kmsg.ConsumerGroupDescribeResponse:
		if len(r.Groups) > 0 {
			code = r.Groups[0].ErrorCode
		}
	}
	return code == kerr.CoordinatorLoadInProgress.Code || code == kerr.CoordinatorNotAvailable.Code || code == kerr.NotCoordinator.Code
}

// TestConsoleConsumer: Kafka's kafka-console-consumer reads a topic from the beginning with
// --max-messages and --timeout-ms and prints exactly the values produced (on stdout; its notices
// go to stderr); with --group (and group.protocol=consumer) it commits what it read, so
// kafka-consumer-groups --describe shows the group at the end of the topic.
func TestConsoleConsumer(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "console")
	topic := topicTable(t, f, db, "lines", 2, []testenv.Column{{Name: "line", Type: "STRING"}},
		map[string]string{"kafka.value.format": "string", "kafka.value.column": "line"})
	var recs []*kgo.Record
	want := map[string]bool{}
	for i := range 12 {
		v := fmt.Sprintf("line %d: ünïcödé, tab\there", i)
		want[v] = true
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(v)})
	}
	kgoProduce(t, newKgo(t, e.kafka), recs, len(recs))
	group := "console-" + db
	for _, args := range [][]string{
		{"--from-beginning", "--max-messages", "12", "--timeout-ms", "30000"},
		{"--from-beginning", "--max-messages", "12", "--timeout-ms", "30000", "--group", group,
			"--command-property", "group.protocol=consumer"},
	} {
		cmd := exec.Command("java", append([]string{"-cp", filepath.Join(kafkaToolsLib(t), "*"), "org.apache.kafka.tools.consumer.ConsoleConsumer",
			"--bootstrap-server", e.kafka, "--topic", topic}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		out := string(stdout)
		if err != nil {
			t.Fatalf("kafka-console-consumer %v: %v\n%s\n%s", args, err, out, stderr.String())
		}
		if !strings.Contains(stderr.String(), "Processed a total of 12 messages") {
			t.Fatalf("kafka-console-consumer %v: no summary of 12 messages on stderr:\n%s", args, stderr.String())
		}
		got := map[string]bool{}
		for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			switch {
			case want[line]:
				if got[line] {
					t.Fatalf("value %q printed twice:\n%s", line, out)
				}
				got[line] = true
			default:
				t.Fatalf("kafka-console-consumer printed %q, which was not produced:\n%s", line, out)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("kafka-console-consumer %v printed %d of %d values:\n%s", args, len(got), len(want), out)
		}
	}
	out := consumerGroupsTool(t, e.kafka, "--describe", "--group", group)
	rows := toolRows(t, out, group, topic, 9, 3)
	if len(rows) != 2 || rows[0] != "6" || rows[1] != "6" {
		t.Fatalf("the console consumer's group is at %v, want 6 of each partition:\n%s", rows, out)
	}
}
