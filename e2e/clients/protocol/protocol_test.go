package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	p := int32(3)
	yes := true
	tests := []struct {
		name    string
		args    string
		want    Options
		wantErr string
	}{
		{name: "minimal", args: "produce --bootstrap h:1 --topic t",
			want: Options{Bootstrap: "h:1", Topic: "t", Timeout: DefaultTimeout}},
		{name: "everything", args: "produce --bootstrap h:1 --topic t --acks all --compression zstd --partition 3 --idempotent true --sasl-user u --sasl-password pw --key-field id --timeout 2.5",
			want: Options{Bootstrap: "h:1", Topic: "t", Acks: "all", Compression: "zstd", Partition: &p, Idempotent: &yes,
				SASLUser: "u", SASLPassword: "pw", KeyField: "id", Timeout: 2500 * time.Millisecond}},
		{name: "no produce word", args: "--bootstrap h:1 --topic t", wantErr: "usage"},
		{name: "missing bootstrap", args: "produce --topic t", wantErr: "--bootstrap is required"},
		{name: "missing topic", args: "produce --bootstrap h:1", wantErr: "--topic is required"},
		{name: "bad acks", args: "produce --bootstrap h:1 --topic t --acks -1", wantErr: "--acks must be"},
		{name: "bad codec", args: "produce --bootstrap h:1 --topic t --compression brotli", wantErr: "--compression must be"},
		{name: "negative partition", args: "produce --bootstrap h:1 --topic t --partition -1", wantErr: "--partition must be >= 0"},
		{name: "bad idempotent", args: "produce --bootstrap h:1 --topic t --idempotent yes", wantErr: "--idempotent must be"},
		{name: "half sasl", args: "produce --bootstrap h:1 --topic t --sasl-user u", wantErr: "together"},
		{name: "zero timeout", args: "produce --bootstrap h:1 --topic t --timeout 0", wantErr: "--timeout must be positive"},
		{name: "unknown flag", args: "produce --bootstrap h:1 --topic t --linger 5", wantErr: "unknown flag --linger"},
		{name: "dangling flag", args: "produce --bootstrap h:1 --topic", wantErr: "--topic needs a value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseArgs(strings.Fields(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			// Args renders what ParseArgs reads back.
			back, err := ParseArgs(append([]string{"produce"}, got.Args()...))
			if err != nil || !reflect.DeepEqual(back, got) {
				t.Fatalf("round trip: %+v, %v", back, err)
			}
		})
	}
}

func TestHeadersKeepOrder(t *testing.T) {
	h := Headers{{"z", "1"}, {"a", "2"}, {"z", "3"}}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"z":"1","a":"2","z":"3"}` {
		t.Fatalf("encoded %s", b)
	}
	var back Headers
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, h) {
		t.Fatalf("decoded %v, want %v", back, h)
	}
	if err := json.Unmarshal([]byte(`{"a":1}`), &back); err == nil {
		t.Fatal("a non-string header value was accepted")
	}
}

func TestReadRecords(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		keyField string
		wantKeys []string // "<nil>" for a null key
		wantErr  string
	}{
		{name: "keys and blank lines", in: "{\"key\":\"a\",\"value\":\"1\"}\n\n{\"key\":null,\"value\":\"2\",\"headers\":{\"h\":\"v\"},\"timestamp_ms\":5}\n",
			wantKeys: []string{"a", "<nil>"}},
		{name: "key field string/number/missing", keyField: "id",
			in:       `{"key":"ignored","value":"{\"id\":\"x\"}"}` + "\n" + `{"value":"{\"id\":{\"n\": 1}}"}` + "\n" + `{"value":"{}"}`,
			wantKeys: []string{"x", `{"n":1}`, "<nil>"}},
		{name: "key field on non-JSON value", keyField: "id", in: `{"value":"plain"}`, wantErr: "line 1: --key-field id"},
		{name: "tombstones keep their own key, also with a key field", keyField: "id",
			in: `{"key":"k","value":null}` + "\n" + `{"value":null}`, wantKeys: []string{"k", "<nil>"}},
		{name: "missing value", in: `{"key":"k"}`, wantErr: "line 1: value must be a string or null"},
		{name: "number value", in: `{"value":5}`, wantErr: "line 1"},
		{name: "unknown member", in: `{"value":"v","partition":1}`, wantErr: `unknown member "partition"`},
		{name: "not JSON", in: "{\"value\":\"v\"}\nnope", wantErr: "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := ReadRecords(strings.NewReader(tt.in), tt.keyField)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, r := range recs {
				if r.Key == nil {
					keys = append(keys, "<nil>")
				} else {
					keys = append(keys, *r.Key)
				}
			}
			if !reflect.DeepEqual(keys, tt.wantKeys) {
				t.Fatalf("keys %q, want %q", keys, tt.wantKeys)
			}
		})
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	k := "k\x00é"
	ts := int64(-5)
	in := []Record{{Key: &k, Value: `{"a":"<b>"}`, Headers: Headers{{"x", "y"}}, TimestampMs: &ts}, {Value: ""}, {Key: &k, Tombstone: true}}
	var buf bytes.Buffer
	if err := WriteRecords(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadRecords(&buf, "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("got %+v, want %+v", out, in)
	}
}

func TestReadDeliveries(t *testing.T) {
	ds, err := ReadDeliveries(strings.NewReader("{\"index\":0,\"partition\":1,\"offset\":7}\n{\"index\":1,\"error\":\"boom\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || !ds[0].OK() || *ds[0].Offset != 7 || ds[1].OK() || ds[1].Error != "boom" {
		t.Fatalf("got %+v", ds)
	}
	for _, bad := range []string{"not json\n", "{\"partition\":1}\n"} {
		if _, err := ReadDeliveries(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
