package flussadapter

import (
	"context"
	"errors"
	"sync"

	"github.com/ferrygw/ferry/services/fluss"
)

// Lazy is an Admin that dials Fluss on first use and again after a failed
// dial, so that the catalog can start, and keep answering from its last
// state, while Fluss is down. Once dialed, the client reconnects by itself.
type Lazy struct {
	dial func(ctx context.Context) (*fluss.Client, error)

	mu     sync.Mutex
	client *fluss.Client
	closed bool
}

// ErrClosed is returned by calls after Close.
var ErrClosed = errors.New("fluss admin closed")

// NewLazy returns a Lazy that connects with dial, typically
//
//	func(ctx context.Context) (*fluss.Client, error) { return fluss.Dial(ctx, bootstrap, opts...) }
func NewLazy(dial func(ctx context.Context) (*fluss.Client, error)) *Lazy {
	return &Lazy{dial: dial}
}

// get returns the client, dialing under the lock so that concurrent first
// calls share one dial.
func (l *Lazy) get(ctx context.Context) (*fluss.Client, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if l.client != nil {
		return l.client, nil
	}
	c, err := l.dial(ctx)
	if err != nil {
		return nil, err
	}
	l.client = c
	return c, nil
}

// ListDatabases implements Admin.
func (l *Lazy) ListDatabases(ctx context.Context) ([]string, error) {
	c, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.ListDatabases(ctx)
}

// ListTables implements Admin.
func (l *Lazy) ListTables(ctx context.Context, database string) ([]string, error) {
	c, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.ListTables(ctx, database)
}

// GetTableInfo implements Admin.
func (l *Lazy) GetTableInfo(ctx context.Context, path fluss.TablePath) (*fluss.TableInfo, error) {
	c, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.GetTableInfo(ctx, path)
}

// ListPartitions implements Admin.
func (l *Lazy) ListPartitions(ctx context.Context, path fluss.TablePath) ([]fluss.PartitionInfo, error) {
	c, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.ListPartitions(ctx, path)
}

// Close closes the client, if one was dialed; later calls fail.
func (l *Lazy) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.client == nil {
		return nil
	}
	err := l.client.Close()
	l.client = nil
	return err
}
