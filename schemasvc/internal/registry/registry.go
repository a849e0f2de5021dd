// Package registry is the Schema Registry's logic: subjects map to tables
// by TopicNameStrategy, a registration is accepted when its schema maps
// onto the table (and is compatible with the subject's earlier versions at
// the subject's level), and the latest version of a subject nobody
// registered is derived from the table. State lives in a store.Log; ids
// are derived from the schema and claimed in the log, so every instance
// gives a schema the same id without talking to the others.
package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ferrygw/ferry/schemasvc/internal/avromap"
	"github.com/ferrygw/ferry/schemasvc/internal/jsonmap"
	"github.com/ferrygw/ferry/schemasvc/internal/protomap"
	"github.com/ferrygw/ferry/schemasvc/internal/store"
	"github.com/ferrygw/ferry/schemasvc/internal/tablefit"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/protoschema"
)

// Schema types as the REST API names them.
const (
	TypeAvro     = "AVRO"
	TypeProtobuf = "PROTOBUF"
	TypeJSON     = "JSON"
)

// Compatibility levels.
const DefaultCompatibility = "BACKWARD"

var levels = []string{"NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"}

// Reference is a schema another one imports, by subject and version.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int32  `json:"version"`
}

// Input is a schema as a client sends it.
type Input struct {
	Type       string // "" means AVRO
	Text       string
	References []Reference
}

// SubjectSchema is one version of a subject with its schema.
type SubjectSchema struct {
	Subject string
	Version int32
	Schema  *store.Schema
}

// Registry answers the REST and gRPC APIs. Safe for concurrent use.
type Registry struct {
	log     store.Log
	catalog catalogv1.CatalogServiceClient
	logger  *slog.Logger
	regs    metric.Int64Counter

	mu    sync.Mutex
	state *store.State
	next  int64 // log offset after the rows folded into state
}

// New returns a registry over log, resolving subjects' tables through
// catalog.
func New(log store.Log, catalog catalogv1.CatalogServiceClient, logger *slog.Logger, mp metric.MeterProvider) (*Registry, error) {
	regs, err := mp.Meter("github.com/ferrygw/ferry/schemasvc").Int64Counter("ferry.schema.registrations",
		metric.WithUnit("{registration}"),
		metric.WithDescription("Schema registrations by outcome: new (a new version), existing (the schema was already a version of the subject), derived (from the table), refused"))
	if err != nil {
		return nil, err
	}
	return &Registry{log: log, catalog: catalog, logger: logger, regs: regs, state: store.NewState()}, nil
}

// catchUp folds the log's new rows into the state. r.mu must be held.
func (r *Registry) catchUp(ctx context.Context) error {
	rows, next, err := r.log.Read(ctx, r.next)
	if err != nil {
		return err
	}
	for _, row := range rows {
		r.state.Apply(row)
	}
	r.next = next
	return nil
}

// locked runs fn with the state caught up with the log.
func (r *Registry) locked(ctx context.Context, fn func(st *store.State) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.catchUp(ctx); err != nil {
		return err
	}
	return fn(r.state)
}

// Types lists the schema types the registry accepts.
func Types() []string { return []string{TypeJSON, TypeProtobuf, TypeAvro} }

// prepared is a parsed input: avro is set for an Avro schema, json for a
// JSON Schema, proto for a Protobuf one.
type prepared struct {
	typ, text, canonical, refs string
	avro                       avro.Schema
	json                       *jsonmap.Schema
	proto                      *protomap.Schema
}

// fit checks the schema against the table part t.
func (p *prepared) fit(t tablefit.Target) *tablefit.Mismatch {
	switch {
	case p.json != nil:
		return jsonmap.Check(p.json, t)
	case p.proto != nil:
		return protomap.Check(p.proto, t)
	}
	return avromap.Check(p.avro, t)
}

func (p *prepared) key() string { return store.SchemaKey(p.typ, p.canonical, p.refs) }

