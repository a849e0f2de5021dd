// Command appendbench measures appendsvc against the official Fluss Java
// writer in one run, on the same cluster, with the same rows, compression,
// bucket count and acks:
//
//   - go:   Arrow IPC jobs (as transcodesvc produces them, -rows-per-job rows
//     each, round robin over the buckets) sent over gRPC to appendsvc (the
//     binary built from this tree, started on a loopback port through
//     e2e/stack, or -append-addr), timed from the first send to the last
//     answer;
//   - java: the same rows appended with Table.newAppend().createWriter()
//     (AppendBench.java, compiled with javac against .cache/fluss/client-lib),
//     timed inside the JVM from the first append until flush() returns.
//
// Both write a warm-up pass into a separate table first. Afterwards the
// row counts of both tables are checked with ListOffsets, and with -verify
// the Java reader (flusshelper) scans both tables and compares them row by
// row. Without -bootstrap a private Fluss cluster is started (e2e/stack) on
// ports that collide neither with the development nor the test cluster.
//
//	go run ./e2e/bench/appendbench -rows 1000000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ferrygw/ferry/e2e/stack"
	appendv1 "github.com/ferrygw/ferry/services/api/gen/ferry/append/v1"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/fluss/flusstest"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/services/testenv"
)

type config struct {
	Bootstrap   string
	AppendAddr  string
	Rows        int64
	RowsPerJob  int
	Buckets     int
	Compression string
	Streams     int
	Warmup      int64
	Sides       string
	Java        string
	JavaOpts    string
	JavaConf    string
	Verify      bool
	Keep        bool
	Timeout     time.Duration

	ZooKeeperPort, CoordinatorPort, TabletPort int
	ServerHeap                                 string
}

func (c *config) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Bootstrap, "bootstrap", "", "Fluss coordinator host:port; empty starts a private cluster")
	fs.StringVar(&c.AppendAddr, "append-addr", "", "appendsvc gRPC address to use; called in plaintext; empty starts appendsvc (built from this tree, mutual TLS) on a loopback port")
	fs.Int64Var(&c.Rows, "rows", 1_000_000, "rows each side writes")
	fs.IntVar(&c.RowsPerJob, "rows-per-job", 1000, "rows per AppendRequest (Arrow IPC batch)")
	fs.IntVar(&c.Buckets, "buckets", 4, "buckets of the tables")
	fs.StringVar(&c.Compression, "compression", "LZ4_FRAME", "table Arrow compression: NONE, LZ4_FRAME or ZSTD")
	fs.IntVar(&c.Streams, "streams", 1, "concurrent Append streams (frontdoor keeps one per connection)")
	fs.Int64Var(&c.Warmup, "warmup", 200_000, "rows each side writes into a warm-up table first (0: none)")
	fs.StringVar(&c.Sides, "sides", "go,java", "which writers to run: go, java or both")
	fs.StringVar(&c.Java, "java", "java", "java executable")
	fs.StringVar(&c.JavaOpts, "java-opts", "-Xmx1g", "JVM options for the Java writer (space separated)")
	fs.StringVar(&c.JavaConf, "java-conf", "", "extra Fluss client options for the Java writer, KEY=VALUE,...")
	fs.BoolVar(&c.Verify, "verify", false, "scan both tables with the Java reader and compare them row by row (slow: small -rows)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the benchmark database")
	fs.DurationVar(&c.Timeout, "timeout", 30*time.Minute, "bound for the whole run")
	fs.IntVar(&c.ZooKeeperPort, "zk-port", 24181, "private cluster: ZooKeeper port")
	fs.IntVar(&c.CoordinatorPort, "coordinator-port", 24122, "private cluster: coordinator port")
	fs.IntVar(&c.TabletPort, "tablet-port", 24123, "private cluster: tablet server port")
	fs.StringVar(&c.ServerHeap, "server-heap", "1g", "private cluster: JVM heap of the Fluss servers")
}

// Validate names the first bad flag.
func (c *config) Validate() error {
	switch {
	case c.Rows <= 0:
		return fmt.Errorf("-rows %d: must be positive", c.Rows)
	case c.RowsPerJob <= 0 || c.RowsPerJob > 1<<20:
		return fmt.Errorf("-rows-per-job %d: must be 1..%d", c.RowsPerJob, 1<<20)
	case c.Buckets <= 0 || c.Buckets > 1024:
		return fmt.Errorf("-buckets %d: must be 1..1024", c.Buckets)
	case !slices.Contains([]string{"NONE", "LZ4_FRAME", "ZSTD"}, c.Compression):
		return fmt.Errorf("-compression %q: want NONE, LZ4_FRAME or ZSTD", c.Compression)
	case c.Streams <= 0 || c.Streams > 256:
		return fmt.Errorf("-streams %d: must be 1..256", c.Streams)
	case c.Warmup < 0:
		return fmt.Errorf("-warmup %d: must not be negative", c.Warmup)
	case c.Timeout <= 0:
		return fmt.Errorf("-timeout %v: must be positive", c.Timeout)
	}
	for _, s := range strings.Split(c.Sides, ",") {
		if s != "go" && s != "java" {
			return fmt.Errorf("-sides %q: want go, java or go,java", c.Sides)
		}
	}
	if c.JavaConf != "" {
		for _, kv := range strings.Split(c.JavaConf, ",") {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return fmt.Errorf("-java-conf: %q is not KEY=VALUE", kv)
			}
		}
	}
	return nil
}

