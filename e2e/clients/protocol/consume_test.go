package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseConsumeArgs(t *testing.T) {
	p := int32(2)
	tests := []struct {
		name    string
		args    string
		want    ConsumeOptions
		wantErr string
	}{
		{name: "minimal", args: "consume --bootstrap h:1 --topic t --count 3",
			want: ConsumeOptions{Bootstrap: "h:1", Topic: "t", Count: 3, Timeout: DefaultTimeout}},
		{name: "group-less", args: "consume --bootstrap h:1 --topic t --count 3 --partition 2 --from 17 --timeout 1.5",
			want: ConsumeOptions{Bootstrap: "h:1", Topic: "t", Count: 3, Partition: &p, From: "17", Timeout: 1500 * time.Millisecond}},
		{name: "group", args: "consume --bootstrap h:1 --topic t --count 3 --group g --commit --from latest --sasl-user u --sasl-password pw",
			want: ConsumeOptions{Bootstrap: "h:1", Topic: "t", Count: 3, Group: "g", Commit: true, From: "latest", SASLUser: "u", SASLPassword: "pw", Timeout: DefaultTimeout}},
		{name: "commit anywhere", args: "consume --commit --bootstrap h:1 --topic t --count 3 --group g",
			want: ConsumeOptions{Bootstrap: "h:1", Topic: "t", Count: 3, Group: "g", Commit: true, Timeout: DefaultTimeout}},
		{name: "topic regex", args: `consume --bootstrap h:1 --topic-regex ^db\.t\..+ --count 3 --group g --metadata-max-age-ms 500`,
			want: ConsumeOptions{Bootstrap: "h:1", TopicRegex: `^db\.t\..+`, Count: 3, Group: "g", MetadataMaxAgeMs: 500, Timeout: DefaultTimeout}},
		{name: "regex without group", args: "consume --bootstrap h:1 --topic-regex x --count 1", wantErr: "--topic-regex needs --group"},
		{name: "topic and regex", args: "consume --bootstrap h:1 --topic t --topic-regex x --count 1 --group g", wantErr: "exclude each other"},
		{name: "no topic", args: "consume --bootstrap h:1 --count 1", wantErr: "--topic or --topic-regex is required"},
		{name: "no consume word", args: "--bootstrap h:1 --topic t --count 1", wantErr: "usage"},
		{name: "no count", args: "consume --bootstrap h:1 --topic t", wantErr: "--count must be >= 1"},
		{name: "bad count", args: "consume --bootstrap h:1 --topic t --count x", wantErr: "--count must be a number"},
		{name: "bad from", args: "consume --bootstrap h:1 --topic t --count 1 --from oldest", wantErr: "--from must be"},
		{name: "negative from", args: "consume --bootstrap h:1 --topic t --count 1 --from -3", wantErr: "--from offset must be >= 0"},
		{name: "commit without group", args: "consume --bootstrap h:1 --topic t --count 1 --commit", wantErr: "--commit needs --group"},
		{name: "group and partition", args: "consume --bootstrap h:1 --topic t --count 1 --group g --partition 1", wantErr: "--partition is for group-less"},
		{name: "group and offset", args: "consume --bootstrap h:1 --topic t --count 1 --group g --from 5", wantErr: "--from OFFSET is for group-less"},
		{name: "half tls", args: "consume --bootstrap h:1 --topic t --count 1 --tls-cert c", wantErr: "--tls-cert and --tls-key"},
		{name: "produce flag", args: "consume --bootstrap h:1 --topic t --count 1 --acks all", wantErr: "unknown flag --acks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConsumeArgs(strings.Fields(tt.args))
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
			back, err := ParseConsumeArgs(append([]string{"consume"}, got.Args()...))
			if err != nil || !reflect.DeepEqual(back, got) {
				t.Fatalf("round trip: %+v, %v", back, err)
			}
		})
	}
}

func TestMessageJSON(t *testing.T) {
	m := Message{Partition: 2, Offset: 7, Key: []byte{}, Value: []byte{0xc3, 0x28}, TimestampMs: 1767323045000,
		Headers: []MessageHeader{{Key: "a", Value: []byte("x")}, {Key: "a", Value: nil}, {Key: "e", Value: []byte{}}, {Key: "b", Value: []byte{0xfe}}}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"partition":2,"offset":7,"key":"","value_b64":"wyg=","headers":[["a","x"],["a",null],["e",""],["b",null,"/g=="]],"timestamp_ms":1767323045000}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back Message
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Fatalf("round trip: %+v, want %+v", back, m)
	}
	withTopic := Message{Topic: "db.t.p1", Partition: 1, Offset: 2, Value: []byte("v"), Headers: []MessageHeader{}}
	b, _ = json.Marshal(withTopic)
	if !strings.HasPrefix(string(b), `{"topic":"db.t.p1","partition":1,`) {
		t.Errorf("with a topic: %s", b)
	}
	if err := json.Unmarshal(b, &back); err != nil || back.Topic != "db.t.p1" {
		t.Errorf("topic round trip: %s -> %+v, %v", b, back, err)
	}
	tomb := Message{Key: nil, Value: nil}
	b, _ = json.Marshal(tomb)
	if err := json.Unmarshal(b, &back); err != nil || back.Key != nil || back.Value != nil {
		t.Fatalf("null key and value: %s -> %+v, %v", b, back, err)
	}
}

func TestReadMessagesStrict(t *testing.T) {
	for _, bad := range []string{
		`{"partition":0,"offset":0,"value":"v","headers":[],"timestamp_ms":1}`,                            // no key
		`{"partition":0,"offset":0,"key":"k","key_b64":"aw==","value":"v","headers":[],"timestamp_ms":1}`, // both
		`{"partition":0,"offset":0,"key_b64":"aw==","value":"v","headers":[],"timestamp_ms":1}`,           // b64 of text
		`{"partition":0,"offset":0,"key":null,"value":"v","headers":[],"timestamp_ms":1,"topics":"t"}`,    // unknown
		`{"topic":"","partition":0,"offset":0,"key":null,"value":"v","headers":[],"timestamp_ms":1}`,      // empty topic
		`{"partition":0,"key":null,"value":"v","headers":[],"timestamp_ms":1}`,                            // no offset
		`{"partition":0,"offset":0,"key":null,"value":"v","headers":[["h"]],"timestamp_ms":1}`,            // short header
		`{"partition":0,"offset":0,"key":null,"value":"v","headers":[["h","x","/g=="]],"timestamp_ms":1}`, // b64 header with text
		`{"partition":0,"offset":0,"key":null,"value":"v","headers":{"h":"x"},"timestamp_ms":1}`,          // object headers
	} {
		if _, err := ReadMessages(bytes.NewBufferString(bad + "\n")); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