// prepare parses in, resolving its references in st.
func prepare(st *store.State, in Input) (*prepared, error) {
	typ := in.Type
	if typ == "" {
		typ = TypeAvro
	}
	switch typ {
	case TypeAvro, TypeJSON, TypeProtobuf:
	default:
		return nil, errorf(CodeInvalidSchema, "Invalid schema: unknown schema type %s", typ)
	}
	var refTexts []string
	refByName := map[string]string{}
	for _, ref := range in.References {
		v := findVersion(st.Live(ref.Subject), ref.Version)
		if v == nil {
			return nil, errorf(CodeInvalidSchema, "Invalid schema: reference %q: subject %s version %d is not registered", ref.Name, ref.Subject, ref.Version)
		}
		refTexts = append(refTexts, st.Schema(v.ID).Text)
		refByName[ref.Name] = st.Schema(v.ID).Text
	}
	refs := ""
	if len(in.References) > 0 {
		b, _ := json.Marshal(in.References)
		refs = string(b)
	}
	p := &prepared{typ: typ, text: in.Text, refs: refs}
	if typ == TypeProtobuf {
		// An import of a referenced file may itself import others: all of
		// them are needed to compile.
		imports := map[string]string{}
		for _, ref := range in.References {
			if err := protoImports(st, ref, imports); err != nil {
				return nil, errorf(CodeInvalidSchema, "Invalid schema: %v", err)
			}
		}
		s, err := protomap.Parse(in.Text, imports)
		if err != nil {
			return nil, errorf(CodeInvalidSchema, "Invalid schema %s: %v", in.Text, err)
		}
		p.proto, p.text, p.canonical = s, s.Text(), s.Canonical()
		return p, nil
	}
	if typ == TypeJSON {
		s, err := jsonmap.Parse(in.Text, refByName)
		if err != nil {
			return nil, errorf(CodeInvalidSchema, "Invalid schema %s: %v", in.Text, err)
		}
		p.json, p.canonical = s, s.Canonical()
		return p, nil
	}
	s, err := avromap.Parse(in.Text, refTexts)
	if err != nil {
		return nil, errorf(CodeInvalidSchema, "Invalid schema %s: %v", in.Text, err)
	}
	p.avro, p.canonical = s, avromap.Canonical(s)
	return p, nil
}

// protoImports adds the text of the file ref names, and of the files it
// references in turn, to imports by import path. Soft-deleted versions
// still resolve: a schema that references one was valid when registered.
func protoImports(st *store.State, ref Reference, imports map[string]string) error {
	if _, done := imports[ref.Name]; done {
		return nil
	}
	v := findVersion(st.Versions(ref.Subject), ref.Version)
	if v == nil {
		return fmt.Errorf("reference %q: subject %s version %d is not registered", ref.Name, ref.Subject, ref.Version)
	}
	s := st.Schema(v.ID)
	imports[ref.Name] = s.Text
	for _, r := range parseRefs(s.References) {
		if err := protoImports(st, r, imports); err != nil {
			return err
		}
	}
	return nil
}

func findVersion(vs []*store.Version, version int32) *store.Version {
	for _, v := range vs {
		if v.Version == version {
			return v
		}
	}
	return nil
}

// candidateID is where the probe for a new schema's id starts: a hash of
// the schema, so that every instance, and every deployment, starts at the
// same id for the same schema.
func candidateID(key string) int32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	id := int32(h.Sum32() & 0x7fffffff)
	if id == 0 {
		id = 1
	}
	return id
}

// Register adds in as the next version of subject, or returns the version
// it already is. The schema must map onto the subject's table and be
// compatible with the subject's earlier versions at its level.
func (r *Registry) Register(ctx context.Context, subject string, in Input) (id, version int32, err error) {
	outcome := "refused"
	defer func() { r.regs.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome))) }()
	tgt, err := r.target(ctx, subject, true)
	if err != nil {
		return 0, 0, err
	}
	err = r.locked(ctx, func(st *store.State) error {
		p, err := prepare(st, in)
		if err != nil {
			return err
		}
		if id = st.IDOf(p.key()); id != 0 {
			for _, v := range st.Live(subject) {
				if v.ID == id {
					version, outcome = v.Version, "existing"
					return nil
				}
			}
		}
		if err := tgt.check(p); err != nil {
			return err
		}
		if err := r.checkCompatible(st, subject, p, nil); err != nil {
			return err
		}
		id, version, err = r.claim(ctx, st, subject, p, false)
		if err == nil {
			outcome = "new"
		}
		return err
	})
	if err != nil {
		r.logger.InfoContext(ctx, "schema registration refused", "subject", subject, "err", err)
	}
	return id, version, err
}

