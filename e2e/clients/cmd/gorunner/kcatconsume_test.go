package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ferrygw/ferry/e2e/clients/protocol"
)

// Lines as kcat 1.7.1 -J printed them: bytes that are not UTF-8 raw inside the JSON strings.
func TestKcatMessage(t *testing.T) {
	tests := []struct {
		line string
		want protocol.Message
	}{
		{`{"topic":"t","partition":0,"offset":0,"tstype":"create","ts":1767323045123,"broker":1,"headers":["h","1","h","2","n",null,"e",""],"key":"k","payload":"v"}`,
			protocol.Message{Partition: 0, Offset: 0, TimestampMs: 1767323045123, Key: []byte("k"), Value: []byte("v"),
				Headers: []protocol.MessageHeader{{Key: "h", Value: []byte("1")}, {Key: "h", Value: []byte("2")}, {Key: "n"}, {Key: "e", Value: []byte{}}}}},
		{`{"topic":"t","partition":1,"offset":1,"tstype":"create","ts":1,"broker":1,"key":"","payload":null}`,
			protocol.Message{Partition: 1, Offset: 1, TimestampMs: 1, Key: []byte{}}},
		{"{\"topic\":\"t\",\"partition\":2,\"offset\":0,\"tstype\":\"create\",\"ts\":2,\"broker\":1,\"headers\":[\"bin\",\"\xfe\"],\"key\":\"\xff\\u0000a\",\"payload\":\"\xc3(\\\"\\\\\\n\\ud83d\\ude00\\/\"}",
			protocol.Message{Partition: 2, Offset: 0, TimestampMs: 2, Key: []byte{0xff, 0, 'a'}, Value: []byte("\xc3(\"\\\n😀/"),
				Headers: []protocol.MessageHeader{{Key: "bin", Value: []byte{0xfe}}}}},
	}
	for _, tt := range tests {
		got, err := kcatMessage([]byte(tt.line))
		if err != nil {
			t.Fatalf("%s: %v", tt.line, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", tt.line, got, tt.want)
		}
	}
	for _, bad := range []string{`{"partition":0,"offset":0,"key":"k"}`, `{"partition":0,"offset":0,"key":"k","payload":"v","headers":["h"]}`, `{"partition":0,"offset":0,"key":"\q","payload":"v"}`} {
		if _, err := kcatMessage([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// librdkafka's log lines for a Fetch answer it cannot parse stop the run; other lines pass.
func TestCopyFindingProtocolError(t *testing.T) {
	const eof = "% Reached end of topic t [0] at offset 3\n"
	const bad = "%3|1764900000.123|PROTOERR|rdkafka#consumer-1| [thrd:127.0.0.1:9092/1]: 127.0.0.1:9092/1: Protocol parse failure for Fetch v11(flex) at 95/103 (rd_kafka_fetch_reply_handle:1101) (incorrect broker.version.fallback?)\n"
	for _, tt := range []struct {
		in, want string
	}{
		{eof, ""},
		{eof + bad + "after\n", strings.TrimSuffix(bad, "\n")},
		{"%4|1|PROTOERR|rdkafka#consumer-1| x\n", "%4|1|PROTOERR|rdkafka#consumer-1| x"},
	} {
		var copied strings.Builder
		if got := copyFindingProtocolError(&copied, strings.NewReader(tt.in)); got != tt.want {
			t.Errorf("%q: found %q, want %q", tt.in, got, tt.want)
		}
		// Everything up to the protocol error (or the end) is passed on.
		wantCopied := tt.in
		if tt.want != "" {
			wantCopied = tt.in[:strings.Index(tt.in, tt.want)+len(tt.want)+1]
		}
		if copied.String() != wantCopied {
			t.Errorf("%q: copied %q, want %q", tt.in, copied.String(), wantCopied)
		}
	}
}