func (c *config) runs(side string) bool { return slices.Contains(strings.Split(c.Sides, ","), side) }

func main() {
	var cfg config
	fs := flag.NewFlagSet("appendbench", flag.ContinueOnError)
	cfg.flags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "appendbench:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if err := run(ctx, &cfg, log, os.Stdout); err != nil {
		log.Error("appendbench failed", "err", err)
		os.Exit(1)
	}
}

// result is one side's measurement.
type result struct {
	name    string
	elapsed time.Duration
}

func run(ctx context.Context, cfg *config, log *slog.Logger, out io.Writer) (err error) {
	root, err := stack.FindRoot(".")
	if err != nil {
		return err
	}
	// A stack for what is not given: a private Fluss without -bootstrap, appendsvc for the go
	// side without -append-addr.
	bootstrap, appendAddr := cfg.Bootstrap, cfg.AppendAddr
	// A given -append-addr is called in plaintext; the appendsvc started here uses the
	// stack's mutual TLS, as deployed.
	var appendCreds credentials.TransportCredentials = insecure.NewCredentials()
	startAppend := cfg.runs("go") && appendAddr == ""
	if bootstrap == "" || startAppend {
		sc := stack.TestConfig()
		sc.Name, sc.Root = "appendbench", root
		if bootstrap == "" {
			sc.ZooKeeperPort, sc.CoordinatorPort, sc.TabletPort = cfg.ZooKeeperPort, cfg.CoordinatorPort, cfg.TabletPort
			sc.ServerHeap = cfg.ServerHeap
		} else {
			sc.ExternalFluss = bootstrap
		}
		if startAppend {
			if sc.AppendPort, err = freePort(); err != nil {
				return err
			}
			sc.FlussOnly, sc.Services, sc.AppendMetricsPort, sc.LogLevel = false, []string{stack.Append}, 0, "warn"
		}
		log.Info("starting", "fluss", sc.FlussBootstrap(), "appendsvc", startAppend)
		st, startErr := stack.Start(ctx, sc, log)
		if startErr != nil {
			return startErr
		}
		defer func() {
			if serr := st.Stop(); serr != nil {
				err = errors.Join(err, serr)
			}
		}()
		bootstrap = sc.FlussBootstrap()
		if spec, ok := st.Spec(stack.Append); ok {
			appendAddr = spec.GRPCAddr
			if appendCreds, err = st.Credentials(stack.Append); err != nil {
				return err
			}
		}
	}
	fc, err := fluss.Dial(ctx, bootstrap, fluss.WithLogger(log))
	if err != nil {
		return err
	}
	defer fc.Close()

	db := fmt.Sprintf("appendbench_%d", time.Now().UnixNano())
	if err := fc.CreateDatabase(ctx, db, fluss.DatabaseDescriptor{Comment: "appendbench"}, false); err != nil {
		return err
	}
	if !cfg.Keep {
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if derr := fc.DropDatabase(dctx, db, true, true); derr != nil {
				err = errors.Join(err, derr)
			}
		}()
	}
	tables := map[string]*fluss.TableInfo{}
	for _, side := range []string{"go", "java"} {
		if !cfg.runs(side) {
			continue
		}
		names := []string{side}
		if cfg.Warmup > 0 {
			names = append(names, side+"_warmup")
		}
		for _, name := range names {
			info, err := createTable(ctx, fc, fluss.TablePath{Database: db, Table: name}, cfg, log)
			if err != nil {
				return err
			}
			tables[name] = info
		}
	}
	var results []result
	var ipcBytes int64
	var encodeTime time.Duration
	if cfg.runs("go") {
		t0 := time.Now()
		jobs, err := encodeJobs(cfg.Rows, cfg.RowsPerJob)
		if err != nil {
			return err
		}
		encodeTime = time.Since(t0)
		for _, j := range jobs {
			ipcBytes += int64(len(j.payload))
		}
		conn, err := grpc.NewClient(appendAddr, grpc.WithTransportCredentials(appendCreds),
			grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
		if err != nil {
			return err
		}
		defer conn.Close()
		client := appendv1.NewAppendServiceClient(conn)
		if cfg.Warmup > 0 {
			warm, err := encodeJobs(cfg.Warmup, cfg.RowsPerJob)
			if err != nil {
				return err
			}
			log.Info("go: warm-up", "rows", cfg.Warmup)
			if _, err := runGo(ctx, client, tables["go_warmup"], warm, cfg); err != nil {
				return fmt.Errorf("go warm-up: %w", err)
			}
		}
		log.Info("go: measuring", "rows", cfg.Rows, "jobs", len(jobs), "streams", cfg.Streams)
		d, err := runGo(ctx, client, tables["go"], jobs, cfg)
		if err != nil {
			return err
		}
		results = append(results, result{"go appendsvc (gRPC)", d})
		// For reference: with the rows' conversion to Arrow IPC (which
		// transcodesvc does in Ferry, and the Java writer does inline).
		results = append(results, result{"go incl. IPC encoding", d + encodeTime})
	}
	if ipcBytes == 0 {
		// The Java side alone: still size the rows the same way.
		jobs, err := encodeJobs(cfg.Rows, cfg.RowsPerJob)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			ipcBytes += int64(len(j.payload))
		}
	}
	if cfg.runs("java") {
		dir, err := os.MkdirTemp("", "appendbench-java-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		jb, err := compileJava(ctx, dir, filepath.Join(root, ".cache", "fluss", "client-lib"), cfg.Java, strings.Fields(cfg.JavaOpts))
		if err != nil {
			return err
		}
		var conf []string
		if cfg.JavaConf != "" {
			conf = strings.Split(cfg.JavaConf, ",")
		}
		warmTable := "java_warmup"
		if cfg.Warmup == 0 {
			warmTable = "-"
		}
		log.Info("java: warm-up and measuring (one JVM)", "warmup", cfg.Warmup, "rows", cfg.Rows)
		d, err := jb.run(ctx, bootstrap, db, "java", cfg.Rows, warmTable, cfg.Warmup, conf)
		if err != nil {
			return err
		}
		results = append(results, result{"java AppendWriter", d})
	}

	// Both tables must hold exactly the rows written.
	for _, side := range []string{"go", "java"} {
		if info := tables[side]; info != nil {
			n, err := rowCount(ctx, fc, info)
			if err != nil {
				return err
			}
			if n != cfg.Rows {
				return fmt.Errorf("%s table holds %d rows, want %d", side, n, cfg.Rows)
			}
		}
	}
	if cfg.Verify && cfg.runs("go") && cfg.runs("java") {
		if err := compareTables(ctx, root, bootstrap, db, cfg.Rows); err != nil {
			return err
		}
		log.Info("verify: both tables hold the same rows")
	}
	report(out, cfg, ipcBytes, results)
	return nil
}

