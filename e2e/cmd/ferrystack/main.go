// Command ferrystack runs Ferry's local stack: a real Apache Fluss 0.9.1 cluster and the four
// Ferry services, as child processes, until Ctrl-C. `-only fluss` starts Fluss alone (tests).
//
//	go run ./e2e/cmd/ferrystack                        # make up
//	go run ./e2e/cmd/ferrystack -only fluss -test-ports -env-file /tmp/fluss.env
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/ferrygw/ferry/e2e/stack"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, envFile, err := parseFlags(args, stderr)
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

	s, err := stack.Start(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(stderr, "ferrystack:", err)
		return 1
	}
	env := stack.EnvLines(cfg.TestEnv())
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

func parseFlags(args []string, stderr io.Writer) (stack.Config, string, error) {
	fs := flag.NewFlagSet("ferrystack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := stack.DefaultConfig()
	only := fs.String("only", "", `start only this part: "fluss"`)
	testPorts := fs.Bool("test-ports", false, "use the test runner's ports and stack name (tools/test.sh)")
	name := fs.String("name", "", "stack name, prefix of the run directory under .cache/run (default dev, or test with -test-ports)")
	zk := fs.Int("zookeeper-port", 0, "ZooKeeper port (default 2181, 32181 with -test-ports)")
	coord := fs.Int("coordinator-port", 0, "Fluss coordinator port (default 9123, 39122 with -test-ports)")
	tablet := fs.Int("tablet-port", 0, "Fluss tablet server port (default 9124, 39123 with -test-ports)")
	host := fs.String("host", def.Host, "address every process binds to")
	services := fs.String("services", "", "comma-separated subset of "+strings.Join(stack.ServiceNames, ",")+" (default all)")
	kafka := fs.Int("kafka-port", def.KafkaPort, "frontdoor Kafka port")
	transcode := fs.String("transcode-ports", "7102,7112", "one transcodesvc per port, comma-separated")
	logLevel := fs.String("log-level", def.LogLevel, "services' FERRY_LOG_LEVEL")
	logFormat := fs.String("log-format", def.LogFormat, "services' FERRY_LOG_FORMAT")
	otlp := fs.String("otlp-endpoint", "", "services' OTEL_EXPORTER_OTLP_ENDPOINT (empty: no export)")
	ready := fs.Duration("ready-timeout", def.ReadyTimeout, "give up if the stack is not ready within this")
	grace := fs.Duration("stop-grace", def.StopGrace, "SIGTERM to SIGKILL grace per process")
	keep := fs.Bool("keep", false, "keep the run directory (data and logs) after stopping")
	envFile := fs.String("env-file", "", "once ready, write `export VAR=...` lines for tests here")
	if err := fs.Parse(args); err != nil {
		return stack.Config{}, "", err
	}
	if fs.NArg() > 0 {
		return stack.Config{}, "", fmt.Errorf("unexpected argument %q", fs.Arg(0))
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
		return stack.Config{}, "", fmt.Errorf("-only %q: the only part that runs alone is \"fluss\"", *only)
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
	cfg.KafkaPort = *kafka
	cfg.LogLevel, cfg.LogFormat, cfg.OTLPEndpoint = *logLevel, *logFormat, *otlp
	cfg.ReadyTimeout, cfg.StopGrace, cfg.Keep = *ready, *grace, *keep
	if *services != "" {
		cfg.Services = strings.Split(*services, ",")
	}
	cfg.TranscodePorts = nil
	for _, p := range strings.Split(*transcode, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return stack.Config{}, "", fmt.Errorf("-transcode-ports: %q is not a port", p)
		}
		cfg.TranscodePorts = append(cfg.TranscodePorts, n)
	}
	wd, err := os.Getwd()
	if err != nil {
		return stack.Config{}, "", err
	}
	if cfg.Root, err = stack.FindRoot(wd); err != nil {
		return stack.Config{}, "", err
	}
	if err := cfg.Validate(); err != nil {
		return stack.Config{}, "", err
	}
	return cfg, *envFile, nil
}
