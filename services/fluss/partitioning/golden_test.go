package partitioning_test

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/logbatch/goldentest"
	"github.com/ferrygw/ferry/services/fluss/partitioning"
	"github.com/ferrygw/ferry/services/fluss/types"
)

// keyColumns are the columns of the all-types table Fluss allows as
// partition keys, but FLOAT and DOUBLE (ErrFloatKey), NOT NULL since partition values cannot be null.
func keyColumns() []types.Field {
	var cols []types.Field
	for _, c := range goldentest.AllTypesColumns() {
		if !partitioning.SupportsKeyType(c.Type.Root) || c.Type.Root == types.Float || c.Type.Root == types.Double {
			continue
		}
		c.Type.Nullable = false
		cols = append(cols, c)
	}
	return cols
}

// TestGoldenAgainstJavaPartitionGetter compares partition names with Fluss's
// PartitionGetter for the same rows, for every partition key type and for
// keys spanning several columns.
func TestGoldenAgainstJavaPartitionGetter(t *testing.T) {
	gen := goldentest.New(t)
	cols := keyColumns()
	rec, err := goldentest.Record(memory.NewGoAllocator(), cols, 300, 41, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()

	farCols, farRec := farDatesRecord(t)
	defer farRec.Release()

	type keyCase struct {
		cols []types.Field
		rec  arrow.RecordBatch
		keys []string
	}
	var cases []keyCase
	for _, c := range cols {
		cases = append(cases, keyCase{cols, rec, []string{c.Name}})
	}
	cases = append(cases,
		keyCase{cols, rec, []string{"c_string", "c_date", "c_bool"}},
		keyCase{cols, rec, []string{"c_ts9", "c_bigint", "c_bytes", "c_time6"}},
		keyCase{farCols, farRec, []string{"d", "ts"}},
	)
	reqs := make([]goldentest.Request, len(cases))
	for i, c := range cases {
		reqs[i] = goldentest.PartitionRequest(t, c.cols, c.keys, c.rec)
	}
	answers := gen.Run(t, reqs...)
	for i, c := range cases {
		t.Run(strings.Join(c.keys, ","), func(t *testing.T) {
			want := goldentest.PartitionNames(t, answers[i])
			if len(want) != int(c.rec.NumRows()) {
				t.Fatalf("Java named %d rows of %d", len(want), c.rec.NumRows())
			}
			g, err := partitioning.NewGetter(c.cols, c.keys)
			if err != nil {
				t.Fatal(err)
			}
			var name []byte
			for row, w := range want {
				name, err = g.AppendName(name[:0], c.rec, row)
				if err != nil {
					t.Fatal(err)
				}
				if string(name) != w {
					t.Errorf("row %d: %q, Java %q", row, name, w)
				}
			}
		})
	}
}

// TestGoldenAgainstJavaAutoPartitionTime compares the auto-partition values
// of every time unit with PartitionUtils.generateAutoPartitionTime, across
// month ends, leap days, year ends and DST changes, in several zones.
func TestGoldenAgainstJavaAutoPartitionTime(t *testing.T) {
	gen := goldentest.New(t)
	zones := []string{"UTC", "Asia/Shanghai", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "GMT+05:30", "GMT-8", "No/Such_Zone"}
	nows := []time.Time{
		time.Date(2024, 1, 31, 23, 30, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(2023, 12, 31, 22, 59, 59, 999e6, time.UTC),
		time.Date(2024, 3, 10, 6, 45, 0, 0, time.UTC),  // US DST starts
		time.Date(2024, 10, 27, 0, 30, 0, 0, time.UTC), // EU DST ends
		time.Date(2026, 5, 31, 16, 0, 0, 0, time.UTC),
	}
	offsets := []int{-400, -37, -13, -7, -3, -1, 0, 1, 2, 3, 11, 25, 49}
	units := []partitioning.TimeUnit{partitioning.Year, partitioning.Quarter, partitioning.Month, partitioning.Day, partitioning.Hour}
	type autoCase struct {
		a   partitioning.AutoPartition
		now time.Time
	}
	var cases []autoCase
	var reqs []goldentest.Request
	for _, z := range zones {
		a, err := partitioning.ParseAutoPartition(map[string]string{partitioning.PropAutoPartitionTimeZone: z}, []string{"p"})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range units {
			a.TimeUnit = u
			for _, now := range nows {
				cases = append(cases, autoCase{a, now})
				reqs = append(reqs, goldentest.AutoTimeRequest(string(u), z, now, offsets))
			}
		}
	}
	answers := gen.Run(t, reqs...)
	for i, c := range cases {
		want := strings.Fields(answers[i])
		for j, off := range offsets {
			if got := c.a.PartitionTime(c.now, off); got != want[j] {
				t.Errorf("%s %s at %s offset %d: %q, Java %q", c.a.Location, c.a.TimeUnit, c.now.Format(time.RFC3339), off, got, want[j])
			}
		}
	}
	t.Logf("compared %d auto-partition values", len(cases)*len(offsets))
}