func createTable(ctx context.Context, fc *fluss.Client, path fluss.TablePath, cfg *config, log *slog.Logger) (*fluss.TableInfo, error) {
	d := fluss.TableDescriptor{
		Schema:     types.Schema{Columns: benchColumns},
		NumBuckets: cfg.Buckets,
		Properties: map[string]string{fluss.PropArrowCompressionType: cfg.Compression},
		Comment:    "appendbench",
	}
	// Every bucket has a leader that serves it before either side starts,
	// so neither pays for the table's creation (nor meets Fluss 0.9.1's
	// lost creations, which flusstest creates again).
	return flusstest.Create(ctx, fc, path, d, log)
}

func rowCount(ctx context.Context, fc *fluss.Client, info *fluss.TableInfo) (int64, error) {
	buckets := make([]int32, info.NumBuckets)
	for i := range buckets {
		buckets[i] = int32(i)
	}
	offs, err := fc.ListOffsets(ctx, info.TableID, nil, buckets, fluss.OffsetLatest)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, o := range offs {
		n += o
	}
	return n, nil
}

type benchJob struct {
	payload []byte
	rows    int
}

// encodeJobs encodes rows 0..rows-1 in jobs of perJob rows, before the
// clock starts: in Ferry transcodesvc does this work, not appendsvc.
func encodeJobs(rows int64, perJob int) ([]benchJob, error) {
	schema, err := benchSchema()
	if err != nil {
		return nil, err
	}
	mem := memory.NewGoAllocator()
	var jobs []benchJob
	for first := int64(0); first < rows; first += int64(perJob) {
		n := int(min(int64(perJob), rows-first))
		b, err := encodeRows(mem, schema, first, n)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, benchJob{payload: b, rows: n})
	}
	return jobs, nil
}

