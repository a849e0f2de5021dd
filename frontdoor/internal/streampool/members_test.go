package streampool

import (
	"context"
	"slices"
	"testing"
	"time"

	transcodev1 "github.com/ferrygw/ferry/services/api/gen/ferry/transcode/v1"
)

// TestSetBackendsAddsAndRemoves grows the pool by an instance, which then
// takes jobs, and drops one whose jobs are held unanswered: they move to
// the remaining instance and are answered there, none is lost.
func TestSetBackendsAddsAndRemoves(t *testing.T) {
	first, second := &echoServer{}, &echoServer{}
	_, a1 := serve(t, "127.0.0.1:0", first)
	_, a2 := serve(t, "127.0.0.1:0", second)
	p := newPool(t, LeastOutstanding, a1)

	added, removed := p.SetBackends([]Backend[transcodev1.TranscodeServiceClient]{{Addr: a1, Client: dial(t, a1)}, {Addr: a2, Client: dial(t, a2)}, {Addr: a2, Client: dial(t, a2)}})
	if !slices.Equal(added, []string{a2}) || len(removed) != 0 {
		t.Fatalf("added %v removed %v, want [%s] []", added, removed, a2)
	}
	if got := p.Addrs(); !slices.Equal(got, []string{a1, a2}) {
		t.Fatalf("Addrs = %v", got)
	}
	// The first instance swallows its jobs; the added one answers.
	first.hold.Store(true)
	var calls []*Call[*transcodev1.TranscodeResponse]
	waitFor(t, func() bool {
		if p.Outstanding()[a1] > 0 && second.answered.Load() > 0 {
			return true
		}
		calls = append(calls, p.Submit(0, &transcodev1.TranscodeRequest{}))
		return false
	})
	// Drop the first instance: its unanswered jobs go to the second.
	added, removed = p.SetBackends([]Backend[transcodev1.TranscodeServiceClient]{{Addr: a2}})
	if len(added) != 0 || !slices.Equal(removed, []string{a1}) {
		t.Fatalf("added %v removed %v, want [] [%s]", added, removed, a1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, c := range calls {
		if _, err := c.Wait(ctx); err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
	}
	if got := p.Addrs(); !slices.Equal(got, []string{a2}) {
		t.Fatalf("Addrs = %v", got)
	}
	if n := first.answered.Load(); n != 0 {
		t.Fatalf("the held instance answered %d jobs", n)
	}
}
