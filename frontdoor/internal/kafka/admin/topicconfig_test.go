package admin

import (
	"testing"
	"time"
)

func TestParseFlussDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"7 days": 7 * 24 * time.Hour, "2h": 2 * time.Hour, "30 min": 30 * time.Minute, "500": 500 * time.Millisecond,
		"1 s": time.Second, "10ms": 10 * time.Millisecond, " 3 d ": 72 * time.Hour,
	} {
		if got, err := parseFlussDuration(in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "days", "7 weeks", "99999999999999999999 d", "9999999999999 d"} {
		if got, err := parseFlussDuration(bad); err == nil {
			t.Errorf("%q: %v, want an error", bad, got)
		}
	}
}
