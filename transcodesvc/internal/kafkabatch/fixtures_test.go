package kafkabatch

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Fixtures are record batches produced by real Kafka clients into a capture
// broker (capture_test.go). Regenerate them with
//
//	go test ./internal/kafkabatch -run TestGenerateFixtures -update
//
// which needs network access to nothing but 127.0.0.1, and kcat on PATH for
// the librdkafka fixtures (without kcat, existing kcat fixtures are kept).
var update = flag.Bool("update", false, "regenerate testdata fixtures from real clients")

const manifestPath = "testdata/fixtures.json"

// Manifest describes every fixture: which client wrote it with which codec,
// and the records it was asked to produce, so decoding can be checked against
// what the client was given rather than against itself.
type Manifest struct {
	// Sets are the record sets clients were asked to produce, by name;
	// several fixtures (one per codec) share one set.
	Sets     map[string][]FixtureRecord `json:"sets"`
	Fixtures []Fixture                  `json:"fixtures"`
}

type Fixture struct {
	File   string `json:"file"`
	Client string `json:"client"`
	Codec  string `json:"codec"`
	Set    string `json:"set"`
	// Records is Sets[Set], filled in by LoadManifest.
	Records []FixtureRecord `json:"-"`
}

func (m *Manifest) add(f Fixture) {
	if m.Sets == nil {
		m.Sets = map[string][]FixtureRecord{}
	}
	m.Sets[f.Set] = f.Records
	m.Fixtures = append(m.Fixtures, f)
}

type FixtureRecord struct {
	Key     *Text           `json:"key"`
	Value   *Text           `json:"value"`
	Headers []FixtureHeader `json:"headers,omitempty"`
	// Timestamp is set when the client was told the timestamp (franz-go);
	// kcat stamps records itself.
	Timestamp *int64 `json:"timestamp,omitempty"`
}

type FixtureHeader struct {
	Key   string  `json:"key"`
	Value *string `json:"value"`
}

func sp(s string) *string { return &s }

func tp(s string) *Text { t := Text(s); return &t }

// Text is record bytes in the manifest: a JSON string when they are UTF-8,
// else {"base64": "..."}, so binary values survive the round trip.
type Text []byte

func (t Text) MarshalJSON() ([]byte, error) {
	if utf8.Valid(t) {
		return json.Marshal(string(t))
	}
	return json.Marshal(map[string][]byte{"base64": t})
}

func (t *Text) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = Text(s)
		return nil
	}
	var m map[string][]byte
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*t = Text(m["base64"])
	return nil
}

// str is the text as a *string, nil when null.
func (t *Text) str() *string {
	if t == nil {
		return nil
	}
	s := string(*t)
	return &s
}

// The "mixed" set: JSON values covering the converter's types, including
// unicode, escapes and nulls. The convert tests decode it against a schema.
var mixedValues = []string{
	`{"id":1,"name":"alpha","price":"12.34","ratio":0.5,"ok":true,"day":"2026-01-02","at":"2026-01-02T03:04:05.678Z","tags":["a","b"],"attrs":{"x":1,"y":-2},"addr":{"city":"Zürich","zip":8001}}`,
	`{"id":2,"name":"ünïcödé ✓ 𝄞","price":0.1,"ratio":-1.25e-3,"ok":false,"day":20000,"at":1767323045678,"tags":[],"attrs":{},"addr":{"city":null,"zip":null}}`,
	`{"id":3}`,
	`{"id":-9223372036854775808,"name":null,"price":null,"ratio":null,"ok":null,"day":null,"at":null,"tags":null,"attrs":null,"addr":null}`,
	`{"name":"esc \"quoted\" \\ \u00e9 \n tab\t","id":9223372036854775807,"tags":["x",null,"\ud834\udd1e"],"addr":{"zip":1}}`,
}

var mixedKeys = []*Text{tp("k1"), nil, tp("k3"), tp(""), tp("ключ")}

func mixedRecords(withTimestamps bool) []FixtureRecord {
	base := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC).UnixMilli()
	out := make([]FixtureRecord, len(mixedValues))
	for i, v := range mixedValues {
		r := FixtureRecord{Key: mixedKeys[i], Value: tp(v)}
		switch i {
		case 0:
			r.Headers = []FixtureHeader{{Key: "trace", Value: sp("abc")}, {Key: "empty", Value: sp("")}}
		case 2:
			r.Headers = []FixtureHeader{{Key: "nullvalue", Value: nil}, {Key: "dup", Value: sp("1")}, {Key: "dup", Value: sp("2")}}
		}
		if withTimestamps {
			ts := base + int64(i)*1500
			r.Timestamp = &ts
		}
		out[i] = r
	}
	return out
}

