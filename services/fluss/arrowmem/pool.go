// Package arrowmem is an Arrow memory allocator that recycles buffers.
package arrowmem

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Pool recycles the buffers Arrow frees (when the last reference to an
// array or record is released) instead of leaving them to the garbage
// collector: a service that builds or reads one record per batch otherwise
// allocates, zeroes and collects the same sizes over and over. Buffers come
// in power-of-two classes from minPooled up to maxPooled; others are
// allocated and dropped as usual. Memory is zeroed on Allocate, as Arrow's
// Go allocator does. The zero value is ready; it is safe for concurrent use.
type Pool struct {
	classes [maxClass - minClass + 1]sync.Pool
}

const (
	minClass  = 9  // 512 bytes
	maxClass  = 24 // 16 MiB
	minPooled = 1 << minClass
	maxPooled = 1 << maxClass
)

var _ memory.Allocator = (*Pool)(nil)

// class returns the pool index for a buffer of size bytes, or -1.
func class(size int) int {
	if size < minPooled || size > maxPooled {
		return -1
	}
	return bits.Len(uint(size-1)) - minClass
}

func (a *Pool) Allocate(size int) []byte {
	c := class(size)
	if c < 0 {
		return make([]byte, size)
	}
	if p, ok := a.classes[c].Get().(*[]byte); ok {
		b := (*p)[:size]
		clear(b)
		return b
	}
	return make([]byte, size, 1<<(c+minClass))
}

func (a *Pool) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

func (a *Pool) Free(b []byte) {
	c := class(cap(b))
	if c < 0 || cap(b) != 1<<(c+minClass) {
		return // not one of ours
	}
	b = b[:0]
	a.classes[c].Put(&b)
}
