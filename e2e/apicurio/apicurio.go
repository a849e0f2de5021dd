// Package apicurio runs Apicurio Registry, a real schema registry with a Confluent-compatible REST
// API, as the reference Ferry's Schema Registry is compared with. tools/install-apicurio.sh
// fetches it from Maven Central into .cache/apicurio.
package apicurio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// CompatPath is the base path of Apicurio's Confluent-compatible API (Confluent's API v7).
const CompatPath = "/apis/ccompat/v7"

// ErrNotInstalled means tools/install-apicurio.sh has not run.
var ErrNotInstalled = errors.New("apicurio registry not installed (run tools/install-apicurio.sh)")

// Registry is a running Apicurio Registry with in-memory storage.
type Registry struct {
	// URL is the Confluent-compatible API's base URL (…/apis/ccompat/v7).
	URL string
	// Log is the file its console output goes to.
	Log string
	cmd *exec.Cmd
	// exited is closed when the process has exited.
	exited chan struct{}
}

// RepoRoot is the repository root (two levels above this package).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Installed reports whether the application and the Java to run it with are in .cache/apicurio.
func Installed() bool {
	_, _, err := installation()
	return err == nil
}

func installation() (java, app string, err error) {
	dir := filepath.Join(RepoRoot(), ".cache", "apicurio")
	app = filepath.Join(dir, "app", "quarkus-run.jar")
	b, err := os.ReadFile(filepath.Join(dir, "java"))
	if err != nil {
		return "", "", ErrNotInstalled
	}
	java = strings.TrimSpace(string(b))
	for _, f := range []string{java, app} {
		if _, err := os.Stat(f); err != nil {
			return "", "", fmt.Errorf("%w: %v", ErrNotInstalled, err)
		}
	}
	return java, app, nil
}

// settings configure Apicurio as Confluent's registry behaves by default, on loopback.
var settings = []string{
	// Ports of the system's choosing (read back from the log): no race for a free port.
	"quarkus.http.host=127.0.0.1",
	"quarkus.http.port=0",
	"quarkus.management.host=127.0.0.1",
	"quarkus.management.port=0",
	// Confluent's default compatibility level; Apicurio has no global rule unless given one.
	"apicurio.rules.global.compatibility=BACKWARD",
	// Confluent serves deletions; Apicurio 3 refuses them unless enabled.
	"apicurio.rest.deletion.artifact.enabled=true",
	"apicurio.rest.deletion.artifact-version.enabled=true",
	"apicurio.rest.deletion.group.enabled=true",
	// A small connection pool to the in-memory database starts faster.
	"apicurio.datasource.jdbc.initial-size=2",
	"apicurio.datasource.jdbc.min-size=2",
	"apicurio.datasource.jdbc.max-size=8",
	"quarkus.http.access-log.enabled=false",
}

// listening is Quarkus's start-up line, which names the HTTP address.
var listening = regexp.MustCompile(`started in [0-9.]+s\. Listening on: (http://[0-9.]+:[0-9]+)`)

// Start runs Apicurio Registry with in-memory storage, its console output in dir/apicurio.log, and
// waits until its Confluent-compatible API answers. Stop it with Stop; it also dies with the
// process that started it.
func Start(ctx context.Context, dir string) (*Registry, error) {
	java, app, err := installation()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &Registry{Log: filepath.Join(dir, "apicurio.log"), exited: make(chan struct{})}
	logFile, err := os.Create(r.Log)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	// Start-up is mostly class loading and JIT: C1 only and the serial collector start it
	// sooner on two busy cores, and a test's few requests need nothing faster.
	args := []string{"-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.io.tmpdir=" + dir}
	for _, s := range settings {
		args = append(args, "-D"+s)
	}
	args = append(args, "-jar", app)
	r.cmd = exec.Command(java, args...)
	r.cmd.Dir = dir
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start apicurio: %w", err)
	}
	go func() {
		_ = r.cmd.Wait()
		close(r.exited)
	}()
	if err := r.waitReady(ctx); err != nil {
		_ = r.Stop()
		return nil, fmt.Errorf("%w (log %s:\n%s)", err, r.Log, r.tail(30))
	}
	return r, nil
}

// waitReady waits for the start-up line, then for GET /schemas/types to answer 200.
func (r *Registry) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("apicurio not ready: %w", ctx.Err())
		case <-r.exited:
			return fmt.Errorf("apicurio exited during start-up: %v", r.cmd.ProcessState)
		case <-tick.C:
		}
		if r.URL == "" {
			b, _ := os.ReadFile(r.Log)
			m := listening.FindSubmatch(b)
			if m == nil {
				continue
			}
			r.URL = string(m[1]) + CompatPath
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL+"/schemas/types", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
	}
}

// Stop ends the registry: SIGTERM to its process group, SIGKILL after 10 s.
func (r *Registry) Stop() error {
	if r.cmd == nil || r.cmd.Process == nil {
		return nil
	}
	pgid := r.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-r.exited:
		return nil
	case <-time.After(10 * time.Second):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-r.exited:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("apicurio (pid %d) did not exit after SIGKILL", pgid)
	}
}

// tail is the last n lines of the log.
func (r *Registry) tail(n int) string {
	f, err := os.Open(r.Log)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
