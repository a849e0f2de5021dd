package convert

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/arrowmem"
	"github.com/ferrygw/ferry/transcodesvc/internal/kafkabatch"
)

// flatRows are n values of flatMapping's fast shape, with nulls in every
// nullable column now and then and strings of growing length (so the
// string columns outgrow their first guess).
func flatRows(n int) [][]byte {
	var out [][]byte
	for i := range n {
		v := strings.NewReplacer(
			`"id":7`, fmt.Sprintf(`"id":%d`, i),
			`"s":"héllo wörld"`, fmt.Sprintf(`"s":"%s"`, strings.Repeat("x", i*7)),
			`"ok":true`, fmt.Sprintf(`"ok":%t`, i%3 == 0),
			`"dec":"12.5"`, fmt.Sprintf(`"dec":"-%d.5"`, i),
		).Replace(flatRow)
		if i%4 == 1 {
			for _, col := range []string{"i8", "i16", "i32", "f32", "f64", "ok", "dec", "wide", "s", "c", "b", "day", "at", "local"} {
				v = nullField(v, col)
			}
		}
		out = append(out, []byte(v))
	}
	return out
}

// nullField replaces the value of field name in the compact object v with
// null.
func nullField(v, name string) string {
	start := strings.Index(v, `"`+name+`":`) + len(name) + 3
	end := start
	for depth, inStr := 0, false; ; end++ {
		c := v[end]
		switch {
		case inStr && c == '"':
			inStr = false
		case inStr:
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case (c == ',' || c == '}') && depth == 0:
			return v[:start] + "null" + v[end:]
		}
	}
}

// The fast decoder's own columns give the batch the builders would, in both
// encodings, whether every value has the fast shape or one does not (then
// the rows before it move to the builders), and the arrays handed over stay
// valid while later batches are converted.
func TestFastColumnsMatchBuilders(t *testing.T) {
	m := flatMapping()
	m.ArrowCompression = catalogv1.ArrowCompression_ARROW_COMPRESSION_LZ4_FRAME
	p := mustCompile(t, m)
	const n = 40
	notFast := func(v []byte) []byte { return bytes.Replace(v, []byte(`{"id"`), []byte(`{ "id"`), 1) }
	fast := p.NewConverter(&arrowmem.Pool{})
	generic := p.NewConverter(memory.DefaultAllocator)
	generic.fast = nil
	var kept []struct {
		ipc []byte
		rec func() []byte
	}
	for _, at := range []int{-1, 0, 1, 17, n - 1} {
		values := flatRows(n)
		if at >= 0 {
			values[at] = notFast(values[at])
		}
		batch := valuesBatch(values...)
		want, err := generic.ConvertTo(batch, EncodingLogRecords)
		if err != nil {
			t.Fatal(err)
		}
		// Each conversion tries the own columns, whatever the last one
		// found (TestFastColumnsBackOff).
		fresh := func() { fast.fast.skip, fast.fast.misses = 0, 0 }
		fresh()
		got, err := fast.ConvertTo(batch, EncodingLogRecords)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.LogRecords, want.LogRecords) {
			t.Fatalf("value %d not fast: the fast columns' records section differs from the builders'", at)
		}
		rows := n
		if at >= 0 {
			rows = at // the rows the own columns held when the batch left them
		}
		if fast.fast.rows != rows {
			t.Errorf("value %d not fast: %d rows in the own columns, want %d", at, fast.fast.rows, rows)
		}
		// In IPC the buffers' lengths may differ (builders round a
		// bitmap up to their capacity), not the rows.
		wantIPC, err := generic.Convert(batch)
		if err != nil {
			t.Fatal(err)
		}
		fresh()
		gotIPC, err := fast.Convert(batch)
		if err != nil {
			t.Fatal(err)
		}
		sameRows(t, gotIPC.IPC, wantIPC.IPC, p)
		// A record kept while the next batches are converted.
		fresh()
		rec, err := fast.ConvertRecord(batch, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Release()
		kept = append(kept, struct {
			ipc []byte
			rec func() []byte
		}{append([]byte(nil), wantIPC.IPC...), func() []byte {
			b, err := fast.AppendIPC(nil, rec)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}})
	}
	for _, k := range kept {
		sameRows(t, k.rec(), k.ipc, p)
	}
}

// sameRows fails t unless the IPC streams got and want hold equal rows.
func sameRows(t *testing.T, got, want []byte, p *Plan) {
	t.Helper()
	g, w := readIPC(t, got, p.Schema), readIPC(t, want, p.Schema)
	defer g.Release()
	defer w.Release()
	if !array.RecordEqual(g, w) {
		t.Fatalf("rows differ:\n%v\nwant\n%v", g, w)
	}
}

// A batch that fails keeps nothing of its own columns for the next one.
func TestFastColumnsAfterFailedBatch(t *testing.T) {
	p := mustCompile(t, flatMapping())
	c := p.NewConverter(&arrowmem.Pool{})
	values := flatRows(5)
	bad := append([][]byte(nil), values...)
	bad[3] = []byte(`{"id":null}`)
	if _, err := c.Convert(valuesBatch(bad...)); err == nil {
		t.Fatal("a batch with a null id converted")
	}
	got, err := c.ConvertTo(valuesBatch(values...), EncodingLogRecords)
	if err != nil {
		t.Fatal(err)
	}
	g := p.NewConverter(memory.DefaultAllocator)
	g.fast = nil
	want, err := g.ConvertTo(valuesBatch(values...), EncodingLogRecords)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.LogRecords, want.LogRecords) {
		t.Fatal("the batch after a failed one differs from the builders'")
	}
}

