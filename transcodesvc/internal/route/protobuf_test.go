package route

import (
	"bytes"
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	schemav1 "github.com/ferrygw/ferry/services/api/gen/ferry/schema/v1"
	"github.com/ferrygw/ferry/services/protoschema"
	"github.com/ferrygw/ferry/transcodesvc/internal/schemas"
)

// TestPrimaryKeyTableProtobuf: Protobuf values upsert the rows of a
// primary-key table, the same KV rows as the equal JSON values, and a
// tombstone with a JSON key deletes one; a record framed with an unknown id
// fails its batch.
func TestPrimaryKeyTableProtobuf(t *testing.T) {
	fd, err := protoschema.Registered(context.Background(), &schemav1.Schema{Id: 3, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF,
		Text: `syntax = "proto3"; message Row { int64 id = 1; optional string name = 2; optional int32 v = 3; }`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := pkMapping()
	m.Mapping = &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_PROTOBUF}
	f := compile(t, m, time.Now())
	f.values.UseSchemas(map[int32]*schemas.Schema{3: {ID: 3, Type: schemav1.SchemaType_SCHEMA_TYPE_PROTOBUF, Proto: fd}})
	value := func(id int64, name string) *string {
		b := append(schemas.AppendFrame(nil, 3), 0)
		b = protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), uint64(id))
		b = protowire.AppendString(protowire.AppendTag(b, 2, protowire.BytesType), name)
		return s(string(b))
	}
	recs := []rec{
		{key: s(`{"id": 5}`), value: value(5, "a")},
		{value: value(5, "b")},
		{key: s(`{"id": 5}`)}, // tombstone
		{value: value(6, "c")},
	}
	pieces, fail := f.split(t, 0, recs...)
	if fail != nil {
		t.Fatalf("failure: %v %v", fail.Message, fail.Records)
	}
	jf := compile(t, pkMapping(), time.Now())
	jsonPieces, fail := jf.split(t, 0,
		rec{key: s(`{"id": 5}`), value: s(`{"id": 5, "name": "a"}`)},
		rec{value: s(`{"id": 5, "name": "b"}`)},
		rec{key: s(`{"id": 5}`)},
		rec{value: s(`{"id": 6, "name": "c"}`)},
	)
	if fail != nil {
		t.Fatalf("JSON failure: %v %v", fail.Message, fail.Records)
	}
	if len(pieces) != len(jsonPieces) {
		t.Fatalf("%d pieces, JSON gives %d", len(pieces), len(jsonPieces))
	}
	rows := 0
	for i, p := range pieces {
		got, want := kvRecords(t, p), kvRecords(t, jsonPieces[i])
		if p.Bucket != jsonPieces[i].Bucket || len(got) != len(want) {
			t.Fatalf("piece %d: bucket %d with %d records, JSON: bucket %d with %d", i, p.Bucket, len(got), jsonPieces[i].Bucket, len(want))
		}
		for j := range got {
			if !bytes.Equal(got[j].Key, want[j].Key) || !bytes.Equal(got[j].Row, want[j].Row) || (got[j].Row == nil) != (want[j].Row == nil) {
				t.Errorf("piece %d record %d: key %x row %x, JSON: key %x row %x", i, j, got[j].Key, got[j].Row, want[j].Key, want[j].Row)
			}
			rows++
		}
	}
	if rows != len(recs) {
		t.Fatalf("%d KV records, want %d", rows, len(recs))
	}

	unknown := append(schemas.AppendFrame(nil, 99), 0, 8, 7)
	if _, fail := f.split(t, 0, rec{value: value(7, "d")}, rec{value: s(string(unknown))}); fail == nil ||
		len(fail.Records) != 1 || fail.Records[0].BatchIndex != 1 {
		t.Fatalf("want record 1 refused for its unknown id, got %+v", fail)
	}
}
