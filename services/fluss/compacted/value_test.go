package compacted

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestTwosComplementIsBigIntegerToByteArray(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		want []byte
	}{
		{0, []byte{0}}, {1, []byte{1}}, {127, []byte{0x7f}}, {128, []byte{0, 0x80}}, {255, []byte{0, 0xff}},
		{256, []byte{1, 0}}, {-1, []byte{0xff}}, {-128, []byte{0x80}}, {-129, []byte{0xff, 0x7f}}, {-256, []byte{0xff, 0}},
		{-32768, []byte{0x80, 0}}, {-32769, []byte{0xff, 0x7f, 0xff}},
	} {
		if got := twosComplement(big.NewInt(tc.v)); !bytes.Equal(got, tc.want) {
			t.Errorf("%d: %x, want %x", tc.v, got, tc.want)
		}
	}
}

func TestSplitMillisFloors(t *testing.T) {
	for _, tc := range []struct {
		v      int64
		unit   arrow.TimeUnit
		ms     int64
		nanoMs int32
	}{
		{1500, arrow.Microsecond, 1, 500000},
		{-1, arrow.Microsecond, -1, 999000},
		{-1_000_001, arrow.Nanosecond, -2, 999999},
		{-3, arrow.Second, -3000, 0},
		{7, arrow.Millisecond, 7, 0},
	} {
		ms, n := splitMillis(tc.v, tc.unit)
		if ms != tc.ms || n != tc.nanoMs {
			t.Errorf("%d %s: (%d, %d), want (%d, %d)", tc.v, tc.unit, ms, n, tc.ms, tc.nanoMs)
		}
	}
}
