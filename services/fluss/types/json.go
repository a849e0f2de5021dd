package types

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// This file reads and writes the JSON Fluss uses for schemas and data types
// (Fluss's SchemaJsonSerde, ColumnJsonSerde and DataTypeJsonSerde): the
// schema_json of GetTableSchema, the "schema" object inside the table_json of
// GetTableInfo, and the schema Ferry sends when it creates a table.

// UnknownID is the column or field id of a column whose id the server has not
// assigned yet (Fluss's Schema.Column.UNKNOWN_COLUMN_ID).
const UnknownID = -1

// Schema is a Fluss table schema.
type Schema struct {
	Columns []Column
	// PrimaryKey names the primary key columns; empty for log tables.
	PrimaryKey []string
	// AutoIncrementColumns names the auto-increment columns, if any.
	AutoIncrementColumns []string
	// HighestFieldID is the highest column or nested field id ever assigned
	// in this table (ids are never reused after a column is dropped);
	// UnknownID in a schema the server has not seen yet.
	HighestFieldID int
}

// Column is one top-level column of a table.
type Column struct {
	Name    string
	Type    DataType
	Comment string
	// ID is the column id the server assigned, or UnknownID.
	ID int
	// AggFunction is the column's aggregation function for the aggregate
	// merge engine of primary key tables; nil for none.
	AggFunction *AggFunction
}

// AggFunction is a column's aggregation function (Fluss's AggFunction).
type AggFunction struct {
	Type       string
	Parameters map[string]string
}

// Fields returns the columns as fields, in order, e.g. for ArrowSchema.
func (s Schema) Fields() []Field {
	fs := make([]Field, len(s.Columns))
	for i, c := range s.Columns {
		fs[i] = Field{Name: c.Name, Type: c.Type}
	}
	return fs
}

// ColumnIndex returns the position of the named column, or -1.
func (s Schema) ColumnIndex(name string) int {
	return slices.IndexFunc(s.Columns, func(c Column) bool { return c.Name == name })
}

// Validate reports a schema Fluss would reject: empty, duplicate column
// names, invalid types, or key columns that do not exist.
func (s Schema) Validate() error {
	if len(s.Columns) == 0 {
		return fmt.Errorf("schema has no columns")
	}
	seen := make(map[string]bool, len(s.Columns))
	for i, c := range s.Columns {
		if c.Name == "" {
			return fmt.Errorf("column %d has no name", i)
		}
		if seen[c.Name] {
			return fmt.Errorf("duplicate column name %q", c.Name)
		}
		seen[c.Name] = true
		if err := c.Type.Validate(); err != nil {
			return fmt.Errorf("column %s: %w", c.Name, err)
		}
	}
	for _, k := range s.PrimaryKey {
		if !seen[k] {
			return fmt.Errorf("primary key column %q is not a column", k)
		}
	}
	for _, k := range s.AutoIncrementColumns {
		if !seen[k] {
			return fmt.Errorf("auto-increment column %q is not a column", k)
		}
	}
	return nil
}

// jsonRootNames are Fluss's DataTypeRoot enum names, which is what the JSON
// carries (not the SQL spelling String prints: INTEGER, not INT).
var jsonRootNames = map[Root]string{
	Boolean: "BOOLEAN", TinyInt: "TINYINT", SmallInt: "SMALLINT", Int: "INTEGER", BigInt: "BIGINT",
	Float: "FLOAT", Double: "DOUBLE", Decimal: "DECIMAL", Char: "CHAR", String: "STRING",
	Binary: "BINARY", Bytes: "BYTES", Date: "DATE", Time: "TIME_WITHOUT_TIME_ZONE",
	TimestampNTZ: "TIMESTAMP_WITHOUT_TIME_ZONE", TimestampLTZ: "TIMESTAMP_WITH_LOCAL_TIME_ZONE",
	Array: "ARRAY", Map: "MAP", Row: "ROW",
}

var jsonRoots = func() map[string]Root {
	m := make(map[string]Root, len(jsonRootNames))
	for r, n := range jsonRootNames {
		m[n] = r
	}
	return m
}()

// The wire shapes. Pointers tell an absent member from a zero one where
// Fluss's reader does (nullable defaults to true, ids to -1).
type schemaJSON struct {
	Version              *int         `json:"version,omitempty"`
	Columns              []columnJSON `json:"columns"`
	PrimaryKey           []string     `json:"primary_key,omitempty"`
	AutoIncrementColumns []string     `json:"auto_increment_column,omitempty"`
	HighestFieldID       *int         `json:"highest_field_id,omitempty"`
}