// The "edge" set: what JSON cannot carry but raw/string topics can.
func edgeRecords() []FixtureRecord {
	ts := int64(1700000000000)
	ts2 := ts - 5
	return []FixtureRecord{
		{Key: nil, Value: nil, Timestamp: &ts},
		{Key: tp("k"), Value: tp(""), Timestamp: &ts2, Headers: []FixtureHeader{{Key: "", Value: nil}}},
		{Key: tp(strings.Repeat("K", 300)), Value: tp(strings.Repeat("v", 5000)), Timestamp: &ts},
		{Key: nil, Value: tp("\x00\x01\xff binary"), Timestamp: &ts},
	}
}

// BenchValue returns the i-th JSON value of the "bench" set, a 10-column
// mixed-type row; the convert benchmarks share its schema.
func benchValue(r *rand.Rand, i int) string {
	names := []string{"alice", "bob", "carol", "dave", "ünïcode", "eve \"quoted\""}
	tags := ""
	for j := 0; j < r.IntN(4); j++ {
		if j > 0 {
			tags += ","
		}
		tags += fmt.Sprintf("%q", names[r.IntN(len(names))])
	}
	day := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(3000))
	at := day.Add(time.Duration(r.Int64N(int64(24 * time.Hour))))
	return fmt.Sprintf(`{"id":%d,"name":%q,"price":"%d.%02d","ratio":%g,"ok":%t,"day":"%s","at":"%s","tags":[%s],"count":%d,"addr":{"city":%q,"zip":%d}}`,
		1000000+i, names[r.IntN(len(names))], r.IntN(100000), r.IntN(100), r.Float64()*1000, r.IntN(2) == 0,
		day.Format("2006-01-02"), at.Format("2006-01-02T15:04:05.000Z"), tags, r.Int32N(1<<20), names[r.IntN(len(names))], r.IntN(99999))
}

func benchRecords() []FixtureRecord {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]FixtureRecord, 1000)
	ts := int64(1767323045678)
	for i := range out {
		k := fmt.Sprintf("key-%d", i)
		out[i] = FixtureRecord{Key: tp(k), Value: tp(benchValue(r, i)), Timestamp: &ts}
	}
	return out
}

var kgoCodecs = map[string]kgo.CompressionCodec{
	"none":   kgo.NoCompression(),
	"gzip":   kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(),
	"lz4":    kgo.Lz4Compression(),
	"zstd":   kgo.ZstdCompression(),
}

var codecOrder = []string{"none", "gzip", "snappy", "lz4", "zstd"}

func TestGenerateFixtures(t *testing.T) {
	if !*update {
		t.Skip("run with -update to regenerate the fixtures from real clients")
	}
	var m Manifest
	for _, codec := range codecOrder {
		for _, set := range []string{"mixed", "edge", "bench"} {
			var recs []FixtureRecord
			switch set {
			case "mixed":
				recs = mixedRecords(true)
			case "edge":
				if codec != "none" && codec != "zstd" {
					continue
				}
				recs = edgeRecords()
			case "bench":
				recs = benchRecords()
			}
			f := Fixture{File: fmt.Sprintf("franz-go-%s-%s.batch", set, codec), Client: "franz-go v1.22.3", Codec: codec, Set: set, Records: recs}
			raw := produceKgo(t, codec, recs)
			writeFixture(t, f, raw)
			m.add(f)
		}
	}
	if _, err := exec.LookPath("kcat"); err == nil {
		for _, codec := range codecOrder {
			recs := mixedRecords(false)
			for i := range recs {
				// kcat sets one header list for every record and cannot send
				// a null key or value.
				recs[i].Headers = []FixtureHeader{{Key: "client", Value: sp("kcat")}}
				if recs[i].Key == nil {
					recs[i].Key = tp("nokey")
				}
			}
			f := Fixture{File: fmt.Sprintf("kcat-mixed-%s.batch", codec), Client: kcatVersion(t), Codec: codec, Set: "mixed-kcat", Records: recs}
			writeFixture(t, f, produceKcat(t, codec, recs))
			m.add(f)
		}
	} else {
		t.Logf("kcat not on PATH: keeping the existing kcat fixtures")
		old, err := LoadManifest("testdata")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range old.Fixtures {
			if strings.HasPrefix(f.File, "kcat-") {
				m.add(f)
			}
		}
	}
	if jv, ok := javaAvailable(t); ok {
		for _, codec := range codecOrder {
			recs := mixedRecords(true)
			for i := range recs {
				// Producer.java sends one header and no null keys.
				recs[i].Headers = []FixtureHeader{{Key: "client", Value: sp("java")}}
				if recs[i].Key == nil {
					recs[i].Key = tp("nokey")
				}
			}
			f := Fixture{File: fmt.Sprintf("java-mixed-%s.batch", codec), Client: jv, Codec: codec, Set: "mixed-java", Records: recs}
			writeFixture(t, f, produceJava(t, codec, recs))
			m.add(f)
		}
	} else {
		t.Logf("java/javac/mvn not on PATH: keeping the existing Java fixtures")
		old, err := LoadManifest("testdata")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range old.Fixtures {
			if strings.HasPrefix(f.File, "java-") {
				m.add(f)
			}
		}
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifestPath, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFixture(t *testing.T, f Fixture, raw []byte) {
	t.Helper()
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", f.File), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d records, %d bytes", f.File, len(f.Records), len(raw))
}

// produceKgo has franz-go produce recs as one batch and returns that batch.
func produceKgo(t *testing.T, codec string, recs []FixtureRecord) []byte {
	t.Helper()
	b := newCaptureBroker(t)
	topic := "fixture-" + codec
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.addr()),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgoCodecs[codec]),
		kgo.ProducerLinger(time.Second),
		kgo.ProducerBatchMaxBytes(16<<20),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		kr := &kgo.Record{Partition: 0}
		if r.Key != nil {
			kr.Key = []byte(*r.Key)
		}
		if r.Value != nil {
			kr.Value = []byte(*r.Value)
		}
		for _, h := range r.Headers {
			kh := kgo.RecordHeader{Key: h.Key}
			if h.Value != nil {
				kh.Value = []byte(*h.Value)
			}
			kr.Headers = append(kr.Headers, kh)
		}
		kr.Timestamp = time.UnixMilli(*r.Timestamp)
		krs[i] = kr
	}
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		t.Fatalf("franz-go produce (%s): %v", codec, err)
	}
	got := b.captured(topic)
	if len(got) != 1 {
		t.Fatalf("franz-go (%s) sent %d batches, want 1", codec, len(got))
	}
	return got[0]
}

