package reload

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// parseWords accepts lines of lower-case words, as a stand-in for a rules file.
func parseWords(b []byte) ([]string, error) {
	s := strings.TrimSpace(string(b))
	if s != strings.ToLower(s) {
		return nil, errors.New("upper case")
	}
	return strings.Fields(s), nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	write(t, path, "a b\n")
	f, err := Load(path, "words file", parseWords, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Value(); len(got) != 2 {
		t.Fatalf("value %v", got)
	}
	if changed, err := f.Reload(); changed || err != nil {
		t.Fatalf("unchanged file: Reload = %v, %v", changed, err)
	}
	write(t, path, "c\n")
	if changed, err := f.Reload(); !changed || err != nil || f.Value()[0] != "c" {
		t.Fatalf("changed file: Reload = %v, %v, value %v", changed, err, f.Value())
	}
	// A broken file keeps the value in force.
	write(t, path, "BAD\n")
	if changed, err := f.Reload(); !changed || err == nil || f.Value()[0] != "c" {
		t.Fatalf("broken file: Reload = %v, %v, value %v", changed, err, f.Value())
	}
	if _, err := Load(path, "words file", parseWords, quiet()); err == nil {
		t.Fatal("Load accepted a broken file")
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing"), "words file", parseWords, quiet()); err == nil {
		t.Fatal("Load accepted a missing file")
	}
}

func TestWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	write(t, path, "a\n")
	f, err := Load(path, "words file", parseWords, quiet())
	if err != nil {
		t.Fatal(err)
	}
	reloads := make(chan bool, 4)
	f.OnReload(func(ok bool) { reloads <- ok })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.Watch(ctx, 10*time.Millisecond)
	write(t, path, "z\n")
	if ok := <-reloads; !ok || f.Value()[0] != "z" {
		t.Fatalf("watched change: ok %v, value %v", ok, f.Value())
	}
	write(t, path, "Z\n")
	if ok := <-reloads; ok || f.Value()[0] != "z" {
		t.Fatalf("watched broken change: ok %v, value %v", ok, f.Value())
	}
}
