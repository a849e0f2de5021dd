package acl

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// File is an ACL file that is read again when it changes: an operator edits
// the rules without restarting frontdoor. A changed file that does not parse
// leaves the rules in force and is logged, so a typo never opens or closes
// everything at once.
type File struct {
	path  string
	log   *slog.Logger
	rules atomic.Pointer[Rules]
	// content is the last content read (parsed or not), to log a bad file once.
	content []byte
	// onReload, when set, is told the outcome of every reload that found a change.
	onReload func(ok bool)
}

// LoadFile reads path; it fails when the file is missing or does not parse.
func LoadFile(path string, log *slog.Logger) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("acl file: %w", err)
	}
	r, err := ParseBytes(b)
	if err != nil {
		return nil, fmt.Errorf("acl file %s: %w", path, err)
	}
	f := &File{path: path, log: log, content: b}
	f.rules.Store(r)
	return f, nil
}

// OnReload registers a callback for reloads (metrics). Call before Watch.
func (f *File) OnReload(fn func(ok bool)) { f.onReload = fn }

// Rules returns the rules in force.
func (f *File) Rules() *Rules { return f.rules.Load() }

// Allowed reports whether principal may do op to topic under the rules in force.
func (f *File) Allowed(principal string, op Operation, topic string) bool {
	return f.rules.Load().Allowed(principal, op, topic)
}

// Reload reads the file again and reports whether its content changed.
// A file that cannot be read or parsed keeps the rules in force.
func (f *File) Reload() (changed bool, err error) {
	b, err := os.ReadFile(f.path)
	if err != nil {
		return false, fmt.Errorf("acl file: %w", err)
	}
	if bytes.Equal(b, f.content) {
		return false, nil
	}
	f.content = b
	r, err := ParseBytes(b)
	if err != nil {
		return true, fmt.Errorf("acl file %s: %w", f.path, err)
	}
	f.rules.Store(r)
	return true, nil
}

// Watch reloads the file every interval until ctx ends. It is the only
// caller of Reload once started.
func (f *File) Watch(ctx context.Context, interval time.Duration) {
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
			f.log.Error("acl file not reloaded; the rules in force stay", "path", f.path, "err", err)
		case err == nil && changed:
			lastErr = ""
			f.log.Info("acl file reloaded", "path", f.path, "rules", f.Rules().Len())
		}
		if changed && f.onReload != nil {
			f.onReload(err == nil)
		}
	}
}
