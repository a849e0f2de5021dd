package store

import "testing"

func schemaRow(id int32, canonical string) Row {
	return Row{Kind: KindSchema, ID: id, Type: "AVRO", Text: canonical, Canonical: canonical}
}

func versionRow(subject string, v, id int32, canonical string) Row {
	return Row{Kind: KindVersion, Subject: subject, Version: v, ID: id, Type: "AVRO", Canonical: canonical}
}

// The first claim of an id wins; a later claim of the same id for another
// schema, or of another id for the same schema, changes nothing.
func TestFirstClaimWins(t *testing.T) {
	st := NewState()
	st.Apply(schemaRow(5, `"string"`))
	st.Apply(schemaRow(5, `"long"`))   // id taken
	st.Apply(schemaRow(6, `"string"`)) // schema already has 5
	if s := st.Schema(5); s == nil || s.Canonical != `"string"` {
		t.Fatalf("id 5 = %+v", s)
	}
	if st.Schema(6) != nil {
		t.Errorf("id 6 was given to a schema that had one")
	}
	if st.IDOf(SchemaKey("AVRO", `"long"`, "")) != 0 {
		t.Errorf("the losing schema got an id")
	}
	if got := st.NextFreeID(5); got != 6 {
		t.Errorf("NextFreeID(5) = %d, want 6", got)
	}
	if got := st.NextFreeID(1<<31 - 1); got != 1<<31-1 {
		t.Errorf("NextFreeID(max) = %d", got)
	}
	st.Apply(schemaRow(1<<31-1, `"int"`))
	if got := st.NextFreeID(1<<31 - 1); got != 1 {
		t.Errorf("NextFreeID wraps to %d, want 1", got)
	}
}

// A version row holds only when its number is free, its schema is not
// live in the subject already, and its id means the writer's schema.
func TestVersionClaims(t *testing.T) {
	st := NewState()
	st.Apply(schemaRow(5, `"string"`))
	st.Apply(schemaRow(9, `"long"`))
	st.Apply(versionRow("t-value", 1, 5, `"string"`))
	st.Apply(versionRow("t-value", 1, 9, `"long"`))   // number taken
	st.Apply(versionRow("t-value", 2, 5, `"string"`)) // already live
	st.Apply(versionRow("t-value", 2, 9, `"int"`))    // id 9 is another schema
	if vs := st.Versions("t-value"); len(vs) != 1 || vs[0].ID != 5 {
		t.Fatalf("versions %+v", vs)
	}
	st.Apply(versionRow("t-value", 2, 9, `"long"`))
	if vs := st.Live("t-value"); len(vs) != 2 || vs[1].Version != 2 || vs[1].ID != 9 {
		t.Fatalf("live %+v", vs)
	}
	if used := st.UsedBy(9); len(used) != 1 || used[0] != (SubjectVersion{"t-value", 2}) {
		t.Errorf("UsedBy(9) = %v", used)
	}
}

// Soft deletes hide versions; a purge removes only soft-deleted ones.
func TestDeleteAndPurge(t *testing.T) {
	st := NewState()
	st.Apply(schemaRow(5, `"string"`))
	st.Apply(schemaRow(9, `"long"`))
	st.Apply(versionRow("s", 1, 5, `"string"`))
	st.Apply(versionRow("s", 2, 9, `"long"`))
	st.Apply(Row{Kind: KindDelete, Subject: "s", Version: 1})
	if live := st.Live("s"); len(live) != 1 || live[0].Version != 2 {
		t.Fatalf("live after deleting 1: %+v", live)
	}
	st.Apply(Row{Kind: KindPurge, Subject: "s"}) // removes 1 only
	if vs := st.Versions("s"); len(vs) != 1 || vs[0].Version != 2 {
		t.Fatalf("versions after purge: %+v", vs)
	}
	st.Apply(Row{Kind: KindDelete, Subject: "s"})
	if got := st.Subjects(false); len(got) != 0 {
		t.Errorf("subjects %v after deleting all", got)
	}
	if got := st.Subjects(true); len(got) != 1 {
		t.Errorf("subjects with deleted %v", got)
	}
	st.Apply(Row{Kind: KindPurge, Subject: "s"})
	if got := st.Subjects(true); len(got) != 0 {
		t.Errorf("subjects %v after purge", got)
	}
	if st.Schema(5) == nil {
		t.Error("a purged version took its schema id with it")
	}
}

func TestConfigRows(t *testing.T) {
	st := NewState()
	st.Apply(Row{Kind: KindConfig, Text: "FULL"})
	st.Apply(Row{Kind: KindConfig, Subject: "s", Text: "NONE"})
	if l, ok := st.Config("s"); !ok || l != "NONE" {
		t.Errorf("s config %q %v", l, ok)
	}
	st.Apply(Row{Kind: KindConfig, Subject: "s"})
	if _, ok := st.Config("s"); ok {
		t.Error("unset config still set")
	}
	if l, _ := st.Config(""); l != "FULL" {
		t.Errorf("global %q", l)
	}
}
