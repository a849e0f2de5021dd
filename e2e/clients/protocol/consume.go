package protocol

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"
)

// ConsumeOptions are the parsed flags of `consume` (README.md). Without Group the runner assigns
// the partitions itself (no consumer group); with Group it joins that group.
type ConsumeOptions struct {
	Bootstrap string
	Topic     string
	// TopicRegex, instead of Topic and with Group, subscribes to every topic matching it, including
	// topics that appear while the run goes on (found at the client's metadata refreshes).
	TopicRegex string
	// MetadataMaxAgeMs, when positive, is how often the client refreshes its metadata (Java
	// metadata.max.age.ms, librdkafka topic.metadata.refresh.interval.ms, franz MetadataMaxAge).
	MetadataMaxAgeMs int
	// Count is the number of records to read (over all partitions) before exiting.
	Count int
	// Partition limits a group-less run to one partition (nil: every partition of the topic).
	Partition *int32
	// From is where to start without a committed offset: "earliest" (also when empty), "latest",
	// or an offset (group-less only).
	From   string
	Group  string
	Commit bool // with Group: commit the printed records' offsets before exiting
	// SASL and TLS as in Options.
	SASLUser, SASLPassword, SASLMechanism, SASLTokenFile string
	TLSCA, TLSCert, TLSKey                               string
	Timeout                                              time.Duration
}

// Security returns the consume options' SASL and TLS settings.
func (o ConsumeOptions) Security() Security {
	return Security{o.SASLUser, o.SASLPassword, o.SASLMechanism, o.SASLTokenFile, o.TLSCA, o.TLSCert, o.TLSKey}
}

// FromOffset is From as an absolute offset, when it is one.
func (o ConsumeOptions) FromOffset() (int64, bool) {
	n, err := strconv.ParseInt(o.From, 10, 64)
	return n, err == nil
}

// FromLatest reports whether the run starts at the end of the partitions.
func (o ConsumeOptions) FromLatest() bool { return o.From == "latest" }

// Validate names the first bad field.
func (o ConsumeOptions) Validate() error {
	switch {
	case o.Bootstrap == "":
		return errors.New("--bootstrap is required")
	case o.Topic == "" && o.TopicRegex == "":
		return errors.New("--topic or --topic-regex is required")
	case o.Topic != "" && o.TopicRegex != "":
		return errors.New("--topic and --topic-regex exclude each other")
	case o.TopicRegex != "" && o.Group == "":
		return errors.New("--topic-regex needs --group: a regex is a subscription")
	case o.MetadataMaxAgeMs < 0:
		return fmt.Errorf("--metadata-max-age-ms must be >= 0, got %d", o.MetadataMaxAgeMs)
	case o.Count < 1:
		return fmt.Errorf("--count must be >= 1, got %d", o.Count)
	case o.Partition != nil && *o.Partition < 0:
		return fmt.Errorf("--partition must be >= 0, got %d", *o.Partition)
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout must be positive, got %v", o.Timeout)
	case o.Commit && o.Group == "":
		return errors.New("--commit needs --group")
	}
	if n, ok := o.FromOffset(); ok {
		if n < 0 {
			return fmt.Errorf("--from offset must be >= 0, got %d", n)
		}
		if o.Group != "" {
			// A group starts where it committed; the clients' reset policies know only earliest/latest.
			return errors.New("--from OFFSET is for group-less runs; with --group use earliest or latest")
		}
	} else if o.From != "" && o.From != "earliest" && o.From != "latest" {
		return fmt.Errorf("--from must be earliest, latest or an offset, got %q", o.From)
	}
	if o.Group != "" && o.Partition != nil {
		return errors.New("--partition is for group-less runs: a group member reads what the group assigns")
	}
	return o.Security().Validate()
}

// Args renders the options as runner flags (after the "consume" word), omitting what was not given.
func (o ConsumeOptions) Args() []string {
	a := []string{"--bootstrap", o.Bootstrap}
	if o.Topic != "" {
		a = append(a, "--topic", o.Topic)
	}
	if o.TopicRegex != "" {
		a = append(a, "--topic-regex", o.TopicRegex)
	}
	a = append(a, "--count", strconv.Itoa(o.Count))
	if o.MetadataMaxAgeMs > 0 {
		a = append(a, "--metadata-max-age-ms", strconv.Itoa(o.MetadataMaxAgeMs))
	}
	if o.Partition != nil {
		a = append(a, "--partition", strconv.Itoa(int(*o.Partition)))
	}
	if o.From != "" {
		a = append(a, "--from", o.From)
	}
	if o.Group != "" {
		a = append(a, "--group", o.Group)
	}
	if o.Commit {
		a = append(a, "--commit")
	}
	a = append(a, o.Security().Args()...)
	if o.Timeout > 0 {
		a = append(a, "--timeout", strconv.FormatFloat(o.Timeout.Seconds(), 'f', -1, 64))
	}
	return a
}

