// Package reload keeps the parsed form of a file that operators edit while
// a service runs (ACLs, SASL credentials): the file is read again on a
// ticker, a changed file that parses replaces the value in force, and one
// that does not parse is logged and ignored, so a typo never takes effect.
package reload

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// File is the parsed content of a file, kept current by Watch.
type File[T any] struct {
	path  string
	what  string // for messages: "acl file", "scram credentials file"
	parse func([]byte) (T, error)
	log   *slog.Logger
	value atomic.Pointer[T]
	// content is the last content read (parsed or not), so a bad file is
	// reported once.
	content []byte
	// onReload, when set, is told the outcome of every change seen.
	onReload func(ok bool)
}

// Load reads and parses path; it fails when the file is missing or does not parse.
func Load[T any](path, what string, parse func([]byte) (T, error), log *slog.Logger) (*File[T], error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	v, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	f := &File[T]{path: path, what: what, parse: parse, log: log, content: b}
	f.value.Store(&v)
	return f, nil
}

// OnReload registers a callback for reloads (metrics). Call before Watch.
func (f *File[T]) OnReload(fn func(ok bool)) { f.onReload = fn }

// Value returns the value in force.
func (f *File[T]) Value() T { return *f.value.Load() }

// Reload reads the file again and reports whether its content changed. A
// file that cannot be read or parsed keeps the value in force.
func (f *File[T]) Reload() (changed bool, err error) {
	b, err := os.ReadFile(f.path)
	if err != nil {
		return false, fmt.Errorf("%s: %w", f.what, err)
	}
	if bytes.Equal(b, f.content) {
		return false, nil
	}
	f.content = b
	v, err := f.parse(b)
	if err != nil {
		return true, fmt.Errorf("%s %s: %w", f.what, f.path, err)
	}
	f.value.Store(&v)
	return true, nil
}

// Watch reloads the file every interval until ctx ends. It must be the only
// caller of Reload once started.
func (f *File[T]) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := f.Reload()
		switch {
		case err != nil && err.Error() != lastErr:
			lastErr = err.Error()
			f.log.Error(f.what+" not reloaded; the one in force stays", "path", f.path, "err", err)
		case err == nil && changed:
			lastErr = ""
			f.log.Info(f.what+" reloaded", "path", f.path)
		}
		if changed && f.onReload != nil {
			f.onReload(err == nil)
		}
	}
}
