package route

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/bucketing"
	"github.com/ferrygw/ferry/services/fluss/kvbatch"
	"github.com/ferrygw/ferry/services/fluss/logbatch"
	"github.com/ferrygw/ferry/services/fluss/types"
	"github.com/ferrygw/ferry/transcodesvc/internal/convert"
	"github.com/ferrygw/ferry/transcodesvc/internal/kafkabatch"
)

func col(name string, root catalogv1.TypeRoot, nullable bool) *catalogv1.Field {
	return &catalogv1.Field{Name: name, Type: &catalogv1.DataType{Root: root, Nullable: nullable}}
}

const (
	tBig    = catalogv1.TypeRoot_TYPE_ROOT_BIGINT
	tString = catalogv1.TypeRoot_TYPE_ROOT_STRING
	tInt    = catalogv1.TypeRoot_TYPE_ROOT_INTEGER
)

func mapping(buckets int32, cols ...*catalogv1.Field) *catalogv1.TopicMapping {
	return &catalogv1.TopicMapping{Topic: "t", MappingId: "m", PartitionCount: buckets, Columns: cols,
		Kind:    catalogv1.TableKind_TABLE_KIND_LOG,
		Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_JSON, UnknownFields: catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT}}
}

// rec is a test record; a nil value is a tombstone, a nil key no key.
type rec struct{ key, value *string }

func s(v string) *string { return &v }

func batchOf(recs ...rec) *kafkabatch.Batch {
	b := &kafkabatch.Batch{Header: kafkabatch.Header{BaseTimestamp: 1767323045678, RecordCount: int32(len(recs))}}
	for i, r := range recs {
		kr := kafkabatch.Record{OffsetDelta: int32(i)}
		if r.key != nil {
			kr.Key = []byte(*r.key)
		}
		if r.value != nil {
			kr.Value = []byte(*r.value)
		}
		b.Records = append(b.Records, kr)
	}
	return b
}

type fixture struct {
	router       *Router
	plan         *convert.Plan
	values, keys *convert.Converter
}

func compile(t *testing.T, m *catalogv1.TopicMapping, now time.Time) fixture {
	t.Helper()
	p, err := convert.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	if !Needed(m) {
		t.Fatal("mapping needs no router")
	}
	r, err := Compile(m, p)
	if err != nil {
		t.Fatal(err)
	}
	r.now = func() time.Time { return now }
	f := fixture{router: r, plan: p, values: p.NewConverter(memory.DefaultAllocator)}
	if kp := r.KeyPlan(); kp != nil {
		f.keys = kp.NewConverter(memory.DefaultAllocator)
	}
	return f
}

func (f fixture) split(t *testing.T, partition int32, recs ...rec) ([]Piece, *convert.Failure) {
	t.Helper()
	pieces, err := f.router.Split(batchOf(recs...), partition, f.values, f.keys, convert.EncodingIPC)
	if err == nil {
		f.sameAsLogRecords(t, partition, recs, pieces)
		return pieces, nil
	}
	cf, ok := err.(*convert.Failure)
	if !ok {
		t.Fatalf("Split: %v", err)
	}
	return nil, cf
}

// sameAsLogRecords splits the batch again into Fluss records sections and
// checks that each log piece, framed, is the batch built from the rows of
// the same piece as Arrow IPC, and that KV pieces do not change.
func (f fixture) sameAsLogRecords(t *testing.T, partition int32, recs []rec, pieces []Piece) {
	t.Helper()
	logPieces, err := f.router.Split(batchOf(recs...), partition, f.values, f.keys, convert.EncodingLogRecords)
	if err != nil || len(logPieces) != len(pieces) {
		t.Fatalf("split into log records: %d pieces, %v; into IPC: %d pieces", len(logPieces), err, len(pieces))
	}
	opts := logbatch.DefaultOptions(1)
	for i, p := range pieces {
		lp := logPieces[i]
		if lp.PartitionName != p.PartitionName || lp.Bucket != p.Bucket || lp.Records != p.Records || !bytes.Equal(lp.KVRecords, p.KVRecords) || len(lp.ArrowIPC) != 0 {
			t.Fatalf("piece %d: %+v as log records, %+v as IPC", i, lp, p)
		}
		if len(p.ArrowIPC) == 0 {
			continue
		}
		r, err := ipc.NewReader(bytes.NewReader(p.ArrowIPC))
		if err != nil {
			t.Fatal(err)
		}
		if !r.Next() {
			t.Fatal(r.Err())
		}
		opts.Compression = f.plan.LogRecords.Compression
		want, err := logbatch.Build(r.RecordBatch(), opts)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		got, err := logbatch.Frame(nil, lp.LogRecords, int32(lp.Records), opts)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("piece %d: framed log records differ from the IPC rows' batch (%v)", i, err)
		}
	}
}

