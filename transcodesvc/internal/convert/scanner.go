package convert

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a validating JSON tokenizer over one record value. It never
// builds a generic tree: the schema-driven decoders pull exactly the tokens
// they expect, so a value is parsed once, straight into Arrow builders.
//
// Strings without escapes are returned as slices of the input; escaped ones
// are unescaped into scratch, which the caller must consume before the next
// string is read.
type scanner struct {
	data    []byte
	pos     int
	scratch []byte
}

// maxDepth bounds nesting inside skipped values; typed values are bounded
// by the schema itself.
const maxDepth = 256

var (
	errEOF = errors.New("unexpected end of JSON")
)

type syntaxError struct {
	msg string
	pos int
}

func (e *syntaxError) Error() string { return "malformed JSON at byte " + itoa(e.pos) + ": " + e.msg }

func (s *scanner) reset(data []byte) {
	s.data = data
	s.pos = 0
}

func (s *scanner) fail(msg string) error { return &syntaxError{msg: msg, pos: s.pos} }

// peek skips whitespace and returns the next byte, or 0 at the end.
func (s *scanner) peek() byte {
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; c {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return c
		}
	}
	return 0
}

// atEnd reports whether only whitespace is left.
func (s *scanner) atEnd() bool { return s.peek() == 0 && s.pos >= len(s.data) }

// expect consumes byte c after whitespace.
func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		if s.pos >= len(s.data) {
			return errEOF
		}
		return s.fail("expected '" + string(c) + "'")
	}
	s.pos++
	return nil
}

// literal consumes the exact word (true, false, null) at the position.
func (s *scanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.fail("invalid literal")
	}
	s.pos += len(word)
	return nil
}

// str reads a string token (the opening quote is next) and returns its
// unescaped, UTF-8-validated content.
func (s *scanner) str() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.fail("expected a string")
	}
	s.pos++
	start := s.pos
	ascii := true
	for s.pos < len(s.data) {
		// Eight bytes at a time: jump straight to the first byte that is
		// not plain ASCII (most strings are short names and values without
		// escapes, so this is usually the closing quote).
		if s.pos+8 <= len(s.data) {
			i := firstSpecial8(binary.LittleEndian.Uint64(s.data[s.pos:]))
			s.pos += i
			if i == 8 {
				continue
			}
		}
		c := s.data[s.pos]
		switch {
		case c == '"':
			out := s.data[start:s.pos]
			s.pos++
			if !ascii && !utf8.Valid(out) {
				return nil, s.fail("string is not valid UTF-8")
			}
			return out, nil
		case c == '\\':
			return s.strEscaped(start)
		case c < 0x20:
			return nil, s.fail("control character in string")
		case c >= 0x80:
			ascii = false
		}
		s.pos++
	}
	return nil, errEOF
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// firstSpecial8 returns the index (0..7, in memory order) of the first of
// the eight bytes in x (little-endian) that is a quote, a backslash, a
// control character (< 0x20) or non-ASCII (>= 0x80), or 8 when all are
// plain, using the classic SWAR zero-byte tests. Those tests can also flag
// a byte above a flagged one (a borrow), never below, so the lowest flag
// is exact.
func firstSpecial8(x uint64) int {
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	less20 := (x - ones*0x20) & ^x & highs
	return bits.TrailingZeros64(hasZero(x^(ones*'"'))|hasZero(x^(ones*'\\'))|less20|x&highs) >> 3
}

// strEscaped continues str once an escape shows up, unescaping into scratch.
func (s *scanner) strEscaped(start int) ([]byte, error) {
	out := append(s.scratch[:0], s.data[start:s.pos]...)
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			s.scratch = out
			if !utf8.Valid(out) {
				return nil, s.fail("string is not valid UTF-8")
			}
			return out, nil
		case c < 0x20:
			return nil, s.fail("control character in string")
		case c != '\\':
			out = append(out, c)
			s.pos++
			continue
		}
		if s.pos+1 >= len(s.data) {
			return nil, errEOF
		}
		e := s.data[s.pos+1]
		s.pos += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, s.fail("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A high surrogate must be followed by an escaped low one.
				r2 := rune(-1)
				if s.pos+1 < len(s.data) && s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
					s.pos += 2
					var ok2 bool
					if r2, ok2 = s.hex4(); !ok2 {
						return nil, s.fail("bad \\u escape")
					}
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return nil, s.fail("unpaired UTF-16 surrogate in \\u escape")
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, s.fail("bad escape")
		}
	}
	return nil, errEOF
}

