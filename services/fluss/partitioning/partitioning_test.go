package partitioning_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ferrygw/ferry/services/fluss/logbatch/goldentest"
	"github.com/ferrygw/ferry/services/fluss/partitioning"
	"github.com/ferrygw/ferry/services/fluss/types"
)

func TestNewGetterRejects(t *testing.T) {
	cols := []types.Field{
		{Name: "s", Type: types.DataType{Root: types.String}},
		{Name: "f", Type: types.DataType{Root: types.Float}},
		{Name: "d", Type: types.DataType{Root: types.Double}},
		{Name: "dec", Type: types.DataType{Root: types.Decimal, Precision: 10, Scale: 2}},
	}
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{nil, "no partition keys"},
		{[]string{"nope"}, "not a column"},
		{[]string{"dec"}, "does not allow"},
		{[]string{"s", "f"}, "named differently"},
		{[]string{"d"}, "named differently"},
	} {
		_, err := partitioning.NewGetter(cols, tc.keys)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("keys %v: error %v, want %q", tc.keys, err, tc.want)
		}
	}
	if _, err := partitioning.NewGetter(cols, []string{"f"}); !errors.Is(err, partitioning.ErrFloatKey) {
		t.Errorf("FLOAT key: %v is not ErrFloatKey", err)
	}
}

func TestAppendNameRejectsNull(t *testing.T) {
	cols := []types.Field{{Name: "s", Type: types.DataType{Root: types.String, Nullable: true}}}
	rec, err := goldentest.Record(memory.NewGoAllocator(), cols, 50, 3, 50)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	g, err := partitioning.NewGetter(cols, []string{"s"})
	if err != nil {
		t.Fatal(err)
	}
	nulls := 0
	for row := range int(rec.NumRows()) {
		_, err := g.AppendName(nil, rec, row)
		if rec.Column(0).IsNull(row) {
			nulls++
			if err == nil || !strings.Contains(err.Error(), "null partition value") {
				t.Errorf("row %d is null, error %v", row, err)
			}
		} else if err != nil {
			t.Errorf("row %d: %v", row, err)
		}
	}
	if nulls == 0 {
		t.Fatal("no null rows generated")
	}
	if _, err := g.AppendName(nil, rec, int(rec.NumRows())); err == nil {
		t.Error("row past the end accepted")
	}
}

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keys    int
		create  bool
		wantErr string
	}{
		{"20240101", 1, true, ""},
		{"a-b_C9$x", 2, true, ""},
		{"__x", 1, false, ""},
		{"__x", 1, true, "reserves"},
		{"", 1, true, "empty"},
		{"..", 1, true, "not allowed"},
		{"a b", 1, true, "characters"},
		{"2024-01-01-00-00-00_5", 1, true, ""},
		{"+10000-01-01-00-00-00_", 1, true, "characters"},
		{strings.Repeat("x", 201), 1, true, "longer than 200"},
		{"a$b", 1, true, "2 values"},
		{"a", 2, true, "1 values"},
		{"a$", 2, true, "empty"},
	} {
		err := partitioning.ValidateName(tc.name, tc.keys, tc.create)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("ValidateName(%q, %d, %v) = %v, want %q", tc.name, tc.keys, tc.create, err, tc.wantErr)
		}
	}
}

func TestParseAutoPartition(t *testing.T) {
	a, err := partitioning.ParseAutoPartition(map[string]string{}, []string{"dt"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Enabled || a.TimeUnit != partitioning.Day || a.NumPreCreate != 2 || a.NumRetention != 7 || a.Key != "dt" || a.ZoneSet || a.Location != time.UTC {
		t.Errorf("defaults: %+v", a)
	}
	a, err = partitioning.ParseAutoPartition(map[string]string{
		partitioning.PropAutoPartitionEnabled:      "TRUE",
		partitioning.PropAutoPartitionKey:          "dt",
		partitioning.PropAutoPartitionTimeUnit:     "hour",
		partitioning.PropAutoPartitionNumPreCreate: "0",
		partitioning.PropAutoPartitionNumRetention: "-1",
		partitioning.PropAutoPartitionTimeZone:     "Asia/Shanghai",
	}, []string{"region", "dt"})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Enabled || a.TimeUnit != partitioning.Hour || a.NumPreCreate != 0 || a.NumRetention != -1 || a.KeyIndex != 1 || a.NumKeys != 2 || !a.ZoneSet || a.Location.String() != "Asia/Shanghai" {
		t.Errorf("set: %+v", a)
	}
	for _, tc := range []struct {
		props map[string]string
		keys  []string
		want  string
	}{
		{map[string]string{partitioning.PropAutoPartitionEnabled: "yes"}, []string{"p"}, "not a boolean"},
		{map[string]string{partitioning.PropAutoPartitionTimeUnit: "WEEK"}, []string{"p"}, "not one of"},
		{map[string]string{partitioning.PropAutoPartitionNumRetention: "seven"}, []string{"p"}, "not an integer"},
		{map[string]string{partitioning.PropAutoPartitionEnabled: "true"}, []string{"a", "b"}, "does not name"},
		{map[string]string{partitioning.PropAutoPartitionEnabled: "true", partitioning.PropAutoPartitionKey: "c"}, []string{"a", "b"}, "does not name"},
	} {
		_, err := partitioning.ParseAutoPartition(tc.props, tc.keys)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.props, err, tc.want)
		}
	}
}

