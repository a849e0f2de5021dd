package convert

import (
	"errors"
	"math/big"
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
