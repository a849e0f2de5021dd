package convert

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
)

// FuzzDecimalMatchesBigRat checks the exact decimal parser against
// math/big: an accepted literal must equal unscaled/10^scale exactly, a
// refused one must really need more fractional digits or more integer
// digits than the type has.
func FuzzDecimalMatchesBigRat(f *testing.F) {
	for _, s := range []string{"12.34", "-0.05", "1.2300", "1.234", "1e3", "15E-4", "+2.5", "0e999", "99999999.99", "100000000", "-0", "000123.4500", "1e-999999"} {
		f.Add([]byte(s), uint8(10), uint8(2))
	}
	f.Fuzz(func(t *testing.T, lit []byte, p, sc uint8) {
		precision := int(p%38) + 1
		scale := int(sc) % (precision + 1)
		if len(lit) > 200 {
			return
		}
		var x decimalDigits
		n, err := parseDecimal(&x, lit, precision, scale)
		r, ok := new(big.Rat).SetString(string(lit))
		if errors.Is(err, errNotNumber) || !ok {
			// big.Rat also takes forms such as "1/2", "0x1p3" or "Inf";
			// only check that what Ferry takes, big.Rat takes too.
			if err == nil {
				t.Fatalf("%q accepted by Ferry but not by big.Rat", lit)
			}
			return
		}
		if errors.Is(err, errTooManyDigits) {
			return
		}
		scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
		limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
		switch {
		case err == nil:
			want := scaled.Num()
			if !scaled.IsInt() || n.BigInt().Cmp(want) != 0 {
				t.Fatalf("%q DECIMAL(%d,%d): got %s, want %s", lit, precision, scale, n.BigInt(), scaled.RatString())
			}
		case errors.Is(err, errTooManyFractionDigits):
			if scaled.IsInt() {
				t.Fatalf("%q DECIMAL(%d,%d): refused for fractional digits but %s is whole", lit, precision, scale, scaled.RatString())
			}
		case errors.Is(err, errRange):
			if !scaled.IsInt() || new(big.Int).Abs(scaled.Num()).Cmp(limit) < 0 {
				t.Fatalf("%q DECIMAL(%d,%d): refused as out of range but %s fits", lit, precision, scale, scaled.RatString())
			}
		default:
			t.Fatalf("%q: unexpected error %v", lit, err)
		}
	})
}

// TestParseFloat64MatchesStrconv compares the fast path with strconv on
// literals around its limits (2^53, 19 digits, exponents ±22) and on random
// ones: the same bits, or both refused.
func TestParseFloat64MatchesStrconv(t *testing.T) {
	lits := []string{"0", "-0", "1", "-1", "0.5", "1.0", "123.456", "-0.001", "1e22", "1e23", "1e-22", "1e-23",
		"9007199254740992", "9007199254740993", "9007199254740993.0", "18446744073709551615", "1234567890123456789",
		"12345678901234567890", "0.1e1", "5e-324", "1e308", "1e309", "-1e400", "1e-400", "2.2250738585072014e-308",
		"1E+2", "1e+0", "0e99999", "1e0000000000000000000005", "4.9406564584124654e-324", "0.30000000000000004"}
	rng := rand.New(rand.NewPCG(1, 2))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		if n > 1 && b[0] == '0' {
			b[0] = '1'
		}
		return string(b)
	}
	for range 200_000 {
		lit := digits(1 + rng.IntN(18))
		if rng.IntN(2) == 0 {
			lit += "." + digits(1+rng.IntN(18))
		}
		if rng.IntN(3) == 0 {
			lit += fmt.Sprintf("e%d", rng.IntN(61)-30)
		}
		if rng.IntN(2) == 0 {
			lit = "-" + lit
		}
		lits = append(lits, lit)
	}
	for _, lit := range lits {
		if !isJSONNumber([]byte(lit)) {
			t.Fatalf("%q: not a JSON number, fix the test", lit)
		}
		want, wantErr := strconv.ParseFloat(lit, 64)
		got, err := parseFloat64([]byte(lit))
		if (err != nil) != (wantErr != nil) || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseFloat64(%q) = %v (%b), %v; strconv: %v (%b), %v", lit, got, math.Float64bits(got), err,
				want, math.Float64bits(want), wantErr)
		}
	}
}
