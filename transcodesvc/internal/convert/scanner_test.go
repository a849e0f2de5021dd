package convert

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzScannerMatchesEncodingJSON checks the tokenizer against the standard
// library: for valid UTF-8 input without deep nesting, skipping one value
// must succeed exactly when encoding/json calls the input valid JSON. And
// for strings, the unescaped text must match what encoding/json decodes.
func FuzzScannerMatchesEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		`{"a":[1,2.5e-3,-0,true,false,null,"x\u00e9\n"],"b":{}}`, `"\ud834\udd1e"`, `"\ud834"`, `[1,]`, `01`, `1.`,
		`{"a" 1}`, `"\x"`, `-`, `[[[]]]`, ` {"k":"v"} `, `"a\/b"`, `1e+5`, `{"a":1,}`, "\"\t\"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !utf8.Valid(in) || bytes.Count(in, []byte("["))+bytes.Count(in, []byte("{")) > maxDepth {
			return
		}
		var s scanner
		s.reset(in)
		err := s.skip(0)
		ours := err == nil && s.atEnd()
		std := json.Valid(in)
		if !ours && std && err != nil && strings.Contains(err.Error(), "surrogate") {
			// A lone UTF-16 surrogate escape is valid JSON syntax, which
			// encoding/json turns into U+FFFD; Ferry refuses it rather
			// than store a replaced character.
			return
		}
		if ours != std {
			t.Fatalf("%q: scanner says valid=%v (%v), encoding/json %v", in, ours, err, std)
		}
		if !std {
			return
		}
		s.reset(in)
		if s.peek() != '"' {
			return
		}
		got, err := s.str()
		if err != nil {
			// Lone surrogates: encoding/json substitutes U+FFFD, Ferry refuses.
			return
		}
		var want string
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("%q: scanner %q, encoding/json %q", in, got, want)
		}
	})
}

// TestObjectNextGuess: a guessed key is taken only when the input holds
// exactly its token; anything else (escaped spelling, a longer key, another
// key) is scanned as before and gives the same key.
func TestObjectNextGuess(t *testing.T) {
	tests := []struct {
		in, name, want string
		guessed        bool
	}{
		{`{"id":1}`, "id", "id", true},
		{`{ "id":1}`, "id", "id", true},
		{`{"id" :1}`, "id", "id", false},
		{`{"idx":1}`, "id", "idx", false},
		{`{"i\u0064":1}`, "id", "id", false},
		{`{"qty":1}`, "id", "qty", false},
		{`{"a/b":1}`, "a/b", "a/b", true},
		{`{"a\/b":1}`, "a/b", "a/b", false},
		{`{"größe":1}`, "größe", "größe", true},
	}
	for _, tc := range tests {
		s := scanner{data: []byte(tc.in)}
		if err := s.objectStart(); err != nil {
			t.Fatal(err)
		}
		key, guessed, done, err := s.objectNextGuess(true, quotedKey(tc.name))
		if err != nil || done || string(key) != tc.want || guessed != tc.guessed {
			t.Errorf("%s with guess %q: key %q, guessed %v, done %v, err %v; want %q, guessed %v", tc.in, tc.name, key, guessed, done, err, tc.want, tc.guessed)
		}
		if c := s.peek(); c != '1' {
			t.Errorf("%s: next byte %q, want the value", tc.in, c)
		}
	}
	for _, name := range []string{`a"b`, `a\b`, "a\nb", "\xff"} {
		if q := quotedKey(name); q != nil {
			t.Errorf("quotedKey(%q) = %q, want nil: the raw bytes would not be the key's token", name, q)
		}
	}
	// A name with a quote must not be guessed: `"a"b"` in the input is the
	// key "a" followed by garbage.
	s := scanner{data: []byte(`{"a"b":1}`)}
	_ = s.objectStart()
	if _, _, _, err := s.objectNextGuess(true, quotedKey(`a"b`)); err == nil {
		t.Error(`{"a"b":1}: accepted`)
	}
}
