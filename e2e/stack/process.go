package stack

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is one child process of the stack, in its own process group so a stop reaches
// everything it spawned, and tied to our life with PR_SET_PDEATHSIG so it dies with us even when
// we are killed without a chance to clean up.
type Process struct {
	Name    string
	LogPath string

	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // exit status; read only after done is closed
}

// StartProcess starts argv with env in dir, stdout and stderr appended to logPath.
func StartProcess(name string, argv []string, env []string, dir, logPath string) (*Process, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("start %s: empty command", name)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Setpgid: our terminal's Ctrl-C reaches only us, and Stop signals the whole group.
	// Pdeathsig: the kernel kills the child if we die first (e.g. SIGKILL), so no JVM outlives
	// ferrystack. It follows the OS thread that forked; the Go runtime does not retire threads
	// of goroutines that are not locked to them, which holds here.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, log: logFile, done: make(chan struct{})}
	// The reaper goroutine is owned by the Process: it ends when the child exits, which Stop
	// guarantees.
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitErr is the process's exit status; nil while it runs or after a clean exit.
func (p *Process) ExitErr() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the process group, waits up to grace for the leader to exit, then
// SIGKILLs the group. Stragglers in the group are SIGKILLed even after a clean exit. It returns
// an error only if the process could not be made to exit.
func (p *Process) Stop(grace time.Duration) error {
	pgid := p.Pid()
	if !p.Exited() {
		signalGroup(pgid, syscall.SIGTERM)
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-p.done:
		case <-timer.C:
		}
	}
	// Whatever is left in the group (or the leader itself, after the grace period) goes now.
	signalGroup(pgid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("stop %s (pid %d): still running 10s after SIGKILL", p.Name, pgid)
	}
}

// signalGroup signals every process in the group. An error can only mean the group is already
// gone (ESRCH), which is the state Stop wants, so it is not reported.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

// LogTail returns up to the last n lines of the process log, for error messages.
func (p *Process) LogTail(n int) string { return tailFile(p.LogPath, n) }

func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > max {
		if _, err := f.Seek(st.Size()-max, io.SeekStart); err != nil {
			return ""
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
