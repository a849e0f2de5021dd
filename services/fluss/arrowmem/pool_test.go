package arrowmem

import "testing"

func TestPoolReusesZeroedClasses(t *testing.T) {
	var a Pool
	b := a.Allocate(5000)
	if len(b) != 5000 || cap(b) != 8192 {
		t.Fatalf("len %d cap %d, want 5000 and the 8 KiB class", len(b), cap(b))
	}
	for i := range b {
		b[i] = 0xAB
	}
	a.Free(b)
	// A pool may drop entries at any time, so reuse is not asserted; what
	// comes back must be zeroed and sized either way.
	c := a.Allocate(6000)
	if len(c) != 6000 || cap(c) != 8192 {
		t.Fatalf("len %d cap %d", len(c), cap(c))
	}
	for i, v := range c {
		if v != 0 {
			t.Fatalf("byte %d is %#x, want zeroed memory", i, v)
		}
	}
	g := a.Reallocate(7000, c[:10])
	if len(g) != 7000 || g[9] != 0 || g[6999] != 0 {
		t.Fatalf("reallocate within the class: len %d", len(g))
	}
	g[0] = 1
	h := a.Reallocate(20000, g)
	if len(h) != 20000 || h[0] != 1 || cap(h) != 32768 {
		t.Fatalf("reallocate to a larger class: len %d cap %d first %d", len(h), cap(h), h[0])
	}
	small := a.Allocate(100)
	if len(small) != 100 {
		t.Fatalf("small: len %d", len(small))
	}
	a.Free(small)                 // not pooled; must not panic
	a.Free(make([]byte, 0, 5000)) // foreign capacity; ignored
}
