package appendfaults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"

	"github.com/ferrygw/ferry/e2e/stack"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/testenv"
)

// privateStack starts a Fluss cluster of its own (not the test runner's, which these tests
// break) and appendsvc, built from this tree, pointed at it; both stop when the test ends.
// Fluss gets ports below the ephemeral range (32768-60999 here): a client socket lingering in
// TIME_WAIT on one of them would make the start fail. extra more tablet servers run on more such
// ports ("tablet-1", ...).
func privateStack(t *testing.T, name string, extra int) (*stack.Stack, *testenv.Helper, appendv1.AppendServiceClient) {
	t.Helper()
	testenv.SkipFaults(t)
	root, err := stack.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	jar := filepath.Join(root, ".cache", "fluss", "server-lib", "fluss-server-0.9.1-incubating.jar")
	if _, err := os.Stat(jar); err != nil {
		if os.Getenv(testenv.EnvRequireFluss) == "1" {
			t.Fatalf("%s=1 but the Fluss jars are not installed (tools/install.sh): %v", testenv.EnvRequireFluss, err)
		}
		t.Skipf("Fluss not installed (tools/install.sh): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var (
		st    *stack.Stack
		cfg   stack.Config
		ports []int
	)
	for attempt := 1; ; attempt++ {
		ports = lowFreePorts(t, 3+extra)
		appendPort := freePort(t)
		cfg = stack.TestConfig()
		cfg.Name, cfg.Root = name, root
		cfg.ZooKeeperPort, cfg.CoordinatorPort, cfg.TabletPort = ports[0], ports[1], ports[2]
		cfg.ExtraTabletPorts = ports[3:]
		cfg.FlussOnly, cfg.Services, cfg.AppendPort, cfg.AppendMetricsPort = false, []string{stack.Append}, appendPort, 0
		cfg.ServerHeap = "512m"
		cfg.StopGrace = 20 * time.Second
		cfg.Keep = os.Getenv("FERRY_TEST_KEEP") == "1"
		st, err = stack.Start(ctx, cfg, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
		if err == nil {
			break
		}
		// Free when picked, not held: another process may take a port before Fluss binds it.
		if attempt == 3 || !strings.Contains(err.Error(), "is not free") {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			st.KeepDir()
		}
		if err := st.Stop(); err != nil {
			t.Errorf("stopping the private stack: %v", err)
		}
		if st.Kept() {
			t.Logf("private stack's run directory kept: %s", st.Dir())
		}
	})
	h, err := testenv.NewHelper(cfg.HelperPath(), cfg.FlussBootstrap())
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := st.Spec(stack.Append)
	creds, err := st.Credentials(stack.Append)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(spec.GRPCAddr, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return st, h, appendv1.NewAppendServiceClient(conn)
}

// lowFreePorts returns n consecutive loopback ports between 20000 and 28000 that are free now:
// below the ephemeral range and below the test runner's cluster (28122, 28123, 28181).
func lowFreePorts(t *testing.T, n int) []int {
	t.Helper()
	for range 100 {
		base := 20000 + rand.IntN(8000-n)
		var ls []net.Listener
		for p := base; p < base+n; p++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if len(ls) == n {
			ports := make([]int, n)
			for i := range ports {
				ports[i] = base + i
			}
			return ports
		}
	}
	t.Fatalf("no %d free consecutive ports between 20000 and 28000", n)
	return nil
}

// freePort is a loopback port free at the time of asking.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// encodeIDName is one Arrow IPC stream batch, as transcodesvc hands them over, of the load
// table's columns (id BIGINT NOT NULL, name STRING): ids first..first+n-1 and names derived
// from them, so a scanned row names the job that wrote it.
func encodeIDName(first int64, n int) ([]byte, error) {
	mem := memory.NewGoAllocator()
	ids := array.NewInt64Builder(mem)
	defer ids.Release()
	names := array.NewStringBuilder(mem)
	defer names.Release()
	for i := range int64(n) {
		ids.Append(first + i)
		names.Append(fmt.Sprintf("row-%d", first+i))
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	cols := []arrow.Array{ids.NewArray(), names.NewArray()}
	defer cols[0].Release()
	defer cols[1].Release()
	rec := array.NewRecordBatch(schema, cols, int64(n))
	defer rec.Release()
	var b bytes.Buffer
	w := ipc.NewWriter(&b, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// answer is a job's answer and when it came.
type answer struct {
	resp *appendv1.AppendResponse
	at   time.Time
}

// collectAnswers reads a stream's answers until it ends.
func collectAnswers(s appendv1.AppendService_AppendClient, out chan<- answer) error {
	for {
		resp, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		out <- answer{resp: resp, at: time.Now()}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// restartTablet stops a tablet server (SIGTERM with the stack's grace, or SIGKILL), leaves it
// down for a while and starts it again with its id and data directory.
func restartTablet(ctx context.Context, st *stack.Stack, name string, down time.Duration, kill bool) error {
	var err error
	if kill {
		err = st.Kill(name)
	} else if p := st.Service(name); p != nil {
		err = p.Stop(st.Config().StopGrace)
	}
	if err != nil {
		return err
	}
	time.Sleep(down)
	return st.Restart(ctx, name)
}

// TestRealTabletRestart keeps appending through appendsvc while the only
// tablet server is stopped and started again (gracefully, then killed), and
// checks against what the Java reader finds in the table afterwards:
//   - every job answered with success is stored exactly once, at the offset
//     the answer named, with its rows in order; the one exception is jobs
//     answered before the SIGKILL that the crashed server then truncated
//     away (Fluss with one replica loses acknowledged data, see
//     verifyStored), which are counted and logged;
//   - every job that failed was answered as a failure with a retriable code
//     (the outage is transient), none was left unanswered;
//   - appendsvc, the same process with the same Fluss client, recovers
//     (reconnect, metadata refresh): appends succeed again after the server
//     is back.
//
// Jobs whose outcome is unknown (the server went away after appending but
// before answering) may have been stored although answered as failed, or
// stored twice by a retry; both are counted and logged, as without
// idempotent writer ids Fluss cannot tell a retry from a new batch.
func TestRealTabletRestart(t *testing.T) {
	began := time.Now()
	st, h, client := privateStack(t, "faults", 0)
	t.Logf("private Fluss and appendsvc ready after %v", time.Since(began).Round(time.Millisecond))
	ld := startLoad(t, client, h, 3, nil)
	ld.drain(3 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Successes the killed tablet server answered may be lost in its crash
	// recovery. It answers until the signal lands, and its answers arrive
	// after that, so the cut is when its successor serves, which only
	// answers after recovery: taking the moment before the kill would call
	// a success answered in between a failure.
	var recoveredAt time.Time
	for _, kill := range []bool{false, true} {
		mode := "SIGTERM"
		if kill {
			mode = "SIGKILL"
		}
		ld.whileRunning(t, mode, func() error { return restartTablet(ctx, st, "tablet", 5*time.Second, kill) })
		if kill {
			recoveredAt = ld.restarted // when the successor listened
		}
		ld.drain(2 * time.Second)
	}
	ld.finish(t)
	verifyStored(t, h, ld.db, "load", ld.jobs, ld.got, loadRowsPerJob, recoveredAt)
	t.Logf("whole test took %v", time.Since(began).Round(time.Millisecond))
}

// TestRealLeaderMove runs two tablet servers and a table with two replicas
// per bucket. It stops one tablet server gracefully (its buckets' leaders
// move to the other one, the client follows NOT_LEADER_OR_FOLLOWER and
// refreshed metadata), starts it again, then kills the other one. With a
// second replica holding everything acknowledged (acks -1), every success
// must be in the table, exactly once, at its offset: no loss is tolerated.
func TestRealLeaderMove(t *testing.T) {
	began := time.Now()
	st, h, client := privateStack(t, "leadermove", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Logf("private Fluss with two tablet servers ready after %v", time.Since(began).Round(time.Millisecond))
	ld := startLoad(t, client, h, 4, map[string]string{"table.replication.factor": "2"})
	ld.drain(3 * time.Second)
	// Tablet 0's graceful shutdown hands its leaderships to tablet 1, so
	// appends must go on while it is down.
	if n := ld.whileRunning(t, "SIGTERM tablet 0", func() error { return restartTablet(ctx, st, "tablet", 5*time.Second, false) }); n == 0 {
		t.Errorf("no append succeeded while tablet 0 was down: leaders did not move, or the client did not follow")
	}
	ld.drain(5 * time.Second) // let tablet 0 catch up and rejoin the ISR
	ld.whileRunning(t, "SIGKILL tablet 1", func() error { return restartTablet(ctx, st, "tablet-1", 5*time.Second, true) })
	ld.drain(2 * time.Second)
	ld.finish(t)
	verifyStored(t, h, ld.db, "load", ld.jobs, ld.got, loadRowsPerJob, time.Time{})
	t.Logf("whole test took %v", time.Since(began).Round(time.Millisecond))
}

// loadRowsPerJob is the size of every load job; job j holds ids
// j*1000 .. j*1000+loadRowsPerJob-1.
const loadRowsPerJob = 50

// load appends a 50-row job every 20 ms through appendsvc, round robin
// over the buckets of table "load", on one stream, and collects the
// answers. Its sender and receiver goroutines end with finish (or, on a
// failed test, with the stream's context).
type load struct {
	db       string
	jobs     map[uint64]sent // written by the sender until finish
	got      map[uint64]answer
	twice    []uint64 // jobs answered more than once
	answers  chan answer
	recvDone chan error
	stopSend chan struct{}
	sendDone chan error
	mu       sync.Mutex
	// restarted is when the last fault ended; drain counts successes
	// answered after it.
	restarted time.Time
}

func startLoad(t *testing.T, client appendv1.AppendServiceClient, h *testenv.Helper, buckets int, props map[string]string) *load {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	db := fmt.Sprintf("faults_%d", time.Now().UnixNano()%1e9)
	if err := h.CreateDatabase(ctx, db, false); err != nil {
		t.Fatal(err)
	}
	if props == nil {
		props = map[string]string{}
	}
	props["table.log.arrow.compression.type"] = "LZ4_FRAME"
	info, err := h.CreateTable(ctx, testenv.TableSpec{Database: db, Table: "load", BucketCount: buckets,
		Columns:    []testenv.Column{{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}},
		Properties: props})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := client.Append(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ld := &load{db: db, jobs: map[uint64]sent{}, got: map[uint64]answer{}, answers: make(chan answer, 1<<16),
		recvDone: make(chan error, 1), stopSend: make(chan struct{}), sendDone: make(chan error, 1)}
	go func() {
		ld.recvDone <- collectAnswers(stream, ld.answers)
		close(ld.answers)
	}()
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for j := uint64(1); ; j++ {
			select {
			case <-ld.stopSend:
				ld.sendDone <- stream.CloseSend()
				return
			case <-tick.C:
			}
			payload, err := encodeIDName(int64(j)*1000, loadRowsPerJob)
			if err != nil {
				ld.sendDone <- err
				return
			}
			r := &appendv1.AppendRequest{
				JobId: j, TableId: info.TableID, SchemaId: info.SchemaID, Database: info.Database, Table: info.Table,
				BucketId: int32(j % uint64(buckets)), ArrowCompression: catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME,
				ArrowIpc: payload, RecordCount: loadRowsPerJob, Acks: -1, TimeoutMs: 4000, WriterId: -1, BatchSequence: -1,
			}
			ld.mu.Lock()
			ld.jobs[j] = sent{bucket: r.BucketId, at: time.Now()}
			ld.mu.Unlock()
			if err := stream.Send(r); err != nil {
				ld.sendDone <- err
				return
			}
		}
	}()
	return ld
}

// drain records answers for d (or until the stream ends) and returns the
// successes among them answered after ld.restarted.
func (ld *load) drain(d time.Duration) int {
	ok := 0
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case a, more := <-ld.answers:
			if !more {
				return ok
			}
			if _, dup := ld.got[a.resp.GetJobId()]; dup {
				ld.twice = append(ld.twice, a.resp.GetJobId())
			}
			ld.got[a.resp.GetJobId()] = a
			if a.resp.GetErrorCode() == 0 && a.at.After(ld.restarted) {
				ok++
			}
		case <-timer.C:
			return ok
		}
	}
}

// whileRunning runs fault (which returns once the server is back) while
// answers keep being collected, then waits until 30 jobs succeeded. It
// returns how many jobs succeeded while the fault ran.
func (ld *load) whileRunning(t *testing.T, name string, fault func() error) int {
	t.Helper()
	t0 := time.Now()
	ld.restarted = t0
	during := 0
	done := make(chan error, 1)
	go func() { done <- fault() }()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ld.restarted = time.Now()
			t.Logf("%s: server listening again %v after the stop; %d appends succeeded meanwhile",
				name, ld.restarted.Sub(t0).Round(time.Millisecond), during)
			start := time.Now()
			for seen := 0; seen < 30; {
				if time.Since(start) > 2*time.Minute {
					t.Fatalf("%s: no recovery, %d successes in 2 minutes", name, seen)
				}
				seen += ld.drain(200 * time.Millisecond)
			}
			t.Logf("%s: 30 appends succeeded %v after that", name, time.Since(start).Round(time.Millisecond))
			return during
		default:
			during += ld.drain(100 * time.Millisecond)
		}
	}
}

// finish stops sending and collects the remaining answers.
func (ld *load) finish(t *testing.T) {
	t.Helper()
	close(ld.stopSend)
	if err := <-ld.sendDone; err != nil {
		t.Fatal(err)
	}
	ld.drain(2 * time.Minute) // returns when the stream ends
	if err := <-ld.recvDone; err != nil {
		t.Fatal(err)
	}
	if len(ld.twice) > 0 {
		t.Errorf("jobs answered more than once: %v", ld.twice)
	}
}

// sent is a job as the sender sent it.
type sent struct {
	bucket int32
	at     time.Time
}

// verifyStored scans the table with the Java reader and checks it against
// the answers (see TestRealTabletRestart). Successes answered before
// recoveredAt (zero: no crash), when the crashed tablet server's successor
// served, that are missing are counted as lost by Fluss, not failed: a
// tablet server that crashes truncates its log to the last high watermark
// it checkpointed, acknowledged batches included.
func verifyStored(t *testing.T, h *testenv.Helper, db, table string, jobs map[uint64]sent, got map[uint64]answer, rowsPerJob int, recoveredAt time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rows, err := h.Scan(ctx, db, table, testenv.ScanOptions{Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	type loc struct {
		bucket int32
		offset int64
	}
	at := make(map[loc]int64, len(rows)) // id stored at each position
	// copies[job] = base offsets (bucket, first offset) where the job's
	// first row was found.
	copies := map[uint64][]loc{}
	for _, r := range rows {
		id, err := strconv.ParseInt(fmt.Sprint(r.Row["id"]), 10, 64)
		if err != nil {
			t.Fatalf("row %+v: bad id: %v", r, err)
		}
		if want := fmt.Sprintf("row-%d", id); r.Row["name"] != want {
			t.Errorf("bucket %d offset %d: name %v, want %s", r.Bucket, r.Offset, r.Row["name"], want)
		}
		at[loc{r.Bucket, r.Offset}] = id
		job := uint64(id / 1000)
		if _, ok := jobs[job]; !ok || id%1000 >= int64(rowsPerJob) {
			t.Errorf("bucket %d offset %d: id %d was never sent", r.Bucket, r.Offset, id)
		}
		if id%1000 == 0 {
			copies[job] = append(copies[job], loc{r.Bucket, r.Offset})
		}
	}
	var ok, failed, unanswered, failedStored, duplicated, lost int
	codes := map[string]int{}
	for job := range jobs {
		a, answered := got[job]
		if !answered {
			unanswered++
			continue
		}
		if a.resp.GetErrorCode() != 0 {
			failed++
			codes[fluss.ErrorCode(a.resp.GetErrorCode()).String()]++
			if !a.resp.GetRetriable() || a.resp.GetBaseOffset() != -1 {
				t.Errorf("job %d: failure %v is not retriable or names an offset", job, a.resp)
			}
			if len(copies[job]) > 0 {
				failedStored++
				t.Logf("job %d answered %s but stored %d time(s) at %v", job, fluss.ErrorCode(a.resp.GetErrorCode()), len(copies[job]), copies[job])
			}
			continue
		}
		ok++
		base, bucket := a.resp.GetBaseOffset(), jobs[job].bucket
		intact := true
		for i := range int64(rowsPerJob) {
			if id := at[loc{bucket, base + i}]; id != int64(job)*1000+i {
				intact = false
			}
		}
		if !intact {
			if len(copies[job]) == 0 && !recoveredAt.IsZero() && a.at.Before(recoveredAt) {
				lost++
				continue
			}
			t.Errorf("job %d answered bucket %d offset %d, but its rows are not there (first row found at %v)", job, bucket, base, copies[job])
			continue
		}
		if len(copies[job]) > 1 {
			duplicated++
			t.Logf("job %d answered offset %d but stored %d times: %v", job, base, len(copies[job]), copies[job])
		}
	}
	if unanswered > 0 {
		t.Errorf("%d of %d jobs were never answered", unanswered, len(jobs))
	}
	t.Logf("jobs %d: succeeded %d, failed %d %v, failed but stored %d, succeeded and stored twice %d, "+
		"succeeded but lost in the tablet server's crash recovery %d; rows in table %d",
		len(jobs), ok, failed, codes, failedStored, duplicated, lost, len(rows))
}
