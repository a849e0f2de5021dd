package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Per-process cost of a run, read from /proc: CPU time is steadier than records/s on a shared
// machine, and peak RSS shows what a run makes a process hold.

// userHZ is the unit of /proc/<pid>/stat's utime and stime: USER_HZ, 100 on every Linux ABI.
const userHZ = 100

// procUsage is what one process spent during one run.
type procUsage struct {
	Name string
	CPU  time.Duration
	// JIT is the part of CPU a JVM's JIT compiler threads spent: a fresh server compiles for
	// seconds, charged to whatever runs meanwhile, a long-running one no more.
	JIT time.Duration
	// PeakRSS is the highest resident set size during the run, in bytes.
	PeakRSS int64
}

// watched is a process whose usage a run records.
type watched struct {
	name string
	pid  int
}

// procWindow is the start of a measurement over some processes.
type procWindow struct {
	procs []watched
	cpu   []time.Duration
	jit   []map[int]time.Duration
}

// startWindow resets each process's peak RSS (clear_refs 5, Linux 4.0+) and notes its CPU time.
// A process it cannot read is left out of the window, with a warning on the returned error;
// the run still goes on.
func startWindow(procs []watched) (*procWindow, error) {
	w := &procWindow{}
	var errs []string
	for _, p := range procs {
		cpu, err := procCPU(p.pid)
		if err == nil {
			err = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.pid), []byte("5"), 0)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s (pid %d): %v", p.name, p.pid, err))
			continue
		}
		w.procs = append(w.procs, p)
		w.cpu = append(w.cpu, cpu)
		w.jit = append(w.jit, jitThreadCPU(p.pid))
	}
	if len(errs) > 0 {
		return w, fmt.Errorf("not measured: %s", strings.Join(errs, "; "))
	}
	return w, nil
}

// end returns each process's CPU time since startWindow and its peak RSS since then.
func (w *procWindow) end() ([]procUsage, error) {
	out := make([]procUsage, 0, len(w.procs))
	for i, p := range w.procs {
		cpu, err := procCPU(p.pid)
		if err != nil {
			return nil, fmt.Errorf("%s (pid %d): %w", p.name, p.pid, err)
		}
		rss, err := procPeakRSS(p.pid)
		if err != nil {
			return nil, fmt.Errorf("%s (pid %d): %w", p.name, p.pid, err)
		}
		var jit time.Duration
		for tid, c := range jitThreadCPU(p.pid) {
			jit += c - w.jit[i][tid]
		}
		out = append(out, procUsage{Name: p.name, CPU: cpu - w.cpu[i], JIT: jit, PeakRSS: rss})
	}
	return out, nil
}

// jitThreadCPU is the CPU time of each of a JVM's JIT compiler threads ("C1 CompilerThre…",
// "C2 CompilerThre…" in /proc/<pid>/task/<tid>/stat) by thread id; none for other processes.
// HotSpot stops idle compiler threads, so a window can miss the time of one that ended in it:
// the JIT figure is a lower bound.
func jitThreadCPU(pid int) map[int]time.Duration {
	m := map[int]time.Duration{}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return m
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			continue // the thread ended
		}
		tid, err := strconv.Atoi(t.Name())
		if err != nil || !isJITThread(b) {
			continue
		}
		if cpu, err := parseStatCPU(b); err == nil {
			m[tid] = cpu
		}
	}
	return m
}

// isJITThread tells from a thread's stat line whether it is a HotSpot compiler thread.
func isJITThread(stat []byte) bool {
	open := bytes.IndexByte(stat, '(')
	if open < 0 {
		return false
	}
	name := stat[open+1:]
	return bytes.HasPrefix(name, []byte("C1 CompilerThre")) || bytes.HasPrefix(name, []byte("C2 CompilerThre"))
}

// procCPU is a process's user plus system time, all threads: fields 14 and 15 of
// /proc/<pid>/stat, counted after the command name, which may itself hold spaces.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

func parseStatCPU(b []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc stat without a command name: %q", b)
	}
	// After ") " come state (field 3) onwards: utime and stime are the 12th and 13th of them.
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat has %d fields after the command name", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// procPeakRSS is VmHWM from /proc/<pid>/status, in bytes.
func procPeakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseStatusHWM(b)
}

func parseStatusHWM(b []byte) (int64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("/proc status: VmHWM line %q", line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc status: VmHWM %q: %w", f[0], err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc status has no VmHWM line")
}

// exitedUsage is a child process's whole-life usage, from its exit status (the producers and
// the Java writer run as children for exactly one run).
func exitedUsage(name string, ps *os.ProcessState) (procUsage, bool) {
	if ps == nil {
		return procUsage{}, false
	}
	u := procUsage{Name: name, CPU: ps.UserTime() + ps.SystemTime()}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		u.PeakRSS = ru.Maxrss << 10 // kilobytes on Linux
	}
	return u, true
}
