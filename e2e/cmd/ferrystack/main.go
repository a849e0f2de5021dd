// Command ferrystack runs Ferry's local stack: a real Apache Fluss 0.9.1 cluster and the four
// Ferry services, as child processes, until Ctrl-C. `-only fluss` starts Fluss alone (tests);
// `-jaeger` adds Jaeger and sends the services' traces there. `-single` runs every service in one
// process (cmd/ferry) instead of one process each.
//
//	go run ./e2e/cmd/ferrystack                        # make up
//	go run ./e2e/cmd/ferrystack -single                # make up MODE=single
//	go run ./e2e/cmd/ferrystack -only fluss -test-ports -env-file /tmp/fluss.env
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/ferrygw/ferry/e2e/jaeger"
	"github.com/ferrygw/ferry/e2e/stack"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, opts, err := parseFlags(args, stderr)
	if err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		fmt.Fprintln(stderr, "ferrystack:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	if opts.jaeger {
		j, err := startJaeger(ctx, cfg, log)
		if err != nil {
			fmt.Fprintln(stderr, "ferrystack:", err)
			return 1
		}
		defer func() {
			if err := j.Stop(); err != nil {
				fmt.Fprintln(stderr, "ferrystack: stop Jaeger:", err)
			}
		}()
		cfg.OTLPEndpoint = "http://" + j.OTLPEndpoint()
		log.Info("Jaeger ready", "ui", j.QueryURL(), "otlp", j.OTLPEndpoint())
	}
	s, err := stack.Start(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(stderr, "ferrystack:", err)
		return 1
	}
	env := stack.EnvLines(cfg.TestEnv())
	envFile := opts.envFile
	if envFile != "" {
		// Written only once everything is ready, and atomically: tools/test.sh waits for it.
		tmp := envFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(env), 0o644); err == nil {
			err = os.Rename(tmp, envFile)
		}
		if err != nil {
			fmt.Fprintln(stderr, "ferrystack: write env file:", err)
			_ = s.Stop()
			return 1
		}
	}
	fmt.Fprint(stdout, env)
	log.Info("stack ready; Ctrl-C stops it", "dir", s.Dir())

	code := 0
	if err := s.Wait(ctx); err != nil {
		fmt.Fprintln(stderr, "ferrystack:", err)
		code = 1
	}
	stop() // a second Ctrl-C now kills us; Pdeathsig takes the children along
	log.Info("stopping")
	if envFile != "" {
		_ = os.Remove(envFile)
	}
	if err := s.Stop(); err != nil {
		fmt.Fprintln(stderr, "ferrystack: stop:", err)
		code = 1
	}
	if s.Kept() {
		log.Info("run directory kept", "dir", s.Dir())
	}
	return code
}

// cliOptions are the flags that are not stack.Config fields.
type cliOptions struct {
	envFile string
	jaeger  bool
}