// maxClaims bounds how often a registration retries after losing a claim
// to a concurrent one.
const maxClaims = 8

// claim appends the schema (when it has no id yet) and the subject's next
// version in one batch, then reads the log back: the claims hold unless a
// concurrent writer's came first, in which case it tries again with the
// state that now includes theirs.
func (r *Registry) claim(ctx context.Context, st *store.State, subject string, p *prepared, derived bool) (int32, int32, error) {
	mark := ""
	if derived {
		mark = store.DerivedMark
	}
	for range maxClaims {
		now := time.Now().UnixMilli()
		var rows []store.Row
		id := st.IDOf(p.key())
		if id == 0 {
			id = st.NextFreeID(candidateID(p.key()))
			rows = append(rows, store.Row{Kind: store.KindSchema, ID: id, Type: p.typ, Text: p.text, Canonical: p.canonical, References: p.refs, TimeMs: now})
		}
		next := int32(1)
		if vs := st.Versions(subject); len(vs) > 0 {
			next = vs[len(vs)-1].Version + 1
		}
		rows = append(rows, store.Row{Kind: store.KindVersion, ID: id, Subject: subject, Version: next, Type: p.typ, Text: mark, Canonical: p.canonical, References: p.refs, TimeMs: now})
		if err := r.log.Append(ctx, rows); err != nil {
			return 0, 0, err
		}
		if err := r.catchUp(ctx); err != nil {
			return 0, 0, err
		}
		if got := st.IDOf(p.key()); got != 0 {
			for _, v := range st.Live(subject) {
				if v.ID == got {
					return got, v.Version, nil
				}
			}
		}
	}
	return 0, 0, errorf(CodeStore, "Error in the backend data store: registration under %s lost %d claims to concurrent ones", subject, maxClaims)
}

// checkCompatible applies subject's compatibility level to p and the
// subject's live versions, or to p and version only when it is set.
func (r *Registry) checkCompatible(st *store.State, subject string, p *prepared, only *store.Version) error {
	if p.json != nil {
		return nil // JSON Schemas are checked against the table only
	}
	level := effectiveLevel(st, subject)
	// A derived version constrains nothing beyond the table, which every
	// registration is checked against anyway; a version in another
	// language cannot be compared.
	comparable := func(v *store.Version) bool { return !v.Derived && st.Schema(v.ID).Type == p.typ }
	against := slices.DeleteFunc(st.Live(subject), func(v *store.Version) bool { return !comparable(v) })
	switch {
	case only != nil && comparable(only):
		against = []*store.Version{only}
	case only != nil:
		against = nil
	case !strings.HasSuffix(level, "_TRANSITIVE") && len(against) > 0:
		against = against[len(against)-1:]
	}
	if level == "NONE" {
		return nil
	}
	for _, v := range against {
		prev, err := r.prepareStored(st, st.Schema(v.ID))
		if err != nil {
			continue // an earlier version that no longer parses constrains nothing
		}
		var problem error
		if strings.HasPrefix(level, "BACKWARD") || strings.HasPrefix(level, "FULL") {
			problem = readable(p, prev)
		}
		if problem == nil && (strings.HasPrefix(level, "FORWARD") || strings.HasPrefix(level, "FULL")) {
			problem = readable(prev, p)
		}
		if problem != nil {
			return errorf(CodeIncompatible, "Schema being registered is incompatible with an earlier schema for subject \"%s\", details: [version %d: %v (compatibility %s)]", subject, v.Version, problem, level)
		}
	}
	return nil
}

// readable reports why data written with writer could not be read with
// reader, two schemas of one language (Avro or Protobuf).
func readable(reader, writer *prepared) error {
	if reader.proto != nil {
		return protomap.Compatible(reader.proto, writer.proto)
	}
	return avro.NewSchemaCompatibility().Compatible(reader.avro, writer.avro)
}

