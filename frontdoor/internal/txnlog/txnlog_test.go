package txnlog

import (
	"reflect"
	"testing"
)

// TestFoldReplaysEachIDsRows: resets replace, appends add, forgets drop,
// and the second copy of a retried write is skipped.
func TestFoldReplaysEachIDsRows(t *testing.T) {
	rows := []row{
		{id: "a", op: opReset, writeID: 1, data: []byte("init-a\n")},
		{id: "b", op: opReset, writeID: 2, data: []byte("init-b\n")},
		{id: "a", op: opAppend, writeID: 3, data: []byte("stage1\n")},
		{id: "a", op: opAppend, writeID: 3, data: []byte("stage1\n")}, // a retry's copy
		{id: "a", op: opAppend, writeID: 4, data: []byte("stage2\n")},
		{id: "b", op: opForget, writeID: 5},
		{id: "c", op: opReset, writeID: 6, data: []byte("init-c\n")},
		{id: "c", op: opAppend, writeID: 7, data: []byte("begin\n")},
		{id: "c", op: opReset, writeID: 8, data: []byte("init-c2\n")},
	}
	got := fold(rows)
	want := [][]byte{[]byte("init-a\nstage1\nstage2\n"), []byte("init-c2\n")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fold = %q, want %q", got, want)
	}
}

func TestNewWantsDatabaseDotTable(t *testing.T) {
	for _, p := range []string{"", "t", ".t", "d.", "d.t.x"} {
		if _, err := New(nil, p, 0); err == nil {
			t.Errorf("New(%q) accepted", p)
		}
	}
	if _, err := New(nil, DefaultTable, 0); err != nil {
		t.Fatal(err)
	}
}