func kcatVersion(t *testing.T) string {
	out, err := exec.Command("kcat", "-V").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -V: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Version ") {
			return "kcat " + strings.TrimSpace(strings.TrimPrefix(line, "Version "))
		}
	}
	return "kcat"
}

func produceKcat(t *testing.T, codec string, recs []FixtureRecord) []byte {
	t.Helper()
	b := newCaptureBroker(t)
	topic := "kcat-" + codec
	var in bytes.Buffer
	for _, r := range recs {
		fmt.Fprintf(&in, "%s|%s\n", []byte(*r.Key), []byte(*r.Value))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{"-P", "-b", b.addr(), "-t", topic, "-p", "0", "-K", "|", "-H", "client=kcat",
		"-X", "linger.ms=500", "-X", "api.version.request=true", "-X", "enable.idempotence=false"}
	if codec != "none" {
		args = append(args, "-z", codec)
	}
	cmd := exec.CommandContext(ctx, "kcat", args...)
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat (%s): %v\n%s", codec, err, out)
	}
	got := b.captured(topic)
	if len(got) != 1 {
		t.Fatalf("kcat (%s) sent %d batches, want 1", codec, len(got))
	}
	return got[0]
}

// javaClasspath is where javaAvailable put the compiled Producer and the
// client jars.
var javaClasspath string

// javaAvailable fetches the Java client with Maven (pom in
// testdata/javaproducer) and compiles Producer.java. It reports the client
// version for the manifest.
func javaAvailable(t *testing.T) (string, bool) {
	for _, tool := range []string{"java", "javac", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", false
		}
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	src, err := filepath.Abs("testdata/javaproducer")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func(name string, args ...string) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("mvn", "-q", "-f", filepath.Join(src, "pom.xml"), "dependency:copy-dependencies", "-DoutputDirectory="+lib)
	javaClasspath = dir + string(os.PathListSeparator) + filepath.Join(lib, "*")
	run("javac", "-d", dir, "-cp", javaClasspath, filepath.Join(src, "Producer.java"))
	jars, _ := filepath.Glob(filepath.Join(lib, "kafka-clients-*.jar"))
	if len(jars) != 1 {
		t.Fatalf("kafka-clients jar: %v", jars)
	}
	return "java " + strings.TrimSuffix(strings.TrimPrefix(filepath.Base(jars[0]), "kafka-"), ".jar"), true
}

func produceJava(t *testing.T, codec string, recs []FixtureRecord) []byte {
	t.Helper()
	b := newCaptureBroker(t)
	topic := "java-" + codec
	var in bytes.Buffer
	for _, r := range recs {
		fmt.Fprintf(&in, "%d|%s|%s\n", *r.Timestamp, []byte(*r.Key), []byte(*r.Value))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-cp", javaClasspath, "Producer", b.addr(), topic, codec)
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("java producer (%s): %v\n%s", codec, err, out)
	}
	got := b.captured(topic)
	if len(got) != 1 {
		t.Fatalf("java (%s) sent %d batches, want 1", codec, len(got))
	}
	return got[0]
}

// LoadManifest reads the fixture manifest in dir.
func LoadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, "fixtures.json"))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, err
	}
	for i, f := range m.Fixtures {
		recs, ok := m.Sets[f.Set]
		if !ok {
			return m, fmt.Errorf("fixture %s names unknown record set %q", f.File, f.Set)
		}
		m.Fixtures[i].Records = recs
	}
	return m, nil
}
