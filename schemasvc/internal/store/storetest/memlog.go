// Package storetest has an in-memory store.Log for tests of the registry
// at the store boundary.
package storetest

import (
	"context"
	"sync"

	"github.com/ferrygw/ferry/schemasvc/internal/store"
)

// Row is a log row.
type Row = store.Row

// MemLog is a store.Log in memory, for tests of the registry at the store
// boundary: several registries sharing one MemLog behave like instances
// sharing one Fluss table.
type MemLog struct {
	mu   sync.Mutex
	rows []Row
	// BeforeAppend, when set, runs before each append with the rows about
	// to be written (tests use it to slip a concurrent writer's rows in).
	BeforeAppend func(rows []Row)
}

// Append implements Log.
func (m *MemLog) Append(_ context.Context, rows []Row) error {
	if hook := m.BeforeAppend; hook != nil {
		m.BeforeAppend = nil
		hook(rows)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows = append(m.rows, rows...)
	return nil
}

// Read implements Log.
func (m *MemLog) Read(_ context.Context, from int64) ([]Row, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Row(nil), m.rows[from:]...), int64(len(m.rows)), nil
}

// Rows returns every row written.
func (m *MemLog) Rows() []Row {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Row(nil), m.rows...)
}
