package produce

import (
	"context"
	"testing"
	"time"
)

func released(t *Ticket) bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

func TestSequencerOrder(t *testing.T) {
	s := NewSequencer()
	a1, a2, a3 := s.Take("a", 0), s.Take("a", 0), s.Take("a", 0)
	other := s.Take("a", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := other.Wait(ctx); err != nil {
		t.Fatal("another partition waited on partition 0")
	}
	if err := a2.Wait(ctx); err == nil {
		t.Fatal("second ticket did not wait for the first")
	}
	// a3 gives up early: its turn passes on only after a1 and a2.
	a3.Release()
	if released(a3) {
		t.Fatal("a ticket released before its predecessors let the next one go")
	}
	a1.Release()
	if err := a2.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	a2.Release()
	a4 := s.Take("a", 0)
	if err := a4.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	a4.Release()
	a4.Release() // idempotent
	other.Release()
	for deadline := time.Now().Add(10 * time.Second); s.Len() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("tickets still held after 10s")
		}
	}
}