func TestAutoPartitionCheck(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	day := partitioning.AutoPartition{Enabled: true, Key: "dt", NumKeys: 1, TimeUnit: partitioning.Day, NumRetention: 3, Location: time.UTC}
	multi := partitioning.AutoPartition{Enabled: true, Key: "dt", KeyIndex: 1, NumKeys: 2, TimeUnit: partitioning.Month, NumRetention: 1, Location: time.UTC}
	keepAll := day
	keepAll.NumRetention = -1
	off := partitioning.AutoPartition{NumKeys: 1, Location: time.UTC}
	for _, tc := range []struct {
		a    partitioning.AutoPartition
		name string
		want partitioning.Verdict
	}{
		{day, "20261203", partitioning.Live},
		{day, "20261130", partitioning.Live}, // exactly num-retention days back
		{day, "20261129", partitioning.Expired},
		{day, "19700101", partitioning.Expired},
		{day, "20991231", partitioning.Live},
		{day, "20261301", partitioning.Malformed},
		{day, "20260230", partitioning.Malformed},
		{day, "20240229", partitioning.Expired}, // a real leap day
		{day, "2026-12-03", partitioning.Malformed},
		{day, "hello", partitioning.Malformed},
		{day, "hello world", partitioning.Invalid},
		{day, "__20261203", partitioning.Invalid},
		{keepAll, "19700101", partitioning.Live},
		{multi, "eu$202611", partitioning.Live},
		{multi, "eu$202610", partitioning.Expired},
		{multi, "eu$2026-11", partitioning.Malformed},
		{multi, "202612", partitioning.Invalid},
		{off, "anything", partitioning.Live},
		{off, "any thing", partitioning.Invalid},
	} {
		got, err := tc.a.Check(tc.name, now)
		if got != tc.want || (got == partitioning.Live) != (err == nil) {
			t.Errorf("%s %q: %v (%v), want %v", tc.a.TimeUnit, tc.name, got, err, tc.want)
		}
	}
}

func TestTimeUnitValues(t *testing.T) {
	ts := time.Date(2026, 8, 4, 7, 0, 0, 0, time.UTC)
	for u, want := range map[partitioning.TimeUnit]string{
		partitioning.Year: "2026", partitioning.Quarter: "20263", partitioning.Month: "202608",
		partitioning.Day: "20260804", partitioning.Hour: "2026080407",
	} {
		if got := u.FormatTime(ts); got != want {
			t.Errorf("%s: %q, want %q", u, got, want)
		}
		a := partitioning.AutoPartition{Enabled: true, NumKeys: 1, TimeUnit: u, NumRetention: -1, Location: time.UTC}
		if v, err := a.Check(want, ts); v != partitioning.Live {
			t.Errorf("%s: own value %q is %v: %v", u, want, v, err)
		}
	}
	// Java clamps Jan 31 + 1 month to February; Go's AddDate would not.
	a := partitioning.AutoPartition{TimeUnit: partitioning.Month, Location: time.UTC}
	if got := a.PartitionTime(time.Date(2025, 1, 31, 12, 0, 0, 0, time.UTC), 1); got != "202502" {
		t.Errorf("Jan 31 + 1 month: %q", got)
	}
}

func BenchmarkAppendName(b *testing.B) {
	cols := []types.Field{
		{Name: "region", Type: types.DataType{Root: types.String}},
		{Name: "day", Type: types.DataType{Root: types.Date}},
		{Name: "ts", Type: types.DataType{Root: types.TimestampLTZ, Precision: 6}},
	}
	rec, err := goldentest.Record(memory.NewGoAllocator(), cols, 1024, 5, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Release()
	for _, keys := range [][]string{{"region"}, {"region", "day"}, {"ts"}} {
		b.Run(strings.Join(keys, ","), func(b *testing.B) {
			g, err := partitioning.NewGetter(cols, keys)
			if err != nil {
				b.Fatal(err)
			}
			var name []byte
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if name, err = g.AppendName(name[:0], rec, i%1024); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// farDatesRecord holds dates and timestamps outside the golden record's
// range: a negative year (zero-padded with the sign, as Java's %04d), year 0
// (1 BC: year of era 1, as Java's yyyy) and year 10000 ("+", as yyyy).
func farDatesRecord(t *testing.T) ([]types.Field, arrow.RecordBatch) {
	cols := []types.Field{
		{Name: "d", Type: types.DataType{Root: types.Date}},
		{Name: "ts", Type: types.DataType{Root: types.TimestampNTZ, Precision: 3}},
	}
	mem := memory.NewGoAllocator()
	db := array.NewDate32Builder(mem)
	defer db.Release()
	tb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Millisecond})
	defer tb.Release()
	for _, tc := range []struct{ day, ts time.Time }{
		{time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 1e6, time.UTC)},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 1, 5e8, time.UTC)},
	} {
		db.Append(arrow.Date32(tc.day.Unix() / 86400))
		tb.Append(arrow.Timestamp(tc.ts.UnixMilli()))
	}
	schema, err := types.ArrowSchema(cols)
	if err != nil {
		t.Fatal(err)
	}
	da, ta := db.NewArray(), tb.NewArray()
	defer da.Release()
	defer ta.Release()
	return cols, array.NewRecordBatch(schema, []arrow.Array{da, ta}, 2)
}

func TestAppendValueFarDates(t *testing.T) {
	cols, rec := farDatesRecord(t)
	defer rec.Release()
	g, err := partitioning.NewGetter(cols, []string{"d", "ts"})
	if err != nil {
		t.Fatal(err)
	}
	for row, want := range []string{"-005-01-01$0001-01-01-00-00-00_001", "10000-01-01$+10000-01-01-00-00-01_5"} {
		got, err := g.AppendName(nil, rec, row)
		if err != nil || string(got) != want {
			t.Errorf("row %d: %q (%v), want %q", row, got, err, want)
		}
	}
}
