package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestJavaRoundTrip writes rows of every Fluss type with the Java AppendWriter and reads them
// back with the Java LogScanner: the lossless JSON form tests rely on must survive both ways.
func TestJavaRoundTrip(t *testing.T) {
	f := Fluss(t)
	db := f.NewDatabase(t, "testenv_rt")
	spec := TableSpec{
		Database: db,
		Table:    "all_types",
		Columns: []Column{
			{Name: "id", Type: "BIGINT", Nullable: NotNull()},
			{Name: "b", Type: "BOOLEAN"},
			{Name: "i8", Type: "TINYINT"},
			{Name: "i16", Type: "SMALLINT"},
			{Name: "i32", Type: "INT"},
			{Name: "f32", Type: "FLOAT"},
			{Name: "f64", Type: "DOUBLE"},
			{Name: "c", Type: "CHAR(3)"},
			{Name: "s", Type: "STRING"},
			{Name: "bin", Type: "BINARY(2)"},
			{Name: "bytes", Type: "BYTES"},
			{Name: "dec_small", Type: "DECIMAL(10, 2)"},
			{Name: "dec_big", Type: "DECIMAL(38, 10)"},
			{Name: "d", Type: "DATE"},
			{Name: "tm", Type: "TIME(3)"},
			{Name: "ts3", Type: "TIMESTAMP(3)"},
			{Name: "ts9", Type: "TIMESTAMP(9)"},
			{Name: "ltz6", Type: "TIMESTAMP_LTZ(6)"},
			{Name: "arr", Type: "ARRAY<INT>"},
			{Name: "m", Type: "MAP<STRING, DECIMAL(5, 1)>"},
			{Name: "r", Type: "ROW<x INT, y ARRAY<STRING>>"},
		},
		BucketCount: 3,
		BucketKeys:  []string{"id"},
		Properties:  map[string]string{"table.log.arrow.compression.type": "NONE"},
	}
	info := f.NewTable(t, spec)
	if info.BucketCount != 3 || len(info.Columns) != len(spec.Columns) || info.Columns[0].Type != "BIGINT NOT NULL" {
		t.Fatalf("table info = %+v", info)
	}
	if got := info.Properties["table.log.arrow.compression.type"]; got != "NONE" {
		t.Errorf("compression property = %q, want NONE", got)
	}

	full := map[string]any{
		"id": 1, "b": true, "i8": -128, "i16": 32767, "i32": -2147483648,
		"f32": 1.5, "f64": "NaN", "c": "abc", "s": "héllo, 世界", "bin": "AAE=", "bytes": "",
		"dec_small": "-12345678.90", "dec_big": "1234567890123456789012345678.0123456789",
		"d": "2024-02-29", "tm": "23:59:59.999", "ts3": "1969-12-31T23:59:59.999",
		"ts9": "2024-01-02T03:04:05.123456789", "ltz6": "2024-01-02T03:04:05.123456+02:00",
		"arr": []any{1, nil, -3}, "m": [][]any{{"a", "1.5"}, {"b", nil}},
		"r": map[string]any{"x": 7, "y": []any{"p", nil}},
	}
	// Values as the helper prints them: canonical decimals, 9-digit timestamps, UTC instants.
	wantFull := map[string]any{
		"id": json.Number("1"), "b": true, "i8": json.Number("-128"), "i16": json.Number("32767"), "i32": json.Number("-2147483648"),
		"f32": json.Number("1.5"), "f64": "NaN", "c": "abc", "s": "héllo, 世界", "bin": "AAE=", "bytes": "",
		"dec_small": "-12345678.90", "dec_big": "1234567890123456789012345678.0123456789",
		"d": "2024-02-29", "tm": "23:59:59.999", "ts3": "1969-12-31T23:59:59.999000000",
		"ts9": "2024-01-02T03:04:05.123456789", "ltz6": "2024-01-02T01:04:05.123456000Z",
		"arr": []any{json.Number("1"), nil, json.Number("-3")}, "m": []any{[]any{"a", "1.5"}, []any{"b", nil}},
		"r": map[string]any{"x": json.Number("7"), "y": []any{"p", nil}},
	}
	var rows []map[string]any
	wantRows := map[string]map[string]any{}
	rows = append(rows, full)
	wantRows["1"] = wantFull
	for _, id := range []string{"2", "3", "4", "5", "9223372036854775807"} {
		rows = append(rows, map[string]any{"id": json.Number(id)})
		nulls := map[string]any{}
		for _, c := range spec.Columns {
			nulls[c.Name] = nil
		}
		nulls["id"] = json.Number(id)
		wantRows[id] = nulls
	}
	res := f.Write(t, db, spec.Table, rows)
	if res.Rows != int64(len(rows)) {
		t.Fatalf("wrote %d rows, want %d", res.Rows, len(rows))
	}

	got := f.Scan(t, db, spec.Table, ScanOptions{Expect: len(rows), Timeout: 30 * time.Second})
	if len(got) != len(rows) {
		t.Fatalf("scanned %d rows, want %d", len(got), len(rows))
	}
	offsets := map[int32][]int64{}
	for _, r := range got {
		id := string(r.Row["id"].(json.Number))
		want, ok := wantRows[id]
		if !ok {
			t.Errorf("unexpected row id %s", id)
			continue
		}
		delete(wantRows, id)
		if !reflect.DeepEqual(r.Row, want) {
			for k := range want {
				if !reflect.DeepEqual(r.Row[k], want[k]) {
					t.Errorf("row %s column %s = %#v, want %#v", id, k, r.Row[k], want[k])
				}
			}
		}
		if r.ChangeType != "+A" {
			t.Errorf("row %s change type %q, want +A", id, r.ChangeType)
		}
		offsets[r.Bucket] = append(offsets[r.Bucket], r.Offset)
	}
	// Offsets in a bucket are dense from 0: nothing lost or duplicated.
	for b, offs := range offsets {
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		for i, o := range offs {
			if o != int64(i) {
				t.Errorf("bucket %d offsets %v, want 0..%d", b, offs, len(offs)-1)
				break
			}
		}
	}

	// Without --expect the scan ends at the end offsets: the same rows, no waiting.
	again := f.Scan(t, db, spec.Table, ScanOptions{Timeout: 30 * time.Second})
	if len(again) != len(rows) {
		t.Errorf("end-offset scan read %d rows, want %d", len(again), len(rows))
	}
	tables, err := f.Helper.ListTables(context.Background(), db)
	if err != nil || !reflect.DeepEqual(tables, []string{spec.Table}) {
		t.Errorf("ListTables = %v, %v", tables, err)
	}
}