// freePort is a loopback port free at the time of asking.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// runGo sends every job (job i to bucket i mod buckets, stream i mod
// streams) and returns the time from the first send to the last answer.
// Any failed job fails the run.
func runGo(ctx context.Context, client appendv1.AppendServiceClient, info *fluss.TableInfo, jobs []benchJob, cfg *config) (time.Duration, error) {
	comp, level, err := info.ArrowCompression()
	if err != nil {
		return 0, err
	}
	enum := catalogv1.ArrowCompression(catalogv1.ArrowCompression_value["ARROW_COMPRESSION_"+string(comp)])
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	streams := make([]appendv1.AppendService_AppendClient, cfg.Streams)
	for i := range streams {
		if streams[i], err = client.Append(ctx); err != nil {
			return 0, err
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(streams))
	start := time.Now()
	for s, stream := range streams {
		wg.Add(2)
		go func() { // sender, owned by runGo
			defer wg.Done()
			for i := s; i < len(jobs); i += len(streams) {
				req := &appendv1.AppendRequest{
					JobId: uint64(i + 1), TableId: info.TableID, Database: info.Database, Table: info.Table, SchemaId: info.SchemaID,
					BucketId: int32(i % info.NumBuckets), ArrowCompression: enum, ArrowCompressionLevel: int32(level),
					ArrowIpc: jobs[i].payload, RecordCount: int32(jobs[i].rows),
					Acks: int32(fluss.AcksAll), TimeoutMs: 60_000, WriterId: -1, BatchSequence: -1,
				}
				if err := stream.Send(req); err != nil {
					errs <- fmt.Errorf("stream %d: send job %d: %w", s, i+1, err)
					cancel()
					return
				}
			}
			if err := stream.CloseSend(); err != nil {
				errs <- err
			}
		}()
		go func() { // receiver, owned by runGo
			defer wg.Done()
			for {
				resp, err := stream.Recv()
				if errors.Is(err, io.EOF) {
					return
				}
				if err != nil {
					errs <- fmt.Errorf("stream %d: %w", s, err)
					cancel()
					return
				}
				if resp.GetErrorCode() != 0 {
					errs <- fmt.Errorf("job %d failed: %s (%d): %s", resp.GetJobId(),
						fluss.ErrorCode(resp.GetErrorCode()), resp.GetErrorCode(), resp.GetErrorMessage())
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return elapsed, nil
}

// compareTables scans both tables with the Java reader and checks they hold
// the same rows (each id once, equal values).
func compareTables(ctx context.Context, root, bootstrap, db string, rows int64) error {
	h, err := testenv.NewHelper(filepath.Join(root, "e2e", "flusshelper", "flusshelper"), bootstrap)
	if err != nil {
		return err
	}
	byID := func(table string) (map[string]string, error) {
		scanned, err := h.Scan(ctx, db, table, testenv.ScanOptions{Expect: int(rows), Timeout: 10 * time.Minute})
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", table, err)
		}
		m := make(map[string]string, len(scanned))
		for _, r := range scanned {
			id := fmt.Sprint(r.Row["id"])
			if _, dup := m[id]; dup {
				return nil, fmt.Errorf("%s: id %s twice", table, id)
			}
			m[id] = fmt.Sprint(r.Row)
		}
		return m, nil
	}
	g, err := byID("go")
	if err != nil {
		return err
	}
	j, err := byID("java")
	if err != nil {
		return err
	}
	if int64(len(g)) != rows || len(j) != len(g) {
		return fmt.Errorf("verify: go table has %d ids, java %d, want %d", len(g), len(j), rows)
	}
	for id, gr := range g {
		if jr := j[id]; jr != gr {
			return fmt.Errorf("verify: id %s differs:\n  go:   %s\n  java: %s", id, gr, jr)
		}
	}
	return nil
}

func report(out io.Writer, cfg *config, ipcBytes int64, results []result) {
	fmt.Fprintf(out, "appendbench: %d rows x %d columns, %d buckets, %s, acks all, %d rows/job, %d stream(s); Arrow IPC %.1f MB (%.1f B/row)\n",
		cfg.Rows, len(benchColumns), cfg.Buckets, cfg.Compression, cfg.RowsPerJob, cfg.Streams,
		float64(ipcBytes)/1e6, float64(ipcBytes)/float64(cfg.Rows))
	for _, r := range results {
		s := r.elapsed.Seconds()
		fmt.Fprintf(out, "  %-22s %8.3f s  %10.0f rows/s  %7.1f MB/s\n", r.name, s, float64(cfg.Rows)/s, float64(ipcBytes)/1e6/s)
	}
	if len(results) == 3 {
		java := results[2].elapsed.Seconds()
		fmt.Fprintf(out, "  ratio go/java (throughput): %.2fx appendsvc alone, %.2fx including IPC encoding\n",
			java/results[0].elapsed.Seconds(), java/results[1].elapsed.Seconds())
	}
}