type columnJSON struct {
	Name        string           `json:"name"`
	DataType    *dataTypeJSON    `json:"data_type"`
	Comment     *string          `json:"comment,omitempty"`
	AggFunction *aggFunctionJSON `json:"agg_function,omitempty"`
	ID          *int             `json:"id,omitempty"`
}

type aggFunctionJSON struct {
	Type       string            `json:"type"`
	Parameters map[string]string `json:"parameters,omitempty"`
}

type dataTypeJSON struct {
	Type      string        `json:"type"`
	Nullable  *bool         `json:"nullable,omitempty"`
	Length    *int          `json:"length,omitempty"`
	Precision *int          `json:"precision,omitempty"`
	Scale     *int          `json:"scale,omitempty"`
	Element   *dataTypeJSON `json:"element_type,omitempty"`
	Key       *dataTypeJSON `json:"key_type,omitempty"`
	Value     *dataTypeJSON `json:"value_type,omitempty"`
	Fields    []fieldJSON   `json:"fields,omitempty"`
}

type fieldJSON struct {
	Name        string        `json:"name"`
	FieldType   *dataTypeJSON `json:"field_type"`
	Description *string       `json:"description,omitempty"`
	FieldID     *int          `json:"field_id,omitempty"`
}

// ParseSchemaJSON decodes a schema as Fluss serializes it.
func ParseSchemaJSON(data []byte) (Schema, error) {
	var sj schemaJSON
	if err := strictUnmarshal(data, &sj); err != nil {
		return Schema{}, fmt.Errorf("fluss schema json: %w", err)
	}
	return sj.toSchema()
}

// ParseDataTypeJSON decodes one data type as Fluss serializes it.
func ParseDataTypeJSON(data []byte) (DataType, error) {
	var tj dataTypeJSON
	if err := strictUnmarshal(data, &tj); err != nil {
		return DataType{}, fmt.Errorf("fluss data type json: %w", err)
	}
	return tj.toDataType()
}

// strictUnmarshal decodes one JSON value and rejects trailing data. Unknown
// members are tolerated: newer Fluss versions add members, and ignoring what
// we do not understand is what Fluss's own reader does.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

func (sj *schemaJSON) toSchema() (Schema, error) {
	if sj.Columns == nil {
		return Schema{}, fmt.Errorf("fluss schema json: no \"columns\" member")
	}
	s := Schema{
		Columns:              make([]Column, len(sj.Columns)),
		PrimaryKey:           sj.PrimaryKey,
		AutoIncrementColumns: sj.AutoIncrementColumns,
		HighestFieldID:       UnknownID,
	}
	if sj.HighestFieldID != nil {
		s.HighestFieldID = *sj.HighestFieldID
	}
	for i, cj := range sj.Columns {
		if cj.Name == "" {
			return Schema{}, fmt.Errorf("fluss schema json: column %d has no name", i)
		}
		if cj.DataType == nil {
			return Schema{}, fmt.Errorf("fluss schema json: column %s has no data_type", cj.Name)
		}
		t, err := cj.DataType.toDataType()
		if err != nil {
			return Schema{}, fmt.Errorf("fluss schema json: column %s: %w", cj.Name, err)
		}
		c := Column{Name: cj.Name, Type: t, ID: UnknownID}
		if cj.Comment != nil {
			c.Comment = *cj.Comment
		}
		if cj.ID != nil {
			c.ID = *cj.ID
		}
		if cj.AggFunction != nil {
			c.AggFunction = &AggFunction{Type: cj.AggFunction.Type, Parameters: cj.AggFunction.Parameters}
		}
		s.Columns[i] = c
	}
	if err := s.Validate(); err != nil {
		return Schema{}, fmt.Errorf("fluss schema json: %w", err)
	}
	return s, nil
}

