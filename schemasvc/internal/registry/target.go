package registry

import (
	"errors"
	"fmt"

	"github.com/ferrygw/ferry/schemasvc/internal/avromap"
	"github.com/ferrygw/ferry/schemasvc/internal/jsonmap"
	"github.com/ferrygw/ferry/schemasvc/internal/protomap"
	"github.com/ferrygw/ferry/schemasvc/internal/tablefit"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

// target is what a subject's schemas must map onto: the part of its
// table's row the record's value (or key) fills (docs/mapping.md).
type target struct {
	table     string // database.table, for messages
	database  string
	name      string
	fit       *tablefit.Target // nil: the part is not stored, any schema goes
	notStored string           // why avro is nil
	// lang is the schema language derived when the caller names none: the
	// one the table's value format reads, so a client that takes the
	// latest version gets a schema its serializer accepts.
	lang string
	// builtin is set, and the rest empty, for a subject named after a
	// built-in Protobuf import (google/protobuf/timestamp.proto,
	// google/type/date.proto, ...): it holds that file, as the import it is
	// for other schemas, and no table's.
	builtin string
}

// builtinTarget is the target of the subject named after the built-in
// import path.
func builtinTarget(path string) *target {
	return &target{table: "none (the built-in Protobuf import " + path + ")", builtin: path, lang: TypeProtobuf}
}

func newTarget(m *catalogv1.TopicMapping, key bool) *target {
	t := &target{table: m.GetDatabase() + "." + m.GetTable(), database: m.GetDatabase(), name: m.GetTable(), lang: TypeAvro}
	cm := m.GetMapping()
	switch {
	case key && cm.GetKeyFormat() == catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA:
		t.lang = TypeJSON
	case key && cm.GetKeyFormat() == catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF:
		t.lang = TypeProtobuf
	case key:
		// Avro for keys read as JSON or bytes too, as before kafka.key.format.
	case cm.GetValueFormat() == catalogv1.ValueFormat_VALUE_FORMAT_JSON_SCHEMA:
		t.lang = TypeJSON
	case cm.GetValueFormat() == catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF:
		t.lang = TypeProtobuf
	}
	byName := map[string]*catalogv1.Field{}
	for _, c := range m.GetColumns() {
		byName[c.GetName()] = c
	}
	if key {
		switch {
		case cm.GetKeyColumn() != "":
			t.fit = &tablefit.Target{Single: byName[cm.GetKeyColumn()]}
		case m.GetKind() == catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY:
			// Keys are records of the primary key (mapping.md §4.4).
			var cols []*catalogv1.Field
			for _, pk := range m.GetPrimaryKeys() {
				cols = append(cols, byName[pk])
			}
			t.fit = &tablefit.Target{Columns: cols}
		default:
			t.notStored = "the table stores no key (no kafka.key.column)"
		}
		return t
	}
	switch cm.GetValueFormat() {
	case catalogv1.ValueFormat_VALUE_FORMAT_RAW, catalogv1.ValueFormat_VALUE_FORMAT_STRING:
		t.fit = &tablefit.Target{Single: byName[cm.GetValueColumn()]}
		return t
	}
	taken := map[string]bool{cm.GetKeyColumn(): true, cm.GetTimestampColumn(): true, cm.GetHeadersColumn(): true}
	var cols []*catalogv1.Field
	for _, c := range m.GetColumns() {
		if !taken[c.GetName()] {
			cols = append(cols, c)
		}
	}
	t.fit = &tablefit.Target{Columns: cols, IgnoreUnknown: cm.GetUnknownFields() == catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_IGNORE}
	return t
}

// check refuses p (409, naming the field) when it does not map onto the
// target.
func (t *target) check(p *prepared) error {
	if t.builtin != "" {
		if p.proto == nil {
			return errorf(CodeIncompatible, "Schema being registered is incompatible with subject %s: it holds the built-in Protobuf import of that name, not a %s schema", t.builtin, p.typ)
		}
		if err := p.proto.CheckBuiltin(t.builtin); err != nil {
			return errorf(CodeIncompatible, "Schema being registered is incompatible with subject %s: it is not the built-in Protobuf import of that name: %v", t.builtin, err)
		}
		return nil
	}
	if t.fit == nil {
		return nil
	}
	if m := p.fit(*t.fit); m != nil {
		return errorf(CodeIncompatible, "Schema being registered is incompatible with table %s: %v", t.table, m)
	}
	return nil
}

// derive writes the target's schema in language typ (AVRO, JSON or
// PROTOBUF; "" for the table's own, t.lang).
func (t *target) derive(typ string) (string, error) {
	if typ == "" {
		typ = t.lang
	}
	switch {
	case t.builtin != "" && typ != TypeProtobuf:
		return "", fmt.Errorf("%s is a Protobuf file", t.builtin)
	case t.builtin != "":
		return protomap.DeriveBuiltin(t.builtin)
	case t.fit == nil:
		return "", errors.New(t.notStored)
	case len(t.fit.Columns) == 0 && t.fit.Single == nil:
		return "", fmt.Errorf("no columns")
	case typ == TypeJSON && t.fit.Single != nil:
		return jsonmap.DeriveSingle(t.fit.Single)
	case typ == TypeJSON:
		return jsonmap.Derive(t.name, t.fit.Columns)
	case typ == TypeProtobuf && t.fit.Single != nil:
		return "", fmt.Errorf("a Protobuf schema is a message, and column %s is one value", t.fit.Single.GetName())
	case typ == TypeProtobuf:
		return protomap.Derive(t.name, t.database, t.fit.Columns)
	case t.fit.Single != nil:
		return avromap.DeriveSingle(t.fit.Single)
	}
	return avromap.Derive(t.name, t.database, t.fit.Columns)
}