// prepareStored parses a stored Avro or Protobuf schema with the schemas it
// references.
func (r *Registry) prepareStored(st *store.State, s *store.Schema) (*prepared, error) {
	p := &prepared{typ: s.Type, text: s.Text, canonical: s.Canonical, refs: s.References}
	switch s.Type {
	case TypeAvro:
		a, err := avromap.Parse(s.Text, r.refTexts(st, s))
		if err != nil {
			return nil, err
		}
		p.avro = a
	case TypeProtobuf:
		ps, err := r.protoSchema(st, s)
		if err != nil {
			return nil, err
		}
		p.proto = ps
	default:
		return nil, fmt.Errorf("%s schemas are not compared", s.Type)
	}
	return p, nil
}

// protoSchema compiles a stored Protobuf schema with its imports.
func (r *Registry) protoSchema(st *store.State, s *store.Schema) (*protomap.Schema, error) {
	imports := map[string]string{}
	for _, ref := range parseRefs(s.References) {
		if err := protoImports(st, ref, imports); err != nil {
			return nil, err
		}
	}
	return protomap.Parse(s.Text, imports)
}

// FormatSerialized is the format= value that asks for a Protobuf schema as
// a base64 FileDescriptorProto.
const FormatSerialized = "serialized"

// Formatted returns s's text in format: a Protobuf schema "serialized" is
// its base64 FileDescriptorProto (what confluent-kafka-python's
// deserializers ask for); every other schema and format is the text as
// stored.
func (r *Registry) Formatted(ctx context.Context, s *store.Schema, format string) (string, error) {
	if format != FormatSerialized || s.Type != TypeProtobuf {
		return s.Text, nil
	}
	var out string
	err := r.locked(ctx, func(st *store.State) error {
		ps, err := r.protoSchema(st, s)
		if err != nil {
			return errorf(CodeInvalidSchema, "Invalid schema: schema %d does not compile: %v", s.ID, err)
		}
		out, err = ps.Serialized()
		return err
	})
	return out, err
}

// refTexts returns the texts of the schemas s references.
func (r *Registry) refTexts(st *store.State, s *store.Schema) []string {
	var texts []string
	for _, ref := range parseRefs(s.References) {
		if v := findVersion(st.Versions(ref.Subject), ref.Version); v != nil {
			texts = append(texts, st.Schema(v.ID).Text)
		}
	}
	return texts
}

func parseRefs(s string) []Reference {
	if s == "" {
		return nil
	}
	var refs []Reference
	_ = json.Unmarshal([]byte(s), &refs)
	return refs
}

// References returns s's references.
func References(s *store.Schema) []Reference { return parseRefs(s.References) }

func effectiveLevel(st *store.State, subject string) string {
	if l, ok := st.Config(subject); ok {
		return l
	}
	if l, ok := st.Config(""); ok {
		return l
	}
	return DefaultCompatibility
}

// Lookup finds in among subject's versions (deleted ones too with
// deleted). A subject without versions gets its derived schema first, so
// a client holding the derived schema finds it.
func (r *Registry) Lookup(ctx context.Context, subject string, in Input, deleted bool) (*SubjectSchema, error) {
	if err := r.deriveIfEmpty(ctx, subject); err != nil {
		return nil, err
	}
	var out *SubjectSchema
	err := r.locked(ctx, func(st *store.State) error {
		vs := st.Versions(subject)
		if len(vs) == 0 {
			return subjectNotFound(subject)
		}
		p, err := prepare(st, in)
		if err != nil {
			return err
		}
		id := st.IDOf(p.key())
		for _, v := range vs {
			if v.ID == id && id != 0 && (deleted || !v.Deleted) {
				out = &SubjectSchema{Subject: subject, Version: v.Version, Schema: st.Schema(id)}
				return nil
			}
		}
		return schemaNotFound()
	})
	return out, err
}

// SchemaByID returns the schema with id.
func (r *Registry) SchemaByID(ctx context.Context, id int32) (*store.Schema, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// An id never changes meaning: a known one needs no read of the log.
	if s := r.state.Schema(id); s != nil {
		return s, nil
	}
	if err := r.catchUp(ctx); err != nil {
		return nil, err
	}
	if s := r.state.Schema(id); s != nil {
		return s, nil
	}
	return nil, errorf(CodeSchemaNotFound, "Schema %d not found", id)
}