// ids reads the BIGINT column id of a piece's Arrow IPC.
func ids(t *testing.T, p Piece) []int64 {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(p.ArrowIPC))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var out []int64
	for r.Next() {
		rb := r.RecordBatch()
		c := rb.Column(int(rb.Schema().FieldIndices("id")[0])).(*array.Int64)
		out = append(out, c.Int64Values()...)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// bucketOfID is Fluss's bucket of a BIGINT key, encoded on its own.
func bucketOfID(t *testing.T, id int64, buckets int) int32 {
	t.Helper()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.Append(id)
	arr := b.NewArray()
	rb := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{arr}, 1)
	defer rb.Release()
	enc, err := bucketing.NewKeyEncoder(mustFields(t, col("id", tBig, false)), []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	key, err := enc.Encode(nil, rb, 0)
	if err != nil {
		t.Fatal(err)
	}
	n, err := bucketing.Bucket(key, buckets)
	if err != nil {
		t.Fatal(err)
	}
	return int32(n)
}

func mustFields(t *testing.T, cols ...*catalogv1.Field) []types.Field {
	t.Helper()
	p, err := convert.Compile(mapping(1, cols...))
	if err != nil {
		t.Fatal(err)
	}
	return p.Columns
}

func TestBucketKeyedLogTable(t *testing.T) {
	m := mapping(5, col("id", tBig, false), col("name", tString, true))
	m.BucketKeys = []string{"id"}
	f := compile(t, m, time.Now())
	var recs []rec
	for i := range 200 {
		recs = append(recs, rec{value: s(fmt.Sprintf(`{"id": %d, "name": "n%d"}`, i*7919, i))})
	}
	pieces, fail := f.split(t, 3, recs...)
	if fail != nil {
		t.Fatalf("failure: %v %v", fail.Message, fail.Records)
	}
	seen := map[int32]bool{}
	total, lastFirst := 0, int64(-1)
	for _, p := range pieces {
		if seen[p.Bucket] || p.PartitionName != "" || p.KVRecords != nil {
			t.Fatalf("piece %+v repeats a bucket or is not a log piece", p.Bucket)
		}
		seen[p.Bucket] = true
		got := ids(t, p)
		if len(got) != p.Records {
			t.Fatalf("bucket %d: %d rows, Records %d", p.Bucket, len(got), p.Records)
		}
		// Pieces come in the order of their first row; rows keep Kafka order.
		if got[0] <= lastFirst {
			t.Errorf("bucket %d starts with id %d after a piece that started with %d", p.Bucket, got[0], lastFirst)
		}
		lastFirst = got[0]
		for i, id := range got {
			if want := bucketOfID(t, id, 5); want != p.Bucket {
				t.Errorf("id %d in bucket %d, Fluss puts it in %d", id, p.Bucket, want)
			}
			if i > 0 && id <= got[i-1] {
				t.Errorf("bucket %d: id %d after %d", p.Bucket, id, got[i-1])
			}
		}
		total += len(got)
	}
	if total != 200 || len(pieces) != 5 {
		t.Fatalf("%d rows in %d pieces, want 200 in 5", total, len(pieces))
	}
}

func TestPartitionedLogTable(t *testing.T) {
	m := mapping(4, col("id", tBig, false), col("dt", tString, false))
	m.PartitionKeys = []string{"dt"}
	m.AutoPartitionOptions = map[string]string{"table.auto-partition.enabled": "true", "table.auto-partition.time-unit": "DAY",
		"table.auto-partition.num-retention": "3", "table.auto-partition.time-zone": "UTC"}
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	f := compile(t, m, now)
	pieces, fail := f.split(t, 2,
		rec{value: s(`{"id": 1, "dt": "20261204"}`)},
		rec{value: s(`{"id": 2, "dt": "20261203"}`)},
		rec{value: s(`{"id": 3, "dt": "20261204"}`)},
		rec{value: s(`{"id": 4, "dt": "20261202"}`)},
	)
	if fail != nil {
		t.Fatalf("failure: %v %v", fail.Message, fail.Records)
	}
	want := []struct {
		name string
		ids  []int64
	}{{"20261204", []int64{1, 3}}, {"20261203", []int64{2}}, {"20261202", []int64{4}}}
	if len(pieces) != len(want) {
		t.Fatalf("%d pieces, want %d", len(pieces), len(want))
	}
	for i, w := range want {
		p := pieces[i]
		// No bucket key: the producer's partition is the bucket.
		if p.PartitionName != w.name || p.Bucket != 2 || fmt.Sprint(ids(t, p)) != fmt.Sprint(w.ids) {
			t.Errorf("piece %d: partition %q bucket %d ids %v, want %q bucket 2 ids %v", i, p.PartitionName, p.Bucket, ids(t, p), w.name, w.ids)
		}
	}

	// A row for a partition the cluster would drop, or one auto-partitioning
	// never makes, fails the whole batch, naming the partition.
	_, fail = f.split(t, 0,
		rec{value: s(`{"id": 1, "dt": "20261204"}`)},
		rec{value: s(`{"id": 2, "dt": "20261101"}`)},
		rec{value: s(`{"id": 3, "dt": "notaday"}`)},
		rec{value: s(`{"id": 4, "dt": "bad name"}`)},
	)
	if fail == nil || len(fail.Records) != 3 {
		t.Fatalf("want a failure listing records 1-3, got %+v", fail)
	}
	for i, frag := range []string{`"20261101"`, `"notaday"`, `bad name`} {
		if r := fail.Records[i]; r.BatchIndex != i+1 || !strings.Contains(r.Message, frag) {
			t.Errorf("record error %d: %+v, want index %d naming %s", i, r, i+1, frag)
		}
	}
}

func pkMapping() *catalogv1.TopicMapping {
	m := mapping(3, col("id", tBig, false), col("name", tString, true), col("v", tInt, true))
	m.Kind = catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY
	m.PrimaryKeys = []string{"id"}
	m.BucketKeys = []string{"id"}
	return m
}

// kvRecords decodes a piece's KV records.
func kvRecords(t *testing.T, p Piece) []kvbatch.Record {
	t.Helper()
	b, err := kvbatch.Frame(nil, p.KVRecords, int32(p.Records), kvbatch.DefaultOptions(1))
	if err != nil {
		t.Fatal(err)
	}
	_, recs, err := kvbatch.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestPrimaryKeyTable(t *testing.T) {
	f := compile(t, pkMapping(), time.Now())
	pieces, fail := f.split(t, 0,
		rec{key: s(`{"id": 5}`), value: s(`{"id": 5, "name": "a", "v": 1}`)},
		rec{value: s(`{"id": 5, "name": "b"}`)}, // no key: the value names the row
		rec{key: s(`{"id": 5}`)},                // tombstone
		rec{key: s(`{"id": 6}`), value: s(`{"id": 6}`)},
	)
	if fail != nil {
		t.Fatalf("failure: %v %v", fail.Message, fail.Records)
	}
	var five, six []kvbatch.Record
	for _, p := range pieces {
		if p.ArrowIPC != nil {
			t.Fatal("a primary-key piece carries Arrow")
		}
		recs := kvRecords(t, p)
		if len(recs) != p.Records {
			t.Fatalf("%d records, Records %d", len(recs), p.Records)
		}
		switch p.Bucket {
		case bucketOfID(t, 5, 3):
			five = append(five, recs...)
		}
		if p.Bucket == bucketOfID(t, 6, 3) {
			six = append(six, recs...)
		}
	}
	if len(five) < 3 {
		t.Fatalf("key 5: %d records in its bucket, want the 3 of it", len(five))
	}
	five = five[:3]
	if five[0].Row == nil || five[1].Row == nil || five[2].Row != nil {
		t.Errorf("key 5: want upsert, upsert, delete; rows nil: %v %v %v", five[0].Row == nil, five[1].Row == nil, five[2].Row == nil)
	}
	if !bytes.Equal(five[0].Key, five[1].Key) || !bytes.Equal(five[0].Key, five[2].Key) {
		t.Error("the upserts and the delete of key 5 carry different KV keys")
	}
	if len(six) == 0 || bytes.Equal(six[len(six)-1].Key, five[0].Key) {
		t.Error("key 6 is missing or has key 5's KV key")
	}
}

func TestPrimaryKeyRefusals(t *testing.T) {
	f := compile(t, pkMapping(), time.Now())
	_, fail := f.split(t, 0,
		rec{key: s(`{"id": 1}`), value: s(`{"id": 1}`)},
		rec{},                                 // tombstone without key
		rec{key: s(`{"id": 2}`)},              // fine
		rec{key: s(`{"id": 4, "name": "x"}`)}, // key with a non-key field
		rec{key: s(`7`)},                      // key not a JSON object
		rec{value: s(`{"name": "no id"}`)},    // value without its primary key
	)
	checkRecordErrors(t, fail, map[int]string{1: "needs a record key", 3: "record key: ", 4: "record key: ", 5: "id"})
	// Placement errors are found once every record converts.
	_, fail = f.split(t, 0,
		rec{key: s(`{"id": 1}`), value: s(`{"id": 1}`)},
		rec{},
		rec{key: s(`{"id": 2}`), value: s(`{"id": 3}`)}, // key and value disagree
	)
	checkRecordErrors(t, fail, map[int]string{1: "needs a record key", 2: "another primary key"})
}

func checkRecordErrors(t *testing.T, fail *convert.Failure, want map[int]string) {
	t.Helper()
	if fail == nil {
		t.Fatal("want a failure")
	}
	got := map[int]string{}
	for _, r := range fail.Records {
		got[r.BatchIndex] = r.Message
	}
	if len(got) != len(want) {
		t.Errorf("record errors %v, want %v", got, want)
	}
	for i, frag := range want {
		if !strings.Contains(got[i], frag) {
			t.Errorf("record %d: %q, want it to mention %q", i, got[i], frag)
		}
	}
}

func TestPartitionedPrimaryKeyTombstones(t *testing.T) {
	m := mapping(2, col("id", tBig, false), col("dt", tString, false), col("name", tString, true))
	m.Kind = catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY
	m.PrimaryKeys = []string{"id", "dt"}
	m.PartitionKeys = []string{"dt"}
	m.BucketKeys = []string{"id"}
	f := compile(t, m, time.Now())
	pieces, fail := f.split(t, 1,
		rec{value: s(`{"id": 1, "dt": "a", "name": "x"}`)},
		rec{key: s(`{"dt": "b", "id": 1}`)},
	)
	if fail != nil {
		t.Fatalf("failure: %v %v", fail.Message, fail.Records)
	}
	if len(pieces) != 2 || pieces[0].PartitionName != "a" || pieces[1].PartitionName != "b" {
		t.Fatalf("pieces %+v, want partition a then b", pieces)
	}
	for _, p := range pieces {
		if want := bucketOfID(t, 1, 2); p.Bucket != want {
			t.Errorf("partition %s: bucket %d, want %d (the bucket key, not the producer's partition)", p.PartitionName, p.Bucket, want)
		}
	}
	if recs := kvRecords(t, pieces[1]); len(recs) != 1 || recs[0].Row != nil {
		t.Errorf("partition b: %+v, want one delete", recs)
	}
	// The KV key is the physical primary key (without the partition key):
	// the same for both partitions.
	if a, b := kvRecords(t, pieces[0])[0].Key, kvRecords(t, pieces[1])[0].Key; !bytes.Equal(a, b) {
		t.Errorf("KV keys %x and %x differ", a, b)
	}
}

func TestKeyColumnPrimaryKey(t *testing.T) {
	m := mapping(2, col("id", tString, false), col("name", tString, true))
	m.Kind = catalogv1.TableKind_TABLE_KIND_PRIMARY_KEY
	m.PrimaryKeys = []string{"id"}
	m.BucketKeys = []string{"id"}
	m.Mapping.KeyColumn = "id"
	f := compile(t, m, time.Now())
	pieces, fail := f.split(t, 0,
		rec{key: s("user-1"), value: s(`{"name": "a"}`)},
		rec{key: s("user-1")},
	)
	if fail != nil {
		t.Fatalf("failure: %v %v", fail.Message, fail.Records)
	}
	if len(pieces) != 1 {
		t.Fatalf("%d pieces, want 1", len(pieces))
	}
	recs := kvRecords(t, pieces[0])
	if len(recs) != 2 || recs[0].Row == nil || recs[1].Row != nil || !bytes.Equal(recs[0].Key, recs[1].Key) {
		t.Fatalf("records %+v, want an upsert and a delete of one key", recs)
	}
	if _, fail := f.split(t, 0, rec{value: s(`{"name": "no key"}`)}); fail == nil {
		t.Error("an upsert without a key was accepted, but the key is the NOT NULL primary key")
	}
}

func TestRetrySplitsTheSame(t *testing.T) {
	m := mapping(7, col("id", tBig, false))
	m.BucketKeys = []string{"id"}
	f := compile(t, m, time.Now())
	var recs []rec
	for i := range 50 {
		recs = append(recs, rec{value: s(fmt.Sprintf(`{"id": %d}`, i))})
	}
	a, _ := f.split(t, 0, recs...)
	b, _ := f.split(t, 0, recs...)
	if len(a) != len(b) {
		t.Fatalf("%d and %d pieces", len(a), len(b))
	}
	for i := range a {
		if a[i].Bucket != b[i].Bucket || !bytes.Equal(a[i].ArrowIPC, b[i].ArrowIPC) {
			t.Fatalf("piece %d differs between two splits of the same batch", i)
		}
	}
}

// BenchmarkSplit splits 1000-row batches: a bucket-keyed log table (8
// pieces, so every record is converted twice) and a primary-key table.
func BenchmarkSplit(b *testing.B) {
	log := mapping(8, col("id", tBig, false), col("name", tString, true), col("v", tInt, true))
	log.BucketKeys = []string{"id"}
	for _, bc := range []struct {
		name string
		m    *catalogv1.TopicMapping
	}{{"bucket-keyed-log", log}, {"primary-key", pkMapping()}} {
		b.Run(bc.name, func(b *testing.B) {
			p, err := convert.Compile(bc.m)
			if err != nil {
				b.Fatal(err)
			}
			r, err := Compile(bc.m, p)
			if err != nil {
				b.Fatal(err)
			}
			values := p.NewConverter(memory.DefaultAllocator)
			var keys *convert.Converter
			if r.KeyPlan() != nil {
				keys = r.KeyPlan().NewConverter(memory.DefaultAllocator)
			}
			var recs []rec
			for i := range 1000 {
				recs = append(recs, rec{key: s(fmt.Sprintf(`{"id": %d}`, i)), value: s(fmt.Sprintf(`{"id": %d, "name": "name-%d", "v": %d}`, i, i, i%100))})
			}
			batch := batchOf(recs...)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := r.Split(batch, 0, values, keys, convert.EncodingIPC); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/record")
		})
	}
}
