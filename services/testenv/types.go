package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
)

// TableSpec is the table flusshelper create-table builds. Types use Fluss's SQL-like syntax:
// "BIGINT", "STRING", "DECIMAL(10, 2)", "TIMESTAMP(6)", "TIMESTAMP_LTZ(3)", "BYTES",
// "ARRAY<INT>", "MAP<STRING, BIGINT>", "ROW<a INT, b STRING>", with optional "NOT NULL".
type TableSpec struct {
	Database         string            `json:"database"`
	Table            string            `json:"table"`
	Columns          []Column          `json:"columns"`
	PrimaryKey       []string          `json:"primary_key,omitempty"`
	PartitionKeys    []string          `json:"partition_keys,omitempty"`
	BucketCount      int               `json:"bucket_count,omitempty"`
	BucketKeys       []string          `json:"bucket_keys,omitempty"`
	Properties       map[string]string `json:"properties,omitempty"`
	CustomProperties map[string]string `json:"custom_properties,omitempty"`
	Comment          string            `json:"comment,omitempty"`
	IgnoreIfExists   bool              `json:"ignore_if_exists,omitempty"`
}

// Column is one column of a TableSpec. Nullable nil keeps what Type says.
type Column struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable *bool  `json:"nullable,omitempty"`
	Comment  string `json:"comment,omitempty"`
}

// NotNull is a convenience for Column.Nullable.
func NotNull() *bool { f := false; return &f }

// TableInfo is what Fluss reports about a table.
type TableInfo struct {
	Database         string            `json:"database"`
	Table            string            `json:"table"`
	TableID          int64             `json:"table_id"`
	SchemaID         int32             `json:"schema_id"`
	BucketCount      int32             `json:"bucket_count"`
	Columns          []ColumnInfo      `json:"columns"`
	PrimaryKey       []string          `json:"primary_key"`
	BucketKeys       []string          `json:"bucket_keys"`
	PartitionKeys    []string          `json:"partition_keys"`
	Properties       map[string]string `json:"properties"`
	CustomProperties map[string]string `json:"custom_properties"`
}

// ColumnInfo is one column as Fluss stores it.
type ColumnInfo struct {
	Name     string `json:"name"`
	Type     string `json:"type"` // Fluss's serializable type string, e.g. "BIGINT NOT NULL"
	Nullable bool   `json:"nullable"`
	ID       int32  `json:"id"`
}

// ScanRow is one log record read by flusshelper scan.
//
// Row holds the columns in flusshelper's lossless JSON form, decoded with json.Number for every
// number: integers and floats are json.Number (NaN/Infinity as strings); DECIMAL is a string with
// exactly the column's scale ("12.30"); BYTES/BINARY are base64 strings; DATE "2024-02-29";
// TIME "12:34:56.789"; TIMESTAMP(p) "2024-01-02T03:04:05.123456000" (always 9 fraction digits);
// TIMESTAMP_LTZ(p) the same in UTC with a "Z"; ARRAY []any; MAP []any of [key, value] pairs;
// ROW map[string]any; NULL nil.
type ScanRow struct {
	PartitionID *int64         `json:"partition_id,omitempty"`
	Bucket      int32          `json:"bucket"`
	Offset      int64          `json:"offset"`
	Timestamp   int64          `json:"timestamp"`
	ChangeType  string         `json:"change_type"`
	Row         map[string]any `json:"row"`
}

// DecodeScan decodes flusshelper scan output (one JSON object per line).
func DecodeScan(out []byte) ([]ScanRow, error) {
	var rows []ScanRow
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		var r ScanRow
		if err := dec.Decode(&r); err != nil {
			return rows, fmt.Errorf("flusshelper scan: line %d: %w", n, err)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return rows, fmt.Errorf("flusshelper scan: %w", err)
	}
	return rows, nil
}
