package schemas

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestMessageIndexes(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want []int
		rest []byte
	}{
		{"shorthand", []byte{0, 0xAA}, []int{0}, []byte{0xAA}},
		{"one", []byte{2, 2, 0xAA}, []int{1}, []byte{0xAA}},
		{"nested", []byte{4, 2, 6}, []int{1, 3}, []byte{}},
	} {
		got, rest, err := MessageIndexes(nil, tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != len(tc.want) || !bytes.Equal(rest, tc.rest) {
			t.Fatalf("%s: got %v rest %x, want %v rest %x", tc.name, got, rest, tc.want, tc.rest)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%s: got %v, want %v", tc.name, got, tc.want)
			}
		}
		if back := AppendMessageIndexes(nil, got); !bytes.Equal(back, tc.in[:len(tc.in)-len(tc.rest)]) {
			t.Fatalf("%s: AppendMessageIndexes(%v) = %x", tc.name, got, back)
		}
	}
	for _, bad := range [][]byte{{}, {0x80}, {4, 2}, {1}, {2, 1}} {
		_, _, err := MessageIndexes(nil, bad)
		var fe *FrameError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "bad message indexes") {
			t.Fatalf("MessageIndexes(%x) = %v, want a bad message indexes FrameError", bad, err)
		}
	}
}

func FuzzMessageIndexes(f *testing.F) {
	f.Add([]byte{0, 1})
	f.Add([]byte{4, 2, 6, 8})
	f.Fuzz(func(t *testing.T, in []byte) {
		idx, rest, err := MessageIndexes(nil, in)
		if err != nil {
			return
		}
		head := AppendMessageIndexes(nil, idx)
		if len(head)+len(rest) > len(in) {
			t.Fatalf("%x: re-encoded header %x and rest %x longer than the input", in, head, rest)
		}
	})
}
