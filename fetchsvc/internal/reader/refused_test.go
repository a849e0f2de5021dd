package reader

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestRefusedTableLoggedOncePerTopic: consumers of a partitioned table's own
// topic retry several times a second; the refusal, with the pattern of its
// partitions' topics, is logged once a minute per topic.
func TestRefusedTableLoggedOncePerTopic(t *testing.T) {
	var buf bytes.Buffer
	s := &Service{log: slog.New(slog.NewTextHandler(&buf, nil))}
	for range 3 {
		s.logRefusedTable("shop.daily")
	}
	s.logRefusedTable("shop.hourly")
	out := buf.String()
	if n := strings.Count(out, "refused"); n != 2 {
		t.Errorf("%d lines, want one per topic:\n%s", n, out)
	}
	if !strings.Contains(out, `pattern=^shop\.daily\..+`) {
		t.Errorf("the pattern is not logged:\n%s", out)
	}
}
