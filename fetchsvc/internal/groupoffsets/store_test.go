package groupoffsets

import (
	"testing"

	"github.com/ferrygw/ferry/services/fluss"
)

func TestAllLed(t *testing.T) {
	led := fluss.BucketLocation{Leader: 1}
	none := fluss.BucketLocation{Leader: fluss.NoLeader}
	for _, tc := range []struct {
		buckets []fluss.BucketLocation
		want    bool
	}{
		{nil, false},
		{[]fluss.BucketLocation{led}, true},
		{[]fluss.BucketLocation{led, led, led}, true},
		{[]fluss.BucketLocation{led, none, led}, false},
		{[]fluss.BucketLocation{none}, false},
	} {
		if got := allLed(tc.buckets); got != tc.want {
			t.Errorf("allLed(%v) = %v, want %v", tc.buckets, got, tc.want)
		}
	}
}
