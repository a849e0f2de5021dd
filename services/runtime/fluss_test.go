package runtime

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freeAddr returns a loopback address nothing listens on (it was free a
// moment ago; the kernel does not hand it out again immediately).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestCheckFlussReachable(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	down := freeAddr(t)

	tests := []struct {
		name      string
		bootstrap string
		wantErr   bool
	}{
		{"reachable", up.Addr().String(), false},
		{"second of list reachable", down + "," + up.Addr().String(), false},
		{"unreachable", down, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &FlussConfig{Bootstrap: tt.bootstrap, ConnectTimeout: time.Second}
			err := CheckFlussReachable(context.Background(), cfg)
			if !tt.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var se *SettingError
			if !errors.As(err, &se) || se.Env != EnvFlussBootstrap {
				t.Fatalf("err = %v, want SettingError naming %s", err, EnvFlussBootstrap)
			}
			want := "cannot reach FERRY_FLUSS_BOOTSTRAP " + tt.bootstrap + ": no coordinator answered within 1s: connection refused"
			if err.Error() != want {
				t.Errorf("err = %q\nwant  %q", err, want)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("err does not wrap ECONNREFUSED")
			}
			if ExitCode(err) != ExitConfig {
				t.Errorf("ExitCode = %d, want %d", ExitCode(err), ExitConfig)
			}
		})
	}
}

// Fluss often starts after Ferry in a compose stack: the check must retry.
func TestCheckFlussReachableLate(t *testing.T) {
	addr := freeAddr(t)
	ready := make(chan net.Listener, 1)
	go func() {
		time.Sleep(3 * flussRetryInterval)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			ready <- nil
			return
		}
		ready <- l
	}()
	err := CheckFlussReachable(context.Background(), &FlussConfig{Bootstrap: addr, ConnectTimeout: 30 * time.Second})
	l := <-ready
	if l == nil {
		t.Skip("port was taken by another process; cannot run this test")
	}
	defer l.Close()
	if err != nil {
		t.Fatalf("late Fluss not detected: %v", err)
	}
}

func TestCheckFlussReachableHonorsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := CheckFlussReachable(ctx, &FlussConfig{Bootstrap: freeAddr(t), ConnectTimeout: time.Hour})
	if err == nil || !strings.Contains(err.Error(), EnvFlussBootstrap) {
		t.Fatalf("err = %v, want an error naming %s", err, EnvFlussBootstrap)
	}
}