// Resolved returns the schemas s references, resolved recursively, each
// once, the deepest first.
func (r *Registry) Resolved(ctx context.Context, s *store.Schema) ([]*store.Schema, error) {
	var out []*store.Schema
	seen := map[int32]bool{}
	err := r.locked(ctx, func(st *store.State) error {
		var walk func(s *store.Schema) error
		walk = func(s *store.Schema) error {
			for _, ref := range parseRefs(s.References) {
				v := findVersion(st.Versions(ref.Subject), ref.Version)
				if v == nil {
					return errorf(CodeSchemaNotFound, "Schema %d references %s version %d, which is gone", s.ID, ref.Subject, ref.Version)
				}
				if seen[v.ID] {
					continue
				}
				seen[v.ID] = true
				dep := st.Schema(v.ID)
				if err := walk(dep); err != nil {
					return err
				}
				out = append(out, dep)
			}
			return nil
		}
		return walk(s)
	})
	return out, err
}

// VersionsOfID lists the live subject versions that use schema id.
func (r *Registry) VersionsOfID(ctx context.Context, id int32) ([]store.SubjectVersion, error) {
	if _, err := r.SchemaByID(ctx, id); err != nil {
		return nil, err
	}
	var out []store.SubjectVersion
	err := r.locked(ctx, func(st *store.State) error {
		out = st.UsedBy(id)
		return nil
	})
	return out, err
}

// Subjects names the subjects with a live version (any version with
// deleted), sorted.
func (r *Registry) Subjects(ctx context.Context, deleted bool) ([]string, error) {
	var out []string
	err := r.locked(ctx, func(st *store.State) error {
		out = st.Subjects(deleted)
		return nil
	})
	return out, err
}

// Versions lists subject's version numbers.
func (r *Registry) Versions(ctx context.Context, subject string, deleted bool) ([]int32, error) {
	var out []int32
	err := r.locked(ctx, func(st *store.State) error {
		for _, v := range st.Versions(subject) {
			if deleted || !v.Deleted {
				out = append(out, v.Version)
			}
		}
		if len(out) == 0 {
			return subjectNotFound(subject)
		}
		return nil
	})
	return out, err
}

// ParseVersion reads a version path segment: "latest" or -1 is the latest
// (0 returned), otherwise a positive number.
func ParseVersion(s string) (int32, error) {
	if s == "latest" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n == 0 || n < -1 {
		return 0, errorf(CodeInvalidVersion, "The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", s)
	}
	if n == -1 {
		return 0, nil
	}
	return int32(n), nil
}

// Version returns version v of subject (0: the latest live one). The
// latest of a subject without live versions is derived from its table
// and registered.
func (r *Registry) Version(ctx context.Context, subject string, v int32, deleted bool) (*SubjectSchema, error) {
	if v == 0 {
		if err := r.deriveIfEmpty(ctx, subject); err != nil {
			return nil, err
		}
	}
	var out *SubjectSchema
	err := r.locked(ctx, func(st *store.State) error {
		all := st.Versions(subject)
		if len(all) == 0 {
			return subjectNotFound(subject)
		}
		var found *store.Version
		if v == 0 {
			if live := st.Live(subject); len(live) > 0 {
				found = live[len(live)-1]
			}
		} else if f := findVersion(all, v); f != nil && (deleted || !f.Deleted) {
			found = f
		}
		if found == nil {
			if v == 0 {
				return subjectNotFound(subject)
			}
			return versionNotFound(v)
		}
		out = &SubjectSchema{Subject: subject, Version: found.Version, Schema: st.Schema(found.ID)}
		return nil
	})
	return out, err
}

// deriveIfEmpty registers the schema derived from subject's table as its
// next version when the subject has no live version and names a table.
func (r *Registry) deriveIfEmpty(ctx context.Context, subject string) error {
	return r.deriveIfEmptyAs(ctx, subject, "")
}

