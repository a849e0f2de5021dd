package acl

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const example = `
# permission  principal    operation  resource
allow  User:alice   WRITE     topic:shop.orders
allow  User:*       DESCRIBE  topic:public.*
allow  User:etl     ALL       topic:shop.*
deny   User:etl     WRITE     topic:shop.payments   # not even etl
allow  User:reader  READ      topic:*
`

func TestAllowed(t *testing.T) {
	r, err := Parse(strings.NewReader(example))
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != 5 {
		t.Fatalf("%d rules", r.Len())
	}
	tests := []struct {
		principal string
		op        Operation
		topic     string
		want      bool
	}{
		{"User:alice", Write, "shop.orders", true},
		{"User:alice", Describe, "shop.orders", true}, // WRITE implies DESCRIBE
		{"User:alice", Read, "shop.orders", false},
		{"User:alice", Write, "shop.orders2", false}, // literal, not prefix
		{"User:alice", Describe, "public.news", true},
		{Anonymous, Describe, "public.news", true}, // User:* covers anonymous sessions
		{Anonymous, Write, "public.news", false},
		{"User:etl", Write, "shop.refunds", true},
		{"User:etl", Read, "shop.refunds", true},
		{"User:etl", Write, "shop.payments", false}, // deny wins
		{"User:etl", Describe, "shop.payments", true},
		{"User:etl", Write, "shopx", false},
		{"User:reader", Describe, "anything", true}, // READ implies DESCRIBE
		{"User:reader", Write, "anything", false},
		{"User:nobody", Describe, "shop.orders", false}, // nothing allows it
	}
	for _, tt := range tests {
		if got := r.Allowed(tt.principal, tt.op, tt.topic); got != tt.want {
			t.Errorf("Allowed(%s, %s, %s) = %v, want %v", tt.principal, tt.op, tt.topic, got, tt.want)
		}
	}
	if (&Rules{}).Allowed("User:alice", Describe, "x") {
		t.Error("empty rules allow")
	}
}

func TestParseRejects(t *testing.T) {
	for _, bad := range []string{
		"allow User:a WRITE",                   // missing resource
		"permit User:a WRITE topic:x",          // permission
		"allow alice WRITE topic:x",            // principal
		"allow User: WRITE topic:x",            // empty name
		"allow User:a DELETE topic:x",          // operation
		"allow User:a WRITE group:x",           // resource type
		"allow User:a WRITE topic:",            // empty topic
		"allow User:a WRITE topic:a*b",         // inner wildcard
		"allow User:a WRITE topic:a**",         // double wildcard
		"allow User:a WRITE topic:x extra",     // extra field
		"allow User:a WRITE topic:x\nbad line", // second line
	} {
		if _, err := Parse(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line ") {
			t.Errorf("Parse(%q) = %v, want an error naming the line", bad, err)
		}
	}
}

func TestPrincipal(t *testing.T) {
	if Principal("") != Anonymous || Principal("bob") != "User:bob" {
		t.Fatal(Principal(""), Principal("bob"))
	}
}

func TestFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acl")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("allow User:a WRITE topic:x\n")
	f, err := LoadFile(path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Allowed("User:a", Write, "x") || f.Allowed("User:a", Write, "y") {
		t.Fatal("initial rules not in force")
	}
	if changed, err := f.Reload(); changed || err != nil {
		t.Fatalf("unchanged file: Reload = %v, %v", changed, err)
	}
	write("allow User:a WRITE topic:y\n")
	if changed, err := f.Reload(); !changed || err != nil {
		t.Fatalf("changed file: Reload = %v, %v", changed, err)
	}
	if f.Allowed("User:a", Write, "x") || !f.Allowed("User:a", Write, "y") {
		t.Fatal("new rules not in force")
	}
	// A broken file keeps the rules in force.
	write("allow User:a WRITE nope\n")
	if changed, err := f.Reload(); !changed || err == nil {
		t.Fatalf("broken file: Reload = %v, %v", changed, err)
	}
	if !f.Allowed("User:a", Write, "y") {
		t.Fatal("a broken file changed the rules")
	}
	if _, err := LoadFile(path, nil); err == nil {
		t.Fatal("LoadFile accepted a broken file")
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing"), nil); err == nil {
		t.Fatal("LoadFile accepted a missing file")
	}
}

func TestFileWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acl")
	if err := os.WriteFile(path, []byte("allow User:a WRITE topic:x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := LoadFile(path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	reloads := make(chan bool, 4)
	f.OnReload(func(ok bool) { reloads <- ok })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.Watch(ctx, 10*time.Millisecond)
	if err := os.WriteFile(path, []byte("allow User:a WRITE topic:z\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ok := <-reloads; !ok {
		t.Fatal("reload failed")
	}
	if !f.Allowed("User:a", Write, "z") {
		t.Fatal("watched change not in force")
	}
}
