package stack

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// Field 3 of /proc/PID/stat is the state; Z is a zombie (dead, awaiting reaping).
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readPid waits for the child script to report a grandchild's pid in file.
func readPid(t *testing.T, file string) int {
	t.Helper()
	var pid int
	waitFor(t, "grandchild pid", func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

func TestProcessStopKillsGroup(t *testing.T) {
	tests := []struct {
		name string
		// script runs under sh -c; it must start a grandchild `sleep` and write its pid to $PIDFILE.
		script   string
		grace    time.Duration
		wantKill bool // the leader ignores SIGTERM, so only SIGKILL after grace ends it
	}{
		{
			name:   "leader exits on SIGTERM, grandchild in group dies too",
			script: `sleep 300 & echo $! > "$PIDFILE"; wait`,
			grace:  5 * time.Second,
		},
		{
			name:     "leader ignores SIGTERM, SIGKILL after grace",
			script:   `trap '' TERM; sleep 300 & echo $! > "$PIDFILE"; while :; do sleep 0.05; done`,
			grace:    300 * time.Millisecond,
			wantKill: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "grandchild.pid")
			env := append(os.Environ(), "PIDFILE="+pidFile)
			p, err := StartProcess("sh", []string{"/bin/sh", "-c", tc.script}, env, dir, filepath.Join(dir, "log"))
			if err != nil {
				t.Fatal(err)
			}
			grandchild := readPid(t, pidFile)
			if pgid, err := syscall.Getpgid(p.Pid()); err != nil || pgid != p.Pid() {
				t.Fatalf("child pgid = %d, %v; want its own group %d", pgid, err, p.Pid())
			}
			if pgid, _ := syscall.Getpgid(grandchild); pgid != p.Pid() {
				t.Fatalf("grandchild pgid = %d, want %d", pgid, p.Pid())
			}
			if !alive(grandchild) || p.Exited() {
				t.Fatal("processes not running before Stop")
			}
			start := time.Now()
			if err := p.Stop(tc.grace); err != nil {
				t.Fatal(err)
			}
			if !p.Exited() {
				t.Error("leader still running after Stop")
			}
			waitFor(t, "grandchild to die", func() bool { return !alive(grandchild) })
			status := p.ExitErr()
			killed := status != nil && strings.Contains(status.Error(), "killed")
			if killed != tc.wantKill {
				t.Errorf("exit status %v: killed=%v, want %v", status, killed, tc.wantKill)
			}
			if tc.wantKill && time.Since(start) < tc.grace {
				t.Errorf("SIGKILL sent before the %v grace period ended", tc.grace)
			}
		})
	}
}

func TestProcessLogAndEarlyExit(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "out.log")
	p, err := StartProcess("talker", []string{"/bin/sh", "-c", `for i in 1 2 3 4 5; do echo line$i; done; echo oops >&2; exit 3`}, os.Environ(), dir, logPath)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("process did not exit")
	}
	if err := p.ExitErr(); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("ExitErr = %v, want exit status 3", err)
	}
	if got := p.LogTail(2); got != "line5\noops" {
		t.Errorf("LogTail(2) = %q", got)
	}
	// Stopping an exited process is a no-op, not an error.
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("Stop after exit: %v", err)
	}
	if _, err := StartProcess("missing", []string{filepath.Join(dir, "no-such-binary")}, nil, dir, logPath); err == nil {
		t.Error("starting a missing binary succeeded")
	}
}

func TestRemoveStaleRuns(t *testing.T) {
	runRoot := t.TempDir()
	mk := func(name, pid string) string {
		d := filepath.Join(runRoot, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if pid != "" {
			if err := os.WriteFile(filepath.Join(d, pidFile), []byte(pid), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	// A pid that cannot exist: above the kernel's pid_max.
	dead := mk("test-dead", "2147483646")
	live := mk("test-live", strconv.Itoa(os.Getpid()))
	kept := mk("test-kept", "")
	removeStaleRuns(runRoot, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Error("directory of a dead ferrystack not removed")
	}
	for _, d := range []string{live, kept} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", filepath.Base(d), err)
		}
	}
}

// TestHelperParent is not a test: TestProcessDiesWithParent re-runs the test binary with
// FERRY_STACK_TEST_PARENT set, and this then plays ferrystack: it starts a child through
// StartProcess, reports the child's pid on stdout and waits to be killed.
func TestHelperParent(t *testing.T) {
	if os.Getenv("FERRY_STACK_TEST_PARENT") == "" {
		t.Skip("helper process for TestProcessDiesWithParent")
	}
	dir := t.TempDir()
	p, err := StartProcess("sleeper", []string{"/bin/sh", "-c", "exec sleep 300"}, os.Environ(), dir, filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("CHILD " + strconv.Itoa(p.Pid()) + "\n")
	time.Sleep(time.Minute)
}

func TestProcessDiesWithParent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperParent$", "-test.v")
	cmd.Env = append(os.Environ(), "FERRY_STACK_TEST_PARENT=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var buf bytes.Buffer
	child := 0
	deadline := time.Now().Add(30 * time.Second)
	chunk := make([]byte, 512)
	for child == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("parent never reported its child; output %q", buf.String())
		}
		n, err := out.Read(chunk)
		buf.Write(chunk[:n])
		for _, line := range strings.Split(buf.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, "CHILD "); ok {
				child, _ = strconv.Atoi(strings.TrimSpace(rest))
			}
		}
		if err != nil && child == 0 {
			t.Fatalf("reading parent output: %v (%q)", err, buf.String())
		}
	}
	waitFor(t, "child to start", func() bool { return alive(child) })
	// SIGKILL: the parent gets no chance to clean up; only Pdeathsig can take the child along.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitFor(t, "orphaned child to be killed by Pdeathsig", func() bool { return !alive(child) })
}
