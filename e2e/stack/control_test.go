package stack

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServiceControl covers the fault-test controls without building services: Kill of a
// running child, and the errors for names that are not (or no longer) services.
func TestServiceControl(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Root = dir
	cfg.StopGrace = time.Second
	s := &Stack{cfg: cfg, dir: dir, log: slog.New(slog.NewTextHandler(io.Discard, nil)), specs: map[string]ServiceSpec{}}
	p, err := StartProcess("sleeper", []string{"sleep", "60"}, nil, dir, filepath.Join(dir, "sleeper.log"))
	if err != nil {
		t.Fatal(err)
	}
	s.replaceProcess(p)
	t.Cleanup(func() { _ = s.Stop() })

	if got := s.Service("sleeper"); got != p {
		t.Fatalf("Service(sleeper) = %v, want the started process", got)
	}
	if got := s.Service("nobody"); got != nil {
		t.Errorf("Service(nobody) = %v, want nil", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tests := []struct {
		name    string
		call    func() error
		wantErr string
	}{
		{"kill unknown", func() error { return s.Kill("nobody") }, "no process named nobody"},
		{"restart non-service", func() error { return s.Restart(ctx, "sleeper") }, "no service or Fluss process named sleeper"},
		{"stop non-service", func() error { return s.StopService("sleeper") }, "not a service"},
		{"start unknown package", func() error {
			return s.StartService(ctx, ServiceSpec{Name: "x", Package: "kafkasvc"})
		}, `unknown package "kafkasvc"`},
		{"start bad name", func() error {
			return s.StartService(ctx, ServiceSpec{Name: "Bad Name", Package: Frontdoor})
		}, "bad name"},
		{"start duplicate", func() error {
			return s.StartService(ctx, ServiceSpec{Name: "sleeper", Package: Frontdoor})
		}, "already exists"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}

	pid := p.Pid()
	if err := s.Kill("sleeper"); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if !p.Exited() || alive(pid) {
		t.Fatalf("sleeper (pid %d) still running after Kill", pid)
	}
	if !strings.Contains(p.ExitErr().Error(), "killed") {
		t.Errorf("exit status %v, want killed", p.ExitErr())
	}
}