// deriveIfEmptyAs is deriveIfEmpty in schema language typ (AVRO, JSON or PROTOBUF;
// "" for the one the table's value format reads, see target.lang).
func (r *Registry) deriveIfEmptyAs(ctx context.Context, subject, typ string) error {
	empty := false
	if err := r.locked(ctx, func(st *store.State) error {
		empty = len(st.Live(subject)) == 0
		return nil
	}); err != nil || !empty {
		return err
	}
	tgt, err := r.target(ctx, subject, false)
	if err != nil {
		if e := AsError(err); e.Code == CodeSubjectNotFound {
			return nil // no table: the caller answers "not found"
		}
		return err
	}
	if typ == "" {
		typ = tgt.lang
	}
	text, err := tgt.derive(typ)
	if err != nil {
		return errorf(CodeSubjectNotFound, "Subject '%s' not found: no %s schema can be derived from table %s: %v", subject, typ, tgt.table, err)
	}
	err = r.locked(ctx, func(st *store.State) error {
		if len(st.Live(subject)) > 0 {
			return nil // someone registered one meanwhile
		}
		p, err := prepare(st, Input{Type: typ, Text: text})
		if err != nil {
			return err
		}
		_, _, err = r.claim(ctx, st, subject, p, true)
		return err
	})
	if err == nil {
		r.regs.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", "derived")))
		r.logger.InfoContext(ctx, "schema derived from table", "subject", subject, "table", tgt.table)
	}
	return err
}

// DeleteSubject deletes subject's versions: soft (hidden, still resolvable
// by id), or with permanent those already soft-deleted.
func (r *Registry) DeleteSubject(ctx context.Context, subject string, permanent bool) ([]int32, error) {
	var out []int32
	err := r.locked(ctx, func(st *store.State) error {
		all := st.Versions(subject)
		if len(all) == 0 {
			return subjectNotFound(subject)
		}
		kind := store.KindDelete
		for _, v := range all {
			if !permanent && v.Deleted {
				continue
			}
			// The subject's own versions may use each other; other subjects' keep them.
			if ids := referrers(st, subject, v.Version, permanent, true); len(ids) > 0 {
				return referenceExists(subject, v.Version)
			}
			if permanent && !v.Deleted {
				return errorf(CodeSubjectNotSoftDeleted, "Subject '%s' was not deleted first before being permanently deleted", subject)
			}
			if permanent || !v.Deleted {
				out = append(out, v.Version)
			}
		}
		if permanent {
			kind = store.KindPurge
		} else if len(out) == 0 {
			return errorf(CodeSubjectSoftDeleted, "Subject '%s' was soft deleted.Set permanent=true to delete permanently", subject)
		}
		if err := r.log.Append(ctx, []store.Row{{Kind: kind, Subject: subject, TimeMs: time.Now().UnixMilli()}}); err != nil {
			return err
		}
		return r.catchUp(ctx)
	})
	return out, err
}

// DeleteVersion deletes one version (0: the latest live one) of subject.
func (r *Registry) DeleteVersion(ctx context.Context, subject string, v int32, permanent bool) (int32, error) {
	var out int32
	err := r.locked(ctx, func(st *store.State) error {
		all := st.Versions(subject)
		if len(all) == 0 {
			return subjectNotFound(subject)
		}
		var found *store.Version
		if v == 0 {
			if live := st.Live(subject); len(live) > 0 {
				found = live[len(live)-1]
			}
		} else {
			found = findVersion(all, v)
		}
		if found == nil {
			return versionNotFound(v)
		}
		// Schemas that use this version keep it (soft-deleted ones only until purged).
		if ids := referrers(st, subject, found.Version, permanent, false); len(ids) > 0 {
			return referenceExists(subject, found.Version)
		}
		kind := store.KindDelete
		switch {
		case permanent && !found.Deleted:
			return errorf(CodeVersionNotSoftDeleted, "Subject '%s' Version %d was not deleted first before being permanently deleted", subject, found.Version)
		case permanent:
			kind = store.KindPurge
		case found.Deleted:
			return errorf(CodeVersionSoftDeleted, "Subject '%s' Version %d was soft deleted.Set permanent=true to delete permanently", subject, found.Version)
		}
		out = found.Version
		if err := r.log.Append(ctx, []store.Row{{Kind: kind, Subject: subject, Version: found.Version, TimeMs: time.Now().UnixMilli()}}); err != nil {
			return err
		}
		return r.catchUp(ctx)
	})
	return out, err
}

// Config returns subject's compatibility level ("" subject: the global
// one); a subject without its own level answers the global one only with
// defaultToGlobal.
func (r *Registry) Config(ctx context.Context, subject string, defaultToGlobal bool) (string, error) {
	var out string
	err := r.locked(ctx, func(st *store.State) error {
		if l, ok := st.Config(subject); ok {
			out = l
			return nil
		}
		if subject != "" && !defaultToGlobal {
			return errorf(CodeSubjectConfigNotFound, "Subject '%s' does not have subject-level compatibility configured", subject)
		}
		out = effectiveLevel(st, "")
		return nil
	})
	return out, err
}

