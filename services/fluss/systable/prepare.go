package systable

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Prepare makes sure the table exists and is usable, trying again (and
// logging why) until it is or ctx ends: a service's start does it in the
// background (Preparer), so that its first request does not wait for the
// creation, and it starts whether Fluss is slow or down.
func (t *Table) Prepare(ctx context.Context) error {
	pause := time.Second
	for {
		_, err := t.Info(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.log.Warn("system table not ready; trying again", "table", t.path.String(), "in", pause, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 30*time.Second)
	}
}

// Preparer runs Prepare for tables in the background, from Start to
// Shutdown: a service's runtime component.
type Preparer struct {
	tables []*Table
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewPreparer returns a Preparer of tables.
func NewPreparer(tables ...*Table) *Preparer { return &Preparer{tables: tables} }

// Start launches the preparation and returns at once. Its ctx only
// bounds Start, as runtime.Component has it.
func (p *Preparer) Start(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		return errors.New("systable: preparer started twice")
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan struct{})
	var wg sync.WaitGroup
	for _, t := range p.tables {
		wg.Go(func() { _ = t.Prepare(ctx) })
	}
	go func() {
		wg.Wait()
		close(p.done)
	}()
	return nil
}

// Shutdown stops what is still being prepared and waits for it, or for
// ctx.
func (p *Preparer) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