func (tj *dataTypeJSON) toDataType() (DataType, error) {
	root, ok := jsonRoots[tj.Type]
	if !ok {
		return DataType{}, fmt.Errorf("unknown type %q", tj.Type)
	}
	t := DataType{Root: root, Nullable: tj.Nullable == nil || *tj.Nullable}
	need := func(name string, v *int) (int, error) {
		if v == nil {
			return 0, fmt.Errorf("%s without %q", tj.Type, name)
		}
		return *v, nil
	}
	var err error
	switch root {
	case Char, Binary:
		t.Length, err = need("length", tj.Length)
	case Decimal:
		if t.Precision, err = need("precision", tj.Precision); err == nil {
			t.Scale, err = need("scale", tj.Scale)
		}
	case Time, TimestampNTZ, TimestampLTZ:
		t.Precision, err = need("precision", tj.Precision)
	case Array:
		if tj.Element == nil {
			return DataType{}, fmt.Errorf("ARRAY without \"element_type\"")
		}
		e, eerr := tj.Element.toDataType()
		if eerr != nil {
			return DataType{}, fmt.Errorf("ARRAY element: %w", eerr)
		}
		t.Element = &e
	case Map:
		if tj.Key == nil || tj.Value == nil {
			return DataType{}, fmt.Errorf("MAP without \"key_type\" or \"value_type\"")
		}
		k, kerr := tj.Key.toDataType()
		if kerr != nil {
			return DataType{}, fmt.Errorf("MAP key: %w", kerr)
		}
		v, verr := tj.Value.toDataType()
		if verr != nil {
			return DataType{}, fmt.Errorf("MAP value: %w", verr)
		}
		t.Key, t.Value = &k, &v
	case Row:
		if tj.Fields == nil {
			return DataType{}, fmt.Errorf("ROW without \"fields\"")
		}
		t.Fields = make([]Field, len(tj.Fields))
		for i, fj := range tj.Fields {
			if fj.FieldType == nil {
				return DataType{}, fmt.Errorf("ROW field %q without \"field_type\"", fj.Name)
			}
			ft, ferr := fj.FieldType.toDataType()
			if ferr != nil {
				return DataType{}, fmt.Errorf("ROW field %s: %w", fj.Name, ferr)
			}
			t.Fields[i] = Field{Name: fj.Name, Type: ft}
		}
	}
	if err != nil {
		return DataType{}, err
	}
	if err := t.Validate(); err != nil {
		return DataType{}, err
	}
	return t, nil
}

// MarshalSchemaJSON encodes a schema for a new table the way Fluss's
// SchemaJsonSerde does. Ids are assigned afresh, exactly as Fluss's
// Schema.Builder.column does for a new schema: each column takes the next id,
// then the fields nested in its type take the following ones, depth first.
// The server rejects a schema whose column and nested field ids are not all
// unique, so the ids in s (Column.ID, HighestFieldID) are ignored.
func MarshalSchemaJSON(s Schema) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	version := 1
	sj := &schemaJSON{
		Version:              &version,
		Columns:              make([]columnJSON, len(s.Columns)),
		PrimaryKey:           s.PrimaryKey,
		AutoIncrementColumns: s.AutoIncrementColumns,
	}
	next := -1
	for i, c := range s.Columns {
		next++
		id := next
		cj := columnJSON{Name: c.Name, DataType: dataTypeToJSON(c.Type, &next), ID: &id}
		if c.Comment != "" {
			comment := c.Comment
			cj.Comment = &comment
		}
		if c.AggFunction != nil {
			cj.AggFunction = &aggFunctionJSON{Type: c.AggFunction.Type, Parameters: c.AggFunction.Parameters}
		}
		sj.Columns[i] = cj
	}
	sj.HighestFieldID = &next
	return json.Marshal(sj)
}

// MarshalDataTypeJSON encodes one data type the way Fluss's DataTypeJsonSerde
// does.
func MarshalDataTypeJSON(t DataType) ([]byte, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	next := -1
	return json.Marshal(dataTypeToJSON(t, &next))
}

// dataTypeToJSON encodes t; ROW fields take ids from *next (pre-incremented),
// in the order Fluss's ReassignFieldId visits them.
func dataTypeToJSON(t DataType, next *int) *dataTypeJSON {
	tj := &dataTypeJSON{Type: jsonRootNames[t.Root]}
	if !t.Nullable {
		f := false
		tj.Nullable = &f
	}
	intp := func(v int) *int { return &v }
	switch t.Root {
	case Char, Binary:
		tj.Length = intp(t.Length)
	case Decimal:
		tj.Precision, tj.Scale = intp(t.Precision), intp(t.Scale)
	case Time, TimestampNTZ, TimestampLTZ:
		tj.Precision = intp(t.Precision)
	case Array:
		tj.Element = dataTypeToJSON(*t.Element, next)
	case Map:
		tj.Key = dataTypeToJSON(*t.Key, next)
		tj.Value = dataTypeToJSON(*t.Value, next)
	case Row:
		tj.Fields = make([]fieldJSON, len(t.Fields))
		for i, f := range t.Fields {
			*next++
			id := *next
			tj.Fields[i] = fieldJSON{Name: f.Name, FieldType: dataTypeToJSON(f.Type, next), FieldID: &id}
		}
	}
	return tj
}
