package reader

import "testing"

// TestLogBytesFor: reads ask Fluss for the log bytes that become the Kafka
// bytes asked for, once a conversion of the table showed its growth.
func TestLogBytesFor(t *testing.T) {
	tb := newTables(nil, nil)
	if got := tb.logBytesFor(1, 1<<20); got != 1<<20 {
		t.Errorf("before any conversion: %d", got)
	}
	tb.observeGrowth(1, converted{kafka: make([]byte, 4<<20), flussBytes: 1 << 20})
	if got := tb.logBytesFor(1, 1<<20); got != 256<<10 {
		t.Errorf("after 4x growth: %d, want 256 KiB", got)
	}
	if got := tb.logBytesFor(1, 1000); got != minLogRead {
		t.Errorf("small limit: %d, want the minimum read %d", got, minLogRead)
	}
	tb.observeGrowth(1, converted{kafka: make([]byte, 10), flussBytes: 100})
	if got := tb.logBytesFor(1, 1<<20); got != 256<<10 {
		t.Errorf("a tiny conversion changed the growth: %d", got)
	}
	if got := tb.logBytesFor(1, 0); got != 0 {
		t.Errorf("no limit: %d, want 0 (FetchLog's default)", got)
	}
	tb.forget(1)
	if got := tb.logBytesFor(1, 1<<20); got != 1<<20 {
		t.Errorf("after forget: %d", got)
	}
}
