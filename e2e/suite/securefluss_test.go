package suite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestSecuredFluss runs Ferry against a Fluss cluster whose client listeners require SASL/PLAIN:
// records produced through frontdoor land in Fluss and consumers read them back, and a catalogsvc,
// appendsvc or fetchsvc with wrong or
// missing credentials stops at start-up with exit code 2 and a line naming the setting.
func TestSecuredFluss(t *testing.T) {
	need(t) // builds the services and proves the jars
	root, err := stack.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := servicesConfig("e2e-sasl", root)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := freePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ZooKeeperPort, cfg.CoordinatorPort, cfg.TabletPort = ports[0], ports[1], ports[2]
	cfg.CoordinatorInternalPort, cfg.TabletInternalPort = ports[3], ports[4]
	cfg.ServerHeap = "512m"
	cfg.FlussSASL = &stack.FlussSASL{
		Users: map[string]string{"admin": "admin-secret", "ferry": "ferry-secret"},
		User:  "ferry", Password: "ferry-secret",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := stack.Start(ctx, cfg, log)
	if err != nil {
		t.Fatalf("stack with a secured Fluss: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			s.KeepDir()
		}
		if err := s.Stop(); err != nil {
			t.Errorf("stop stack: %v", err)
		}
		if s.Kept() {
			t.Logf("run directory kept: %s", s.Dir())
		}
	})

	// Without a login the cluster refuses metadata calls: it really is secured.
	anonymous, err := testenv.NewHelper(cfg.HelperPath(), cfg.FlussBootstrap())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anonymous.ListTables(ctx, "fluss"); err == nil {
		t.Fatal("flusshelper without credentials listed tables of the secured cluster")
	}

	h, err := testenv.NewHelper(cfg.HelperPath(), cfg.FlussBootstrap())
	if err != nil {
		t.Fatal(err)
	}
	h.Conf = cfg.FlussClientConf()
	f := &testenv.Cluster{Bootstrap: cfg.FlussBootstrap(), Helper: h}
	db := dbName(t, f, "sasl")
	topic := topicTableAt(t, f, cfg.KafkaAddr(), db, "events", 2,
		[]testenv.Column{{Name: "id", Type: "BIGINT"}, {Name: "note", Type: "STRING"}}, nil)

	cl := newKgo(t, cfg.KafkaAddr())
	var recs []*kgo.Record
	for i := range 200 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2),
			Value: []byte(fmt.Sprintf(`{"id": %d, "note": "n%d"}`, i, i))})
	}
	acked := kgoProduce(t, cl, recs, 50)
	verifyRows(t, f, db, "events", acked, func(r sent) map[string]any {
		var id int64
		fmt.Sscanf(string(r.Value), `{"id": %d`, &id)
		return map[string]any{"id": num(id), "note": fmt.Sprintf("n%d", id)}
	})
	// fetchsvc logs in too: consumers read what was produced.
	if got := consumeAll(t, cfg.KafkaAddr(), topic, len(acked)); len(got) != len(acked) {
		t.Errorf("consumed %d records from the secured cluster, produced %d", len(got), len(acked))
	}

	// Wrong and missing credentials stop each Fluss-facing service at start-up.
	wrong := filepath.Join(t.TempDir(), "wrong-password")
	if err := os.WriteFile(wrong, []byte("not-the-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, svc := range []string{stack.Catalog, stack.Append, stack.Fetch} {
		t.Run(svc+"/wrong password", func(t *testing.T) {
			out := startRefused(t, s, svc, map[string]string{
				stack.EnvFlussSASLUsername: "ferry", stack.EnvFlussSASLPasswordFile: wrong})
			if !strings.Contains(out, "Fluss refused the login of "+stack.EnvFlussSASLUsername+" ferry") {
				t.Errorf("%s's start-up error does not name the refused login:\n%s", svc, out)
			}
		})
		t.Run(svc+"/no credentials", func(t *testing.T) {
			out := startRefused(t, s, svc, nil)
			if !strings.Contains(out, "requires a login") {
				t.Errorf("%s's start-up error does not say the cluster needs a login:\n%s", svc, out)
			}
		})
	}
}

// startRefused starts svc's binary with its stack spec changed by env (and a listen port of its
// own) and returns its output, failing unless it exits with code 2 within a minute.
func startRefused(t *testing.T, s *stack.Stack, svc string, env map[string]string) string {
	t.Helper()
	spec, ok := s.Spec(svc)
	if !ok {
		t.Fatalf("no %s in the stack", svc)
	}
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	spec.Env = cloneEnv(spec.Env)
	spec.Env["FERRY_LISTEN"] = "127.0.0.1:" + strconv.Itoa(ports[0])
	spec.Env["FERRY_METRICS_ADDR"] = ""
	// It must stop at its Fluss login, before it would serve gRPC.
	spec.Env[stack.EnvGRPCPlaintext] = "true"
	for k, v := range env {
		spec.Env[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.Config().ServiceBinDir(), spec.BinaryName()))
	cmd.Env = stack.ServiceEnv(spec)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("%s with %v: want exit code 2, got %v:\n%s", svc, env, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	t.Logf("%s exited with 2: %s", svc, lines[len(lines)-1])
	return string(out)
}

func cloneEnv(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
