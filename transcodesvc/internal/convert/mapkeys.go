package convert

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/types"
)

// keySet finds a repeated key within one map value. Fluss's Java readers
// copy every map into a java.util.HashMap (InternalRow's deep field
// getters), so of two equal keys only the last entry would be read back,
// and not where it was sent: Ferry refuses such a map instead.
//
// Keys are compared as stored, so 1, 1.0 and "1" are one INT key.
type keySet struct {
	// One of the two reads the key just appended to the key builder: word
	// for keys of at most 64 bits (exact), bytes for the others.
	word  func() uint64
	bytes func(dst []byte, s *scanner, start int) ([]byte, error)

	ids  []byte // the bytes identities of the current map
	keys []seenKey
	// again and first are the first repeat found while the map was small.
	again, first seenKey
	found        bool
}

// seenKey holds no pointers, so sorting many of them stays cheap.
type seenKey struct {
	word       uint64 // the key, or for bytes identities a summary that tells most apart
	off, end   int    // bytes identity in ids
	entry      int    // position in the map as sent
	text, tend int    // the key's JSON in the scanner's data; text is -1 for an object's key
}

// smallMap is how many keys add compares one by one; larger maps are
// sorted once at their end, so a huge map costs n log n, not n².
const smallMap = 16

func newKeySet(t types.DataType, b array.Builder, rejectUnknown bool) *keySet {
	switch b := b.(type) {
	case *array.BooleanBuilder:
		return &keySet{word: func() uint64 {
			if b.Value(b.Len() - 1) {
				return 1
			}
			return 0
		}}
	case *array.Int8Builder:
		return &keySet{word: func() uint64 { return uint64(b.Value(b.Len() - 1)) }}
	case *array.Int16Builder:
		return &keySet{word: func() uint64 { return uint64(b.Value(b.Len() - 1)) }}
	case *array.Int32Builder:
		return &keySet{word: func() uint64 { return uint64(b.Value(b.Len() - 1)) }}
	case *array.Int64Builder:
		return &keySet{word: func() uint64 { return uint64(b.Value(b.Len() - 1)) }}
	case *array.Date32Builder:
		return &keySet{word: func() uint64 { return uint64(b.Value(b.Len() - 1)) }}
	case *array.Time32Builder:
		return &keySet{word: func() uint64 { return uint64(b.Value(b.Len() - 1)) }}
	case *array.Time64Builder:
		return &keySet{word: func() uint64 { return uint64(b.Value(b.Len() - 1)) }}
	case *array.Float32Builder:
		// Bits, as Java's Float.equals compares them: NaN equals NaN, 0.0 is not -0.0.
		return &keySet{word: func() uint64 { return uint64(math.Float32bits(b.Value(b.Len() - 1))) }}
	case *array.Float64Builder:
		return &keySet{word: func() uint64 { return math.Float64bits(b.Value(b.Len() - 1)) }}
	case *array.StringBuilder:
		return &keySet{bytes: func(dst []byte, _ *scanner, _ int) ([]byte, error) {
			return append(dst, b.BinaryBuilder.Value(b.Len()-1)...), nil
		}}
	case *array.BinaryBuilder:
		return &keySet{bytes: func(dst []byte, _ *scanner, _ int) ([]byte, error) {
			return append(dst, b.Value(b.Len()-1)...), nil
		}}
	}
	// Builders that cannot show what they hold (decimals, timestamps,
	// BINARY(n), nested keys): read the key again into a one-value array
	// of its own and use Arrow's text for that value, which is exact.
	scratch := array.NewBuilder(memory.DefaultAllocator, b.Type())
	w := newWriter(t, scratch, rejectUnknown)
	return &keySet{bytes: func(dst []byte, s *scanner, start int) ([]byte, error) {
		end := s.pos
		s.pos = start
		err := w.value(s)
		s.pos = end
		arr := scratch.NewArray()
		defer arr.Release()
		if err != nil {
			return dst, err
		}
		return append(dst, arr.ValueStr(0)...), nil
	}}
}

func (k *keySet) reset() {
	k.ids = k.ids[:0]
	k.keys = k.keys[:0]
	k.found = false
}

// add records the key of the entry just appended. start is where its JSON
// began; pair is whether the map was sent as pairs (so that JSON is the
// key's), not as an object.
func (k *keySet) add(s *scanner, start, entry int, pair bool) error {
	key := seenKey{entry: entry, text: -1}
	if pair {
		key.text, key.tend = start, s.pos
	}
	if k.word != nil {
		key.word = k.word()
	} else {
		key.off = len(k.ids)
		ids, err := k.bytes(k.ids, s, start)
		k.ids = ids
		if err != nil {
			return err
		}
		key.end = len(k.ids)
		key.word = summary(k.ids[key.off:])
	}
	if !k.found && len(k.keys) < smallMap {
		for i := range k.keys {
			if k.same(k.keys[i], key) {
				k.again, k.first, k.found = key, k.keys[i], true
				break
			}
		}
	}
	k.keys = append(k.keys, key)
	return nil
}

// summary packs the length and the last eight bytes of an identity: keys
// like "attr-1" and "attr-2" differ there, so most comparisons end at one
// word. Equal summaries are compared byte by byte.
func summary(id []byte) uint64 {
	var tail uint64
	for _, c := range id[max(0, len(id)-8):] {
		tail = tail<<8 | uint64(c)
	}
	return tail*0x9e3779b97f4a7c15 + uint64(len(id))
}

func (k *keySet) same(a, b seenKey) bool {
	return a.word == b.word && bytes.Equal(k.ids[a.off:a.end], k.ids[b.off:b.end])
}

// repeated returns the first entry, in the order sent, whose key an
// earlier entry already had, and that earlier entry; ok is false when
// every key is distinct.
func (k *keySet) repeated() (again, first seenKey, ok bool) {
	if k.found {
		return k.again, k.first, true
	}
	if len(k.keys) <= smallMap {
		return seenKey{}, seenKey{}, false
	}
	slices.SortFunc(k.keys, func(a, b seenKey) int {
		if c := cmp.Compare(a.word, b.word); c != 0 {
			return c
		}
		if c := bytes.Compare(k.ids[a.off:a.end], k.ids[b.off:b.end]); c != 0 {
			return c
		}
		return cmp.Compare(a.entry, b.entry)
	})
	head := 0
	for i := 1; i < len(k.keys); i++ {
		if !k.same(k.keys[i], k.keys[head]) {
			head = i
			continue
		}
		if !ok || k.keys[i].entry < again.entry {
			again, first, ok = k.keys[i], k.keys[head], true
		}
	}
	return again, first, ok
}

// repeatedErr describes a repeated key; the caller adds the entry's path.
func (k *keySet) repeatedErr(s *scanner, again, first seenKey) error {
	if again.text < 0 {
		return &fieldError{msg: fmt.Sprintf("map key %s appears twice; Fluss readers would keep only one of the entries",
			strconv.Quote(string(k.ids[again.off:again.end])))}
	}
	shown := string(s.data[again.text:again.tend])
	if len(shown) > 64 {
		shown = shown[:61] + "..."
	}
	return &fieldError{msg: fmt.Sprintf("map key %s appears twice (also at [%d]); Fluss readers would keep only one of the entries", shown, first.entry)}
}
