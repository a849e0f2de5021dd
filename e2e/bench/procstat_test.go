package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and parentheses must not shift the fields.
	line := "4242 (java (x) y) S 1 4242 4242 0 -1 4194560 1 0 0 0 250 75 0 0 20 0 30 0 100 0 0\n"
	got, err := parseStatCPU([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := 3250 * time.Millisecond; got != want {
		t.Fatalf("cpu %v, want %v (325 ticks)", got, want)
	}
	if _, err := parseStatCPU([]byte("1 (x) S 1 2")); err == nil {
		t.Error("a short stat line was accepted")
	}
}

func TestParseStatusHWM(t *testing.T) {
	got, err := parseStatusHWM([]byte("Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    2048 kB\nVmRSS:\t1024 kB\n"))
	if err != nil || got != 2<<20 {
		t.Fatalf("hwm %d, %v; want 2 MiB", got, err)
	}
	if _, err := parseStatusHWM([]byte("Name:\tx\n")); err == nil {
		t.Error("status without VmHWM was accepted")
	}
}

// TestWindowOnSelf measures this test process: CPU spent in the window shows, and the peak RSS
// covers memory touched in it.
func TestWindowOnSelf(t *testing.T) {
	w, err := startWindow([]watched{{name: "self", pid: os.Getpid()}})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	u, err := w.end()
	if err != nil {
		t.Fatal(err)
	}
	if len(u) != 1 || u[0].CPU < 100*time.Millisecond || u[0].PeakRSS < 64<<20 || u[0].JIT != 0 {
		t.Fatalf("usage %+v: want at least 100ms of CPU, 64 MiB peak and no JIT (spun %d times, buffer %d)", u, x, buf[len(buf)-1])
	}
}

func TestWriteUsage(t *testing.T) {
	rs := []result{
		{Target: targetFerry, Producer: producerFranz, Handled: 2_000_000, Procs: []procUsage{
			{Name: "frontdoor", CPU: 2 * time.Second, PeakRSS: 100 << 20},
			{Name: "transcodesvc", CPU: 3 * time.Second, PeakRSS: 50 << 20},
			{Name: "tablet", CPU: 4 * time.Second, JIT: time.Second, PeakRSS: 1 << 30},
		}},
		{Target: targetKafka, Producer: producerFranz, Handled: 1_000_000, Procs: []procUsage{{Name: "kafka-broker", CPU: time.Second, PeakRSS: 300 << 20}}},
	}
	var b strings.Builder
	if err := writeUsage(&b, rs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"2.50 s/M 150 MiB", "1.00 s/M 100 MiB", "2.00 s/M (JIT 0.50) 1024 MiB", "1.00 s/M 300 MiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("usage table lacks %q:\n%s", want, out)
		}
	}
}

func TestIsJITThread(t *testing.T) {
	for line, want := range map[string]bool{
		"41 (C2 CompilerThre) S 1 1 1 0 -1 4194624 5 0 0 0 95 3 0 0 20 0":   true,
		"42 (C1 CompilerThre) S 1 1 1 0 -1 4194624 5 0 0 0 21 0 0 0 20 0":   true,
		"43 (fluss-netty-ser) S 1 1 1 0 -1 4194624 5 0 0 0 57 9 0 0 20 0":   false,
		"44 (VM Thread) S 1 1 1 0 -1 4194624 5 0 0 0 2 0 0 0 20 0":          false,
		"45 (x) C2 CompilerThre) S 1 1 1 0 -1 4194624 5 0 0 0 2 0 0 0 20 0": false,
		"no name": false,
	} {
		if got := isJITThread([]byte(line)); got != want {
			t.Errorf("isJITThread(%q) = %v, want %v", line, got, want)
		}
	}
}