// TestJavaWriterRejectsBadRows checks the reference writer refuses values it would otherwise
// change (rounding, truncation) or that do not fit, before writing anything.
func TestJavaWriterRejectsBadRows(t *testing.T) {
	f := Fluss(t)
	db := f.NewDatabase(t, "testenv_bad")
	spec := TableSpec{Database: db, Table: "t", Columns: []Column{
		{Name: "id", Type: "INT NOT NULL"}, {Name: "d", Type: "DECIMAL(4, 2)"}, {Name: "ts", Type: "TIMESTAMP(3)"},
	}}
	f.NewTable(t, spec)
	tests := []struct {
		name string
		row  map[string]any
		want string
	}{
		{"null in NOT NULL", map[string]any{"id": nil}, "NULL for NOT NULL"},
		{"decimal needs rounding", map[string]any{"id": 1, "d": "1.234"}, "fraction digits"},
		{"decimal overflow", map[string]any{"id": 1, "d": "123.4"}, "overflows"},
		{"timestamp too precise", map[string]any{"id": 1, "ts": "2024-01-01T00:00:00.0001"}, "fraction digits"},
		{"int out of range", map[string]any{"id": 2147483648}, "out of range"},
		{"unknown column", map[string]any{"id": 1, "nope": 1}, `unknown column "nope"`},
	}
	// Each case is a JVM start; run them side by side. The scan below runs after all of them:
	// t.Run of a group waits for its parallel subtests.
	t.Run("cases", func(t *testing.T) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, err := f.Helper.Write(ctx, db, spec.Table, []map[string]any{tc.row}, WriteOptions{})
				var he *HelperError
				if !errors.As(err, &he) || !strings.Contains(he.Message, tc.want) {
					t.Fatalf("err = %v, want a helper error containing %q", err, tc.want)
				}
			})
		}
	})
	if rows := f.Scan(t, db, spec.Table, ScanOptions{Timeout: 20 * time.Second}); len(rows) != 0 {
		t.Errorf("rejected writes left %d rows", len(rows))
	}
}

// TestScanReadsToEndOffsets: without Expect a scan must read every bucket up to the end offsets
// it saw at the start, across many polls (the Java scanner returns at most 500 records a poll).
func TestScanReadsToEndOffsets(t *testing.T) {
	f := Fluss(t)
	db := f.NewDatabase(t, "testenv_end")
	spec := TableSpec{Database: db, Table: "t", BucketCount: 2, Columns: []Column{{Name: "n", Type: "INT"}}}
	f.NewTable(t, spec)
	const n = 1700
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := f.Helper.Write(ctx, db, spec.Table, []map[string]any{{"n": 42}}, WriteOptions{Repeat: n})
	if err != nil || res.Rows != n {
		t.Fatalf("write = %+v, %v", res, err)
	}
	rows := f.Scan(t, db, spec.Table, ScanOptions{Timeout: time.Minute})
	if len(rows) != n {
		t.Fatalf("scan read %d rows, want %d", len(rows), n)
	}
	seen := map[int32]map[int64]bool{}
	for _, r := range rows {
		if seen[r.Bucket] == nil {
			seen[r.Bucket] = map[int64]bool{}
		}
		if seen[r.Bucket][r.Offset] {
			t.Fatalf("bucket %d offset %d read twice", r.Bucket, r.Offset)
		}
		seen[r.Bucket][r.Offset] = true
		if r.Row["n"] != json.Number("42") {
			t.Fatalf("row = %v", r.Row)
		}
	}
}