const consumeUsage = `usage: consume --bootstrap H:P (--topic T | --topic-regex R) --count N [--metadata-max-age-ms MS] [--partition P] [--from earliest|latest|OFFSET] [--group G [--commit]] [--sasl-user U --sasl-password P [--sasl-mechanism M] | --sasl-mechanism OAUTHBEARER --sasl-token-file F] [--tls-ca PEM [--tls-cert PEM --tls-key PEM]] [--timeout SECONDS]`

// ParseConsumeArgs parses "consume --flag value ..." (the leading "consume" word included).
func ParseConsumeArgs(args []string) (ConsumeOptions, error) {
	o := ConsumeOptions{Timeout: DefaultTimeout}
	// --commit is the one flag without a value.
	sec, err := parseFlags(args, "consume", consumeUsage, map[string]bool{"--commit": true}, func(name, val string) error {
		var err error
		switch name {
		case "--commit":
			o.Commit = true
		case "--bootstrap":
			o.Bootstrap = val
		case "--topic":
			o.Topic = val
		case "--topic-regex":
			o.TopicRegex = val
		case "--metadata-max-age-ms":
			n, cerr := strconv.Atoi(val)
			if cerr != nil {
				return fmt.Errorf("--metadata-max-age-ms must be a number, got %q", val)
			}
			o.MetadataMaxAgeMs = n
		case "--count":
			n, cerr := strconv.Atoi(val)
			if cerr != nil {
				return fmt.Errorf("--count must be a number, got %q", val)
			}
			o.Count = n
		case "--partition":
			o.Partition, err = parsePartition(val)
		case "--from":
			o.From = val
		case "--group":
			o.Group = val
		case "--timeout":
			o.Timeout, err = parseTimeout(val)
		default:
			return fmt.Errorf("unknown flag %s", name)
		}
		return err
	})
	if err != nil {
		return o, err
	}
	o.SASLUser, o.SASLPassword, o.SASLMechanism, o.SASLTokenFile = sec.SASLUser, sec.SASLPassword, sec.SASLMechanism, sec.SASLTokenFile
	o.TLSCA, o.TLSCert, o.TLSKey = sec.TLSCA, sec.TLSCert, sec.TLSKey
	return o, o.Validate()
}

// Message is one consumed record, a line of consume's output. Key, Value and header values are
// the record's bytes; nil means null (a null key, a tombstone's value, a null header value).
type Message struct {
	// Topic is set by runs with --topic-regex (the "topic" member), which read several topics.
	Topic       string
	Partition   int32
	Offset      int64
	Key         []byte
	Value       []byte
	Headers     []MessageHeader
	TimestampMs int64
}

// MessageHeader is one header of a consumed record; a nil Value is a null one.
type MessageHeader struct {
	Key   string
	Value []byte
}

// The line's members in order. Bytes that are valid UTF-8 are written as text; others go to the
// _b64 member (standard base64) instead and the text member is left out, so "key": null is a null
// key and a missing "key" means "see key_b64". A header is [name, value] (value a string or null);
// a value that is not UTF-8 is [name, null, base64].
var messageMembers = map[string]bool{"topic": true, "partition": true, "offset": true, "key": true, "key_b64": true,
	"value": true, "value_b64": true, "headers": true, "timestamp_ms": true}

// MarshalJSON writes the contract's line.
func (m Message) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	if m.Topic != "" {
		b.WriteString(`"topic":`)
		writeString(&b, m.Topic)
		b.WriteByte(',')
	}
	fmt.Fprintf(&b, `"partition":%d,"offset":%d,`, m.Partition, m.Offset)
	writeBytesMember(&b, "key", m.Key)
	b.WriteByte(',')
	writeBytesMember(&b, "value", m.Value)
	b.WriteString(`,"headers":[`)
	for i, h := range m.Headers {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		writeString(&b, h.Key)
		switch {
		case h.Value == nil:
			b.WriteString(",null")
		case utf8.Valid(h.Value):
			b.WriteByte(',')
			writeString(&b, string(h.Value))
		default:
			b.WriteString(",null,")
			writeString(&b, base64.StdEncoding.EncodeToString(h.Value))
		}
		b.WriteByte(']')
	}
	fmt.Fprintf(&b, `],"timestamp_ms":%d}`, m.TimestampMs)
	return b.Bytes(), nil
}

