package bucketing_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/bucketing"
	"github.com/ferrygw/ferry/services/fluss/logbatch/goldentest"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// keyColumns are the scalar columns of the all-types table, NOT NULL since
// bucket keys cannot be null.
func keyColumns() []types.Field {
	var cols []types.Field
	for _, c := range goldentest.AllTypesColumns() {
		switch c.Type.Root {
		case types.Array, types.Map, types.Row:
			continue
		}
		c.Type.Nullable = false
		cols = append(cols, c)
	}
	return cols
}

// TestGoldenAgainstJavaBucketing compares key bytes and buckets with Fluss's
// CompactedKeyEncoder and FlussBucketingFunction for the same rows.
func TestGoldenAgainstJavaBucketing(t *testing.T) {
	gen := goldentest.New(t)
	cols := keyColumns()
	rec, err := goldentest.Record(memory.NewGoAllocator(), cols, 200, 99, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	type keyCase struct {
		keys    []string
		buckets int
	}
	var cases []keyCase
	for i, c := range cols {
		cases = append(cases, keyCase{[]string{c.Name}, []int{1, 3, 7, 16, 128}[i%5]})
	}
	cases = append(cases,
		keyCase{[]string{"c_string", "c_bigint"}, 10},
		keyCase{[]string{"c_int", "c_dec_38_10", "c_ts9", "c_bytes"}, 33},
	)
	reqs := make([]goldentest.Request, len(cases))
	for i, c := range cases {
		reqs[i] = goldentest.BucketRequest(t, cols, c.keys, c.buckets, rec)
	}
	answers := gen.Run(t, reqs...)
	for i, c := range cases {
		t.Run(fmt.Sprintf("%v/%d", c.keys, c.buckets), func(t *testing.T) {
			want := goldentest.KeyBuckets(t, answers[i])
			enc, err := bucketing.NewKeyEncoder(cols, c.keys)
			if err != nil {
				t.Fatal(err)
			}
			var key []byte
			for row, w := range want {
				key, err = enc.Encode(key[:0], rec, row)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(key, w.Key) {
					t.Fatalf("row %d: key %x, Java %x", row, key, w.Key)
				}
				b, err := bucketing.Bucket(key, c.buckets)
				if err != nil {
					t.Fatal(err)
				}
				if b != w.Bucket {
					t.Fatalf("row %d: bucket %d, Java %d", row, b, w.Bucket)
				}
			}
		})
	}
}