// SetConfig sets subject's compatibility level ("" subject: the global
// one).
func (r *Registry) SetConfig(ctx context.Context, subject, level string) error {
	if !slices.Contains(levels, level) {
		return errorf(CodeInvalidCompatibility, "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive")
	}
	return r.locked(ctx, func(*store.State) error {
		if err := r.log.Append(ctx, []store.Row{{Kind: store.KindConfig, Subject: subject, Text: level, TimeMs: time.Now().UnixMilli()}}); err != nil {
			return err
		}
		return r.catchUp(ctx)
	})
}

// DeleteConfig removes subject's own level and returns what it was. A
// subject without one is not found (40401), as Confluent answers it; only
// GET answers 40408.
func (r *Registry) DeleteConfig(ctx context.Context, subject string) (string, error) {
	var was string
	err := r.locked(ctx, func(st *store.State) error {
		l, ok := st.Config(subject)
		if !ok {
			if subject == "" {
				was = DefaultCompatibility
				return nil
			}
			return subjectNotFound(subject)
		}
		was = l
		if err := r.log.Append(ctx, []store.Row{{Kind: store.KindConfig, Subject: subject, TimeMs: time.Now().UnixMilli()}}); err != nil {
			return err
		}
		return r.catchUp(ctx)
	})
	return was, err
}

// Compatible reports whether in could be registered under subject: it maps
// onto the table and is compatible with version v (0: the latest) at the
// subject's level. The messages say why not.
func (r *Registry) Compatible(ctx context.Context, subject string, v int32, in Input) (bool, []string, error) {
	tgt, err := r.target(ctx, subject, true)
	if err != nil {
		return false, nil, err
	}
	var msgs []string
	err = r.locked(ctx, func(st *store.State) error {
		p, err := prepare(st, in)
		if err != nil {
			return err
		}
		var only *store.Version
		if v != 0 {
			if only = findVersion(st.Live(subject), v); only == nil {
				if len(st.Versions(subject)) == 0 {
					return subjectNotFound(subject)
				}
				return versionNotFound(v)
			}
		}
		if err := tgt.check(p); err != nil {
			msgs = append(msgs, err.Error())
		}
		if err := r.checkCompatible(st, subject, p, only); err != nil {
			msgs = append(msgs, err.Error())
		}
		return nil
	})
	return len(msgs) == 0, msgs, err
}

// target resolves subject's table, or the built-in Protobuf import a
// subject named after it holds. forRegistration refuses a subject that
// names neither as an invalid registration; otherwise it is not found.
func (r *Registry) target(ctx context.Context, subject string, forRegistration bool) (*target, error) {
	notFound := func(why string) error {
		if forRegistration {
			return errorf(CodeInvalidSchema, "Invalid schema: subject %s: %s", subject, why)
		}
		return errorf(CodeSubjectNotFound, "Subject '%s' not found.", subject)
	}
	topic, key := TopicOf(subject)
	if topic == "" {
		if protoschema.BuiltinFile(subject) != nil {
			return builtinTarget(subject), nil
		}
		return nil, notFound("Ferry maps subjects to tables by TopicNameStrategy: <topic>-value or <topic>-key")
	}
	res, err := r.catalog.ResolveTopics(ctx, &catalogv1.ResolveTopicsRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	var m *catalogv1.TopicMapping
	for _, t := range res.GetResults() {
		if t.GetTopic() == topic && t.GetErrorCode() == 0 {
			m = t.GetMapping()
		}
	}
	if m == nil {
		return nil, notFound(fmt.Sprintf("topic %s is not a Ferry topic", topic))
	}
	return newTarget(m, key), nil
}

// TopicOf splits a TopicNameStrategy subject into its topic and whether it
// is the key's; "" when the subject is neither <topic>-value nor
// <topic>-key.
func TopicOf(subject string) (topic string, key bool) {
	if t, ok := strings.CutSuffix(subject, "-value"); ok && t != "" {
		return t, false
	}
	if t, ok := strings.CutSuffix(subject, "-key"); ok && t != "" {
		return t, true
	}
	return "", false
}
