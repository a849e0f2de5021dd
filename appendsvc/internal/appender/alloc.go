package appender

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// pooledAllocator recycles the buffers the Arrow IPC reader allocates for
// each job (chiefly the message body, as large as the batch) instead of
// leaving them to the garbage collector, which is most of appendsvc's
// allocation volume. Buffers come in power-of-two classes from minPooled
// up to maxPooled; others are allocated and dropped as usual. Memory is
// zeroed on Allocate, as Arrow's Go allocator does.
type pooledAllocator struct {
	classes [maxClass - minClass + 1]sync.Pool
}

const (
	minClass  = 12 // 4 KiB
	maxClass  = 24 // 16 MiB
	minPooled = 1 << minClass
	maxPooled = 1 << maxClass
)

var _ memory.Allocator = (*pooledAllocator)(nil)

// class returns the pool index for a buffer of size bytes, or -1.
func class(size int) int {
	if size < minPooled || size > maxPooled {
		return -1
	}
	return bits.Len(uint(size-1)) - minClass
}

func (a *pooledAllocator) Allocate(size int) []byte {
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

func (a *pooledAllocator) Reallocate(size int, b []byte) []byte {
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

func (a *pooledAllocator) Free(b []byte) {
	c := class(cap(b))
	if c < 0 || cap(b) != 1<<(c+minClass) {
		return // not one of ours
	}
	b = b[:0]
	a.classes[c].Put(&b)
}
