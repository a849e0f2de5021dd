package compacted

import (
	"bytes"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
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
		if got := appendTwosComplement(nil, decimal128.FromI64(tc.v)); !bytes.Equal(got, tc.want) {
			t.Errorf("%d: %x, want %x", tc.v, got, tc.want)
		}
	}
}

// Over the whole 128-bit range the byte form equals BigInteger.toByteArray
// (computed with math/big the way Java defines it).
func TestTwosComplementMatchesBigIntReference(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	ref := func(v *big.Int) []byte {
		// Java: toByteArray has bitLength()/8+1 bytes, bitLength of a
		// negative v being that of -v-1; the bytes are v mod 2^(8n).
		bl := v.BitLen()
		if v.Sign() < 0 {
			bl = new(big.Int).Sub(new(big.Int).Neg(v), big.NewInt(1)).BitLen()
		}
		n := bl/8 + 1
		m := new(big.Int).Mod(v, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
		out := make([]byte, n)
		m.FillBytes(out)
		return out
	}
	for i := range 20000 {
		v := decimal128.New(int64(rnd.Uint64())>>(rnd.IntN(64)), rnd.Uint64()>>(rnd.IntN(64)))
		if i%2 == 0 {
			v = decimal128.New(0, rnd.Uint64()>>(rnd.IntN(64))).Negate()
		}
		if got, want := appendTwosComplement(nil, v), ref(v.BigInt()); !bytes.Equal(got, want) {
			t.Fatalf("%s: % x, want % x", v.BigInt(), got, want)
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
