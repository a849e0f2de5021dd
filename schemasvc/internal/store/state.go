// Package store keeps the registry's schemas, subjects, versions and
// configs as an append-only log of rows in one Fluss bucket, and folds that
// log into the registry's state. Every instance folds the same rows in the
// same order into the same state, so no instance coordinates the others: a
// claim (an id for a schema, a version number for a subject) holds when it
// is the first claim of that id or version in the log, and a writer reads
// the log back after appending to learn whether its claim won.
package store

import (
	"slices"
	"sort"
)

// Row kinds.
const (
	KindSchema  = "schema"  // ID claims Type+Canonical+References
	KindVersion = "version" // Subject Version claims schema ID; Text DerivedMark when derived from the table
	KindDelete  = "delete"  // soft-deletes Subject Version (0: every version)
	KindPurge   = "purge"   // permanently deletes a soft-deleted Subject Version (0: every version)
	KindConfig  = "config"  // Subject's compatibility level is Text ("" subject: global; "" text: unset)
)

// DerivedMark is the Text of a version row whose schema was derived from
// the table rather than registered by a client.
const DerivedMark = "derived"

// Row is one entry of the log.
type Row struct {
	Kind    string
	ID      int32
	Subject string
	Version int32
	// Type is the schema language: AVRO, PROTOBUF or JSON.
	Type string
	// Text is the schema as registered, or a config's level.
	Text string
	// Canonical is the form registrations are compared by.
	Canonical string
	// References is the JSON array of the schema's references ("" for none).
	References string
	// TimeMs is when the row was written (informational).
	TimeMs int64
}

// Schema is a schema with its id.
type Schema struct {
	ID         int32
	Type       string
	Text       string
	Canonical  string
	References string
}

// Key is what makes two registrations the same schema.
func (s *Schema) Key() string { return SchemaKey(s.Type, s.Canonical, s.References) }

// SchemaKey joins the parts of a schema's identity.
func SchemaKey(typ, canonical, refs string) string { return typ + "\x00" + canonical + "\x00" + refs }

// Version is one version of a subject.
type Version struct {
	Version int32
	ID      int32
	Deleted bool
	// Derived: the schema was derived from the table, not registered.
	Derived bool
}

// State is the fold of the log. It is not safe for concurrent use.
type State struct {
	schemas  map[int32]*Schema
	byKey    map[string]int32
	subjects map[string][]*Version // ordered by version
	configs  map[string]string
}

// NewState is the state of an empty log.
func NewState() *State {
	return &State{schemas: map[int32]*Schema{}, byKey: map[string]int32{}, subjects: map[string][]*Version{}, configs: map[string]string{}}
}

// Apply folds one row in. Rows that lose a claim change nothing.
func (st *State) Apply(r Row) {
	switch r.Kind {
	case KindSchema:
		s := &Schema{ID: r.ID, Type: r.Type, Text: r.Text, Canonical: r.Canonical, References: r.References}
		if r.ID <= 0 || st.schemas[r.ID] != nil {
			return // the id is someone else's
		}
		if _, dup := st.byKey[s.Key()]; dup {
			return // the schema already has an id
		}
		st.schemas[r.ID] = s
		st.byKey[s.Key()] = r.ID
	case KindVersion:
		if r.Version <= 0 || st.schemas[r.ID] == nil {
			return
		}
		vs := st.subjects[r.Subject]
		for _, v := range vs {
			if v.Version == r.Version || (v.ID == r.ID && !v.Deleted) {
				return // the version is taken, or the schema is already live there
			}
		}
		if s := st.schemas[r.ID]; s.Key() != SchemaKey(r.Type, r.Canonical, r.References) {
			return // the id went to another schema than the writer's
		}
		vs = append(vs, &Version{Version: r.Version, ID: r.ID, Derived: r.Text == DerivedMark})
		sort.Slice(vs, func(i, j int) bool { return vs[i].Version < vs[j].Version })
		st.subjects[r.Subject] = vs
	case KindDelete:
		for _, v := range st.subjects[r.Subject] {
			if r.Version == 0 || v.Version == r.Version {
				v.Deleted = true
			}
		}
	case KindPurge:
		vs := slices.DeleteFunc(st.subjects[r.Subject], func(v *Version) bool {
			return v.Deleted && (r.Version == 0 || v.Version == r.Version)
		})
		if len(vs) == 0 {
			delete(st.subjects, r.Subject)
		} else {
			st.subjects[r.Subject] = vs
		}
	case KindConfig:
		if r.Text == "" {
			delete(st.configs, r.Subject)
		} else {
			st.configs[r.Subject] = r.Text
		}
	}
}

// Schema returns the schema with id, or nil.
func (st *State) Schema(id int32) *Schema { return st.schemas[id] }

// IDOf returns the id of the schema with key, or 0.
func (st *State) IDOf(key string) int32 { return st.byKey[key] }

// Versions returns subject's versions, deleted ones included, in order.
func (st *State) Versions(subject string) []*Version { return st.subjects[subject] }

// Live returns subject's versions that are not deleted, in order.
func (st *State) Live(subject string) []*Version {
	var out []*Version
	for _, v := range st.subjects[subject] {
		if !v.Deleted {
			out = append(out, v)
		}
	}
	return out
}

// Subjects names every subject with a version (deleted ones with
// includeDeleted), sorted.
func (st *State) Subjects(includeDeleted bool) []string {
	var out []string
	for s, vs := range st.subjects {
		for _, v := range vs {
			if includeDeleted || !v.Deleted {
				out = append(out, s)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// SubjectVersion names one version of one subject.
type SubjectVersion struct {
	Subject string
	Version int32
}

// UsedBy lists the live subject versions that name schema id.
func (st *State) UsedBy(id int32) []SubjectVersion {
	var out []SubjectVersion
	for _, s := range st.Subjects(false) {
		for _, v := range st.Live(s) {
			if v.ID == id {
				out = append(out, SubjectVersion{s, v.Version})
			}
		}
	}
	return out
}

// Config returns subject's compatibility level ("" subject: the global
// one), and whether one is set.
func (st *State) Config(subject string) (string, bool) {
	c, ok := st.configs[subject]
	return c, ok
}

// NextFreeID is the first id at or after want (wrapping past the largest
// int32 to 1) that no schema has: the deterministic probe on a collision.
func (st *State) NextFreeID(want int32) int32 {
	id := want
	for st.schemas[id] != nil || id <= 0 {
		if id == 1<<31-1 || id <= 0 {
			id = 1
		} else {
			id++
		}
	}
	return id
}