func (s *scanner) hex4() (rune, bool) {
	if len(s.data)-s.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s.data[s.pos : s.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	s.pos += 4
	return r, true
}

// number reads a number token and returns its literal text, checked
// against the JSON grammar.
func (s *scanner) number() ([]byte, error) {
	s.peek()
	start := s.pos
	d := s.data
	i := s.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return nil, s.fail("expected a number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			s.pos = i
			return nil, s.fail("number has no digits after '.'")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			s.pos = i
			return nil, s.fail("number has no digits in its exponent")
		}
	}
	s.pos = i
	return d[start:i], nil
}

// objectStart consumes '{'. Then call objectNext until it reports done.
func (s *scanner) objectStart() error { return s.expect('{') }

// objectNext returns the next key (its value comes next), or done at '}'.
// first tells whether this is the first call for the object.
func (s *scanner) objectNext(first bool) (key []byte, done bool, err error) {
	key, _, done, err = s.objectNextGuess(first, nil)
	return key, done, err
}

// objectNextGuess is objectNext with the key the caller expects, as its JSON
// string with the quotes and the colon (see quotedKey): when the input
// holds exactly those bytes, the key is taken without scanning it, and
// guessed says so.
func (s *scanner) objectNextGuess(first bool, guess []byte) (key []byte, guessed, done bool, err error) {
	c := s.peek()
	if c == '}' {
		s.pos++
		return nil, false, true, nil
	}
	if !first {
		if c != ',' {
			if c == 0 {
				return nil, false, false, errEOF
			}
			return nil, false, false, s.fail("expected ',' or '}'")
		}
		s.pos++
	}
	if guess != nil && s.peek() == '"' && bytes.HasPrefix(s.data[s.pos:], guess) {
		s.pos += len(guess)
		return guess[1 : len(guess)-2], true, false, nil
	}
	if key, err = s.str(); err != nil {
		return nil, false, false, err
	}
	if err = s.expect(':'); err != nil {
		return nil, false, false, err
	}
	return key, false, false, nil
}

// arrayNext reports whether another element follows; call after '['.
func (s *scanner) arrayNext(first bool) (more bool, err error) {
	c := s.peek()
	if c == ']' {
		s.pos++
		return false, nil
	}
	if !first {
		if c != ',' {
			if c == 0 {
				return false, errEOF
			}
			return false, s.fail("expected ',' or ']'")
		}
		s.pos++
	}
	return true, nil
}

// skip consumes one value of any type, validating it.
func (s *scanner) skip(depth int) error {
	if depth > maxDepth {
		return s.fail("nested too deeply")
	}
	switch c := s.peek(); {
	case c == '"':
		_, err := s.str()
		return err
	case c == '{':
		s.pos++
		for first := true; ; first = false {
			_, done, err := s.objectNext(first)
			if err != nil {
				return err
			}
			if done {
				return nil
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
	case c == '[':
		s.pos++
		for first := true; ; first = false {
			more, err := s.arrayNext(first)
			if err != nil {
				return err
			}
			if !more {
				return nil
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := s.number()
		return err
	case c == 0:
		return errEOF
	default:
		return s.fail("unexpected character")
	}
}

// kind names the JSON type starting with c, for error messages.
func kind(c byte) string {
	switch {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	case c == 0:
		return "the end of the value"
	}
	return "'" + string(c) + "'"
}

func itoa(v int) string { return strconv.Itoa(v) }

// quotedKey returns name as a JSON string token and the colon after it,
// whose bytes, wherever they start a key in the input, can only be that key:
// no quote, backslash or control character, valid UTF-8. nil otherwise. (An
// escaped spelling of the same key, or space before the colon, does not
// match them and is scanned.)
func quotedKey(name string) []byte {
	if !utf8.ValidString(name) {
		return nil
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == '"' || c == '\\' || c < 0x20 {
			return nil
		}
	}
	return []byte(`"` + name + `":`)
}
