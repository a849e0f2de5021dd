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