// startJaeger runs Jaeger (e2e/jaeger, tools/install-jaeger.sh) on its documented ports, its files
// under .cache/run/jaeger-<name>; it stops with ferrystack (and dies with it).
func startJaeger(ctx context.Context, cfg stack.Config, log *slog.Logger) (*jaeger.Jaeger, error) {
	dir := filepath.Join(cfg.CacheDir(), "run", "jaeger-"+cfg.Name)
	j, err := jaeger.Start(ctx, jaeger.Options{OTLPPort: jaeger.DefaultOTLPPort, QueryPort: jaeger.DefaultQueryPort,
		QueryGRPCPort: jaeger.DefaultQueryGRPCPort, Dir: dir, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("start Jaeger: %w", err)
	}
	return j, nil
}

func parseFlags(args []string, stderr io.Writer) (stack.Config, cliOptions, error) {
	fs := flag.NewFlagSet("ferrystack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := stack.DefaultConfig()
	only := fs.String("only", "", `start only this part: "fluss"`)
	testPorts := fs.Bool("test-ports", false, "use the test runner's ports and stack name (tools/test.sh)")
	name := fs.String("name", "", "stack name, prefix of the run directory under .cache/run (default dev, or test with -test-ports)")
	zk := fs.Int("zookeeper-port", 0, "ZooKeeper port (default 2181, 28181 with -test-ports)")
	coord := fs.Int("coordinator-port", 0, "Fluss coordinator port (default 9123, 28122 with -test-ports)")
	tablet := fs.Int("tablet-port", 0, "Fluss tablet server port (default 9124, 28123 with -test-ports)")
	host := fs.String("host", def.Host, "address every process binds to")
	externalFluss := fs.String("external-fluss", "", "coordinator host:port of a running Fluss cluster to use instead of starting one")
	flussSASL := fs.String("fluss-sasl", "", "USER:PASSWORD: run Fluss requiring SASL/PLAIN from clients with this user (servers talk on plaintext listeners at the coordinator and tablet ports + 1000), or log in to -external-fluss with it")
	single := fs.Bool("single", false, "run every service in one process (cmd/ferry; gRPC health on 7104, Kafka on -kafka-port) instead of one process each")
	services := fs.String("services", "", "comma-separated subset of "+strings.Join(stack.ServiceNames, ",")+" (default all)")
	kafka := fs.Int("kafka-port", def.KafkaPort, "frontdoor Kafka port")
	registry := fs.Int("registry-port", def.RegistryPort, "Schema Registry REST port (schemasvc)")
	transcode := fs.String("transcode-ports", "7102,7112", "one transcodesvc per port, comma-separated")
	logLevel := fs.String("log-level", def.LogLevel, "services' FERRY_LOG_LEVEL")
	logFormat := fs.String("log-format", def.LogFormat, "services' FERRY_LOG_FORMAT")
	otlp := fs.String("otlp-endpoint", "", "services' OTEL_EXPORTER_OTLP_ENDPOINT (empty: no export)")
	ready := fs.Duration("ready-timeout", def.ReadyTimeout, "give up if the stack is not ready within this")
	grace := fs.Duration("stop-grace", def.StopGrace, "SIGTERM to SIGKILL grace per process")
	keep := fs.Bool("keep", false, "keep the run directory (data and logs) after stopping")
	envFile := fs.String("env-file", "", "once ready, write `export VAR=...` lines for tests here")
	plaintext := fs.Bool("grpc-plaintext", false, "run the services' internal gRPC without TLS (default: mutual TLS with a CA and certificates issued into <run dir>/pki)")
	withJaeger := fs.Bool("jaeger", false, "also run Jaeger (tools/install-jaeger.sh) on 4317 (OTLP) and 16686 (UI, query API) and export the services' traces to it")
	if err := fs.Parse(args); err != nil {
		return stack.Config{}, cliOptions{}, err
	}
	if fs.NArg() > 0 {
		return stack.Config{}, cliOptions{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	cfg := def
	if *testPorts {
		cfg = stack.TestConfig()
		cfg.FlussOnly = false
	}
	switch *only {
	case "":
	case "fluss":
		cfg.FlussOnly = true
	default:
		return stack.Config{}, cliOptions{}, fmt.Errorf("-only %q: the only part that runs alone is \"fluss\"", *only)
	}
	if *name != "" {
		cfg.Name = *name
	}
	for _, o := range []struct {
		v   int
		dst *int
	}{{*zk, &cfg.ZooKeeperPort}, {*coord, &cfg.CoordinatorPort}, {*tablet, &cfg.TabletPort}} {
		if o.v != 0 {
			*o.dst = o.v
		}
	}
	cfg.Host = *host
	cfg.ExternalFluss = *externalFluss
	if *flussSASL != "" {
		user, password, ok := strings.Cut(*flussSASL, ":")
		if !ok {
			return stack.Config{}, cliOptions{}, errors.New("-fluss-sasl: want USER:PASSWORD")
		}
		cfg.FlussSASL = &stack.FlussSASL{Users: map[string]string{user: password}, User: user, Password: password}
		cfg.CoordinatorInternalPort, cfg.TabletInternalPort = cfg.CoordinatorPort+1000, cfg.TabletPort+1000
	}
	cfg.KafkaPort = *kafka
	cfg.RegistryPort = *registry
	cfg.LogLevel, cfg.LogFormat, cfg.OTLPEndpoint = *logLevel, *logFormat, *otlp
	cfg.ReadyTimeout, cfg.StopGrace, cfg.Keep = *ready, *grace, *keep
	cfg.GRPCPlaintext = *plaintext
	cfg.Single = *single
	if *services != "" {
		cfg.Services = strings.Split(*services, ",")
	}
	cfg.TranscodePorts = nil
	for _, p := range strings.Split(*transcode, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return stack.Config{}, cliOptions{}, fmt.Errorf("-transcode-ports: %q is not a port", p)
		}
		cfg.TranscodePorts = append(cfg.TranscodePorts, n)
	}
	wd, err := os.Getwd()
	if err != nil {
		return stack.Config{}, cliOptions{}, err
	}
	if cfg.Root, err = stack.FindRoot(wd); err != nil {
		return stack.Config{}, cliOptions{}, err
	}
	if err := cfg.Validate(); err != nil {
		return stack.Config{}, cliOptions{}, err
	}
	if *withJaeger && *otlp != "" {
		return stack.Config{}, cliOptions{}, errors.New("-jaeger and -otlp-endpoint: choose one place to send traces")
	}
	if *withJaeger && cfg.FlussOnly {
		return stack.Config{}, cliOptions{}, errors.New("-jaeger with -only fluss: Fluss exports no traces")
	}
	return cfg, cliOptions{envFile: *envFile, jaeger: *withJaeger}, nil
}