func writeBytesMember(b *bytes.Buffer, name string, v []byte) {
	switch {
	case v == nil:
		fmt.Fprintf(b, "%q:null", name)
	case utf8.Valid(v):
		fmt.Fprintf(b, "%q:", name)
		writeString(b, string(v))
	default:
		fmt.Fprintf(b, "%q:", name+"_b64")
		writeString(b, base64.StdEncoding.EncodeToString(v))
	}
}

// writeString writes s as a JSON string.
func writeString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s) // a string always encodes
	b.Write(q)
}

// UnmarshalJSON reads the contract's line strictly: unknown or missing members and malformed
// headers are errors.
func (m *Message) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	for k := range raw {
		if !messageMembers[k] {
			return fmt.Errorf("unknown member %q", k)
		}
	}
	for _, k := range []string{"partition", "offset", "headers", "timestamp_ms"} {
		if _, ok := raw[k]; !ok {
			return fmt.Errorf("missing %q", k)
		}
	}
	var out Message
	var hs []json.RawMessage
	for _, f := range []struct {
		name string
		dst  any
	}{{"partition", &out.Partition}, {"offset", &out.Offset}, {"timestamp_ms", &out.TimestampMs}, {"headers", &hs}} {
		if err := json.Unmarshal(raw[f.name], f.dst); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	if t, ok := raw["topic"]; ok {
		if err := json.Unmarshal(t, &out.Topic); err != nil || out.Topic == "" {
			return fmt.Errorf("topic: want a topic name, got %s", t)
		}
	}
	var err error
	if out.Key, err = readBytesMember(raw, "key"); err != nil {
		return err
	}
	if out.Value, err = readBytesMember(raw, "value"); err != nil {
		return err
	}
	for _, h := range hs {
		var pair []json.RawMessage // a null element stays the raw "null"
		if err := json.Unmarshal(h, &pair); err != nil {
			return fmt.Errorf("header %s: %w", h, err)
		}
		var name string
		if len(pair) < 2 || len(pair) > 3 || json.Unmarshal(pair[0], &name) != nil {
			return fmt.Errorf("header %s: want [name, value] or [name, null, base64]", h)
		}
		var v []byte
		if len(pair) == 3 {
			if string(pair[1]) != "null" {
				return fmt.Errorf("header %s: want [name, null, base64]", h)
			}
			v, err = decodeB64(pair[2])
		} else {
			v, err = decodeText(pair[1])
		}
		if err != nil {
			return fmt.Errorf("header %s: %w", h, err)
		}
		out.Headers = append(out.Headers, MessageHeader{Key: name, Value: v})
	}
	*m = out
	return nil
}

// readBytesMember reads name or name_b64, exactly one of which must be present.
func readBytesMember(raw map[string]json.RawMessage, name string) ([]byte, error) {
	text, hasText := raw[name]
	b64, hasB64 := raw[name+"_b64"]
	switch {
	case hasText == hasB64:
		return nil, fmt.Errorf("want exactly one of %s and %s_b64", name, name)
	case hasB64:
		v, err := decodeB64(b64)
		if err != nil {
			return nil, fmt.Errorf("%s_b64: %w", name, err)
		}
		return v, nil
	}
	v, err := decodeText(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// decodeText reads a JSON string as bytes (never nil) or null as nil.
func decodeText(raw json.RawMessage) ([]byte, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return append([]byte{}, s...), nil
}

func decodeB64(raw json.RawMessage) ([]byte, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	v, err := base64.StdEncoding.DecodeString(s)
	if err == nil && utf8.Valid(v) {
		return nil, errors.New("base64 of valid UTF-8: the text form is required")
	}
	return v, err
}

// ReadMessages parses consume output: one Message per non-blank line.
func ReadMessages(r io.Reader) ([]Message, error) {
	var out []Message
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var m Message
		if err := json.Unmarshal(b, &m); err != nil {
			return out, fmt.Errorf("bad record line %q: %w", b, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}