// Dates read after one of the same month are counted from it: every day
// of four years (a leap year among them) in one batch, in order and
// shuffled, and days a month does not have, give the generic decoder's
// answer.
func TestFastDatesAfterTheLastOne(t *testing.T) {
	p := mustCompile(t, jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT,
		fld("d", tDate(false)), fld("at", tLTZ(3, false))))
	var values [][]byte
	for day := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC); day.Year() < 2027; day = day.AddDate(0, 0, 1) {
		values = append(values, fmt.Appendf(nil, `{"d":"%s","at":"%sT01:02:03.456Z"}`, day.Format("2006-01-02"), day.Format("2006-01-02")))
	}
	shuffled := append([][]byte(nil), values...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	bad := func(d string) [][]byte {
		return [][]byte{[]byte(`{"d":"2023-02-27","at":0}`), []byte(`{"d":"2023-02-28","at":0}`), fmt.Appendf(nil, `{"d":"%s","at":0}`, d)}
	}
	for name, batch := range map[string][][]byte{
		"in order": values, "shuffled": shuffled,
		"Feb 29 in 2023": bad("2023-02-29"), "Feb 30": bad("2023-02-30"), "day 00": bad("2023-02-00"),
		"day 3x": bad("2023-02-3x"), "Feb 29 in 2024": {[]byte(`{"d":"2024-02-28","at":0}`), []byte(`{"d":"2024-02-29","at":0}`)},
	} {
		answer := func(c *Converter) string {
			out, err := c.ConvertTo(valuesBatch(batch...), EncodingLogRecords)
			if err != nil {
				return "error: " + err.Error()
			}
			return string(out.LogRecords)
		}
		fast := p.NewConverter(memory.DefaultAllocator)
		generic := p.NewConverter(memory.DefaultAllocator)
		generic.fast = nil
		if got, want := answer(fast), answer(generic); got != want {
			t.Errorf("%s: fast %q, generic %q", name, got, want)
		}
	}
}

// Timestamps read after one of the same hour take its milliseconds: a
// batch crossing hours, days and a month in order, and minutes, seconds and
// hours out of range after a valid one, give the generic decoder's answer.
func TestFastTimestampsAfterTheLastOne(t *testing.T) {
	p := mustCompile(t, jsonMapping(catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT,
		fld("at", tLTZ(3, false)), fld("local", tNTZ(6, false))))
	var values [][]byte
	for at := time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC); at.Month() == 11 || at.Day() < 3; at = at.Add(7919 * time.Millisecond * 97) {
		values = append(values, fmt.Appendf(nil, `{"at":"%s","local":"%s"}`,
			at.Format("2006-01-02T15:04:05.000Z"), at.Format("2006-01-02T15:04:05.000")))
	}
	bad := func(at string) [][]byte {
		return [][]byte{[]byte(`{"at":"2026-12-05T23:30:00.123Z","local":"2026-12-05T23:30:00.123"}`),
			fmt.Appendf(nil, `{"at":"%s","local":"2026-12-05T23:30:00.123"}`, at)}
	}
	for name, batch := range map[string][][]byte{
		"in order": values, "minute 60": bad("2026-12-05T23:60:00.123Z"), "second 60": bad("2026-12-05T23:30:60.123Z"),
		"minute 3x": bad("2026-12-05T23:3x:00.123Z"), "hour 24": bad("2026-12-05T24:30:00.123Z"),
		"ms x": bad("2026-12-05T23:30:00.12xZ"), "no zone": bad("2026-12-05T23:30:00.1234"),
	} {
		answer := func(c *Converter) string {
			out, err := c.ConvertTo(valuesBatch(batch...), EncodingLogRecords)
			if err != nil {
				return "error: " + err.Error()
			}
			return string(out.LogRecords)
		}
		fast := p.NewConverter(memory.DefaultAllocator)
		generic := p.NewConverter(memory.DefaultAllocator)
		generic.fast = nil
		if got, want := answer(fast), answer(generic); got != want {
			t.Errorf("%s: fast %q, generic %q", name, got, want)
		}
	}
	if len(values) < 50 {
		t.Fatalf("only %d timestamps", len(values))
	}
}

// A producer whose values never have the fast shape costs no own columns
// for most batches: after each batch that left them at its first value,
// as many batches go without as such batches came in a row (up to 64); a
// batch that fits again starts over.
func TestFastColumnsBackOff(t *testing.T) {
	p := mustCompile(t, flatMapping())
	c := p.NewConverter(&arrowmem.Pool{})
	spaced := valuesBatch([]byte(strings.ReplaceAll(flatRow, `":`, `": `)))
	compact := valuesBatch([]byte(flatRow))
	convert := func(b *kafkabatch.Batch) (columnar bool) {
		rec, err := c.ConvertRecord(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec.Release()
		return c.fast.rows > 0
	}
	var tried []bool
	for range 10 {
		tried = append(tried, c.fast.skip == 0)
		convert(spaced)
	}
	// Tried at batches 0, 2, 5 and 9 (skipping 1, 2, 3 after each miss).
	want := []bool{true, false, true, false, false, true, false, false, false, true}
	if fmt.Sprint(tried) != fmt.Sprint(want) {
		t.Fatalf("own columns tried %v, want %v", tried, want)
	}
	for c.fast.skip > 0 {
		convert(compact) // through the builders, still right
	}
	if !convert(compact) || c.fast.misses != 0 {
		t.Fatal("a fitting batch after the skipped ones did not use the own columns and start over")
	}
}
