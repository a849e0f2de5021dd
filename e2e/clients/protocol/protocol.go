// Package protocol is the uniform command-line contract shared by every runner of the client
// harness (see ../README.md): for produce the flags, the JSON-lines records on stdin and the
// JSON-lines delivery reports on stdout; for consume the flags and the JSON-lines records on stdout.
// The Go runners (cmd/gorunner) parse with it and the test-facing package
// github.com/ferrygw/ferry/e2e/clients writes with it, so both sides agree byte for byte; the Java,
// Node and Python runners implement the same contract by hand.
package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Header is one record header. Kafka allows repeated keys and keeps their order, so headers are a
// list, encoded as a JSON object whose member order is preserved.
type Header struct {
	Key   string
	Value string
}

// Headers is an ordered header list with an order-preserving JSON object encoding.
type Headers []Header

// MarshalJSON writes the headers as one JSON object, members in list order.
func (h Headers) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range h {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(kv.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(kv.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a JSON object of string members (or null, meaning no headers) keeping the
// member order; encoding/json's map decoding would lose it.
func (h *Headers) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		*h = nil
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("headers: want a JSON object, got %v", tok)
	}
	out := Headers{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return err
		}
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("headers: value of %q must be a string, got %T", kt, v)
		}
		out = append(out, Header{Key: kt.(string), Value: s})
	}
	*h = out
	return nil
}

// Record is one input line: {"key": str|null, "value": str|null, "headers": {..}, "timestamp_ms": n|null}.
// Value holds the exact value bytes as UTF-8 text; Tombstone sends a null value instead (the
// line's "value" is null, and Value is then empty).
type Record struct {
	Key         *string
	Value       string
	Tombstone   bool
	Headers     Headers
	TimestampMs *int64
}

// recordJSON is a Record's line.
type recordJSON struct {
	Key         *string `json:"key"`
	Value       *string `json:"value"`
	Headers     Headers `json:"headers,omitempty"`
	TimestampMs *int64  `json:"timestamp_ms"`
}

// MarshalJSON writes a tombstone's value as null.
func (r Record) MarshalJSON() ([]byte, error) {
	j := recordJSON{Key: r.Key, Headers: r.Headers, TimestampMs: r.TimestampMs}
	if !r.Tombstone {
		j.Value = &r.Value
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a null value as a tombstone.
func (r *Record) UnmarshalJSON(b []byte) error {
	var j recordJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Record{Key: j.Key, Tombstone: j.Value == nil, Headers: j.Headers, TimestampMs: j.TimestampMs}
	if j.Value != nil {
		r.Value = *j.Value
	}
	return nil
}

// Delivery is one output line: the broker's answer for the record at Index, or the client's error.
type Delivery struct {
	Index     int    `json:"index"`
	Partition *int32 `json:"partition,omitempty"`
	Offset    *int64 `json:"offset,omitempty"`
	Error     string `json:"error,omitempty"`
}

// OK reports whether the record was acknowledged.
func (d Delivery) OK() bool { return d.Error == "" }

// Exit codes every runner uses.
const (
	ExitOK     = 0 // every record acknowledged
	ExitFailed = 1 // at least one record failed or timed out
	ExitUsage  = 2 // bad flags or bad input; nothing was produced
)

// DefaultTimeout bounds a whole run when --timeout is not given.
const DefaultTimeout = 60 * time.Second

// Options are the parsed flags. Pointer and empty values mean "not given": the runner then keeps the
// client library's own default.
type Options struct {
	Bootstrap    string
	Topic        string
	Acks         string // "", "0", "1", "all"
	Compression  string // "", "none", "gzip", "snappy", "lz4", "zstd"
	Partition    *int32
	Idempotent   *bool
	SASLUser     string
	SASLPassword string
	// SASLMechanism is PLAIN (the default), SCRAM-SHA-256/512 or
	// OAUTHBEARER; OAUTHBEARER takes its token (a JWT) from SASLTokenFile
	// instead of a user and password.
	SASLMechanism string
	SASLTokenFile string
	// TLSCA (PEM) makes the client connect with TLS (SSL, or SASL_SSL with
	// SASL) trusting these CAs; TLSCert and TLSKey (PEM, PKCS#8 key) are its
	// client certificate for mTLS.
	TLSCA, TLSCert, TLSKey string
	KeyField               string
	Timeout                time.Duration
}

// Validate names the first bad field.
func (o Options) Validate() error {
	switch {
	case o.Bootstrap == "":
		return errors.New("--bootstrap is required")
	case o.Topic == "":
		return errors.New("--topic is required")
	}
	switch o.Acks {
	case "", "0", "1", "all":
	default:
		return fmt.Errorf("--acks must be 0, 1 or all, got %q", o.Acks)
	}
	switch o.Compression {
	case "", "none", "gzip", "snappy", "lz4", "zstd":
	default:
		return fmt.Errorf("--compression must be none, gzip, snappy, lz4 or zstd, got %q", o.Compression)
	}
	if o.Partition != nil && *o.Partition < 0 {
		return fmt.Errorf("--partition must be >= 0, got %d", *o.Partition)
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %v", o.Timeout)
	}
	return o.Security().Validate()
}

// Args renders the options as runner flags (after the "produce" word), omitting what was not given.
func (o Options) Args() []string {
	a := []string{"--bootstrap", o.Bootstrap, "--topic", o.Topic}
	if o.Acks != "" {
		a = append(a, "--acks", o.Acks)
	}
	if o.Compression != "" {
		a = append(a, "--compression", o.Compression)
	}
	if o.Partition != nil {
		a = append(a, "--partition", strconv.Itoa(int(*o.Partition)))
	}
	if o.Idempotent != nil {
		a = append(a, "--idempotent", strconv.FormatBool(*o.Idempotent))
	}
	a = append(a, o.Security().Args()...)
	if o.KeyField != "" {
		a = append(a, "--key-field", o.KeyField)
	}
	if o.Timeout > 0 {
		a = append(a, "--timeout", strconv.FormatFloat(o.Timeout.Seconds(), 'f', -1, 64))
	}
	return a
}

const produceUsage = `usage: produce --bootstrap H:P --topic T [--acks 0|1|all] [--compression none|gzip|snappy|lz4|zstd] [--partition N] [--idempotent true|false] [--sasl-user U --sasl-password P [--sasl-mechanism M] | --sasl-mechanism OAUTHBEARER --sasl-token-file F] [--tls-ca PEM [--tls-cert PEM --tls-key PEM]] [--key-field F] [--timeout SECONDS] < records.jsonl`

// ParseArgs parses "produce --flag value ..." (the leading "produce" word included).
func ParseArgs(args []string) (Options, error) {
	o := Options{Timeout: DefaultTimeout}
	sec, err := parseFlags(args, "produce", produceUsage, nil, func(name, val string) error {
		var err error
		switch name {
		case "--bootstrap":
			o.Bootstrap = val
		case "--topic":
			o.Topic = val
		case "--acks":
			o.Acks = val
		case "--compression":
			o.Compression = val
		case "--partition":
			o.Partition, err = parsePartition(val)
		case "--idempotent":
			b, perr := strconv.ParseBool(val)
			if perr != nil || (val != "true" && val != "false") {
				return fmt.Errorf("--idempotent must be true or false, got %q", val)
			}
			o.Idempotent = &b
		case "--key-field":
			o.KeyField = val
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

// ReadRecords reads JSON lines (blank lines skipped). With keyField set, every record's key becomes
// that top-level field of its value parsed as JSON (see KeyFromField).
func ReadRecords(r io.Reader, keyField string) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		for k := range raw {
			switch k {
			case "key", "value", "headers", "timestamp_ms":
			default:
				return nil, fmt.Errorf("line %d: unknown member %q", line, k)
			}
		}
		if _, ok := raw["value"]; !ok {
			return nil, fmt.Errorf("line %d: value must be a string or null", line)
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		// A tombstone has no value to take the key from: it keeps its own.
		if keyField != "" && !rec.Tombstone {
			k, err := KeyFromField(rec.Value, keyField)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			rec.Key = k
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// KeyFromField derives a key from a JSON value: a string member gives its text, null or a missing
// member gives a null key, any other member gives its compact JSON text.
func KeyFromField(value, field string) (*string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(value), &obj); err != nil {
		return nil, fmt.Errorf("--key-field %s: value is not a JSON object: %w", field, err)
	}
	raw, ok := obj[field]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return &s, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	k := buf.String()
	return &k, nil
}

// WriteRecords writes records as JSON lines.
func WriteRecords(w io.Writer, recs []Record) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
	}
	return nil
}

// ReadDeliveries parses runner output; lines that are not JSON objects with an "index" are errors.
func ReadDeliveries(r io.Reader) ([]Delivery, error) {
	var out []Delivery
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return out, fmt.Errorf("bad delivery line %q: %w", b, err)
		}
		if _, ok := m["index"]; !ok {
			return out, fmt.Errorf("delivery line without index: %q", b)
		}
		var d Delivery
		if err := json.Unmarshal(b, &d); err != nil {
			return out, fmt.Errorf("bad delivery line %q: %w", b, err)
		}
		out = append(out, d)
	}
	return out, sc.Err()
}

// Int32 and Int64 are helpers for building Delivery values.
func Int32(v int32) *int32 { return &v }

// Int64 returns a pointer to v.
func Int64(v int64) *int64 { return &v }

// Security is the connection's SASL and TLS settings, shared by produce and consume.
type Security struct {
	SASLUser, SASLPassword, SASLMechanism, SASLTokenFile string
	TLSCA, TLSCert, TLSKey                               string
}

// Security returns the produce options' SASL and TLS settings.
func (o Options) Security() Security {
	return Security{o.SASLUser, o.SASLPassword, o.SASLMechanism, o.SASLTokenFile, o.TLSCA, o.TLSCert, o.TLSKey}
}

// Mechanism is the SASL mechanism to use: SASLMechanism, PLAIN by default.
func (s Security) Mechanism() string {
	if s.SASLMechanism == "" {
		return "PLAIN"
	}
	return s.SASLMechanism
}

// Validate names the first bad SASL or TLS setting.
func (s Security) Validate() error {
	if (s.SASLUser == "") != (s.SASLPassword == "") {
		return errors.New("--sasl-user and --sasl-password must be given together")
	}
	switch s.SASLMechanism {
	case "", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if s.SASLTokenFile != "" {
			return errors.New("--sasl-token-file goes with --sasl-mechanism OAUTHBEARER")
		}
	case "OAUTHBEARER":
		if s.SASLTokenFile == "" || s.SASLUser != "" {
			return errors.New("--sasl-mechanism OAUTHBEARER takes --sasl-token-file, not a user and password")
		}
	default:
		return fmt.Errorf("--sasl-mechanism must be PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER, got %q", s.SASLMechanism)
	}
	if (s.TLSCert == "") != (s.TLSKey == "") || (s.TLSCert != "" && s.TLSCA == "") {
		return errors.New("--tls-cert and --tls-key go together, and with --tls-ca")
	}
	return nil
}

// Args renders the given settings as runner flags.
func (s Security) Args() []string {
	var a []string
	if s.SASLUser != "" {
		a = append(a, "--sasl-user", s.SASLUser, "--sasl-password", s.SASLPassword)
	}
	if s.SASLMechanism != "" {
		a = append(a, "--sasl-mechanism", s.SASLMechanism)
	}
	if s.SASLTokenFile != "" {
		a = append(a, "--sasl-token-file", s.SASLTokenFile)
	}
	if s.TLSCA != "" {
		a = append(a, "--tls-ca", s.TLSCA)
	}
	if s.TLSCert != "" {
		a = append(a, "--tls-cert", s.TLSCert, "--tls-key", s.TLSKey)
	}
	return a
}

// parseFlags walks "word --flag value ...": the SASL and TLS flags go to the returned Security,
// the flags in bare take no value and reach set with "", every other flag reaches set with its
// value. Without word first the error is usage.
func parseFlags(args []string, word, usage string, bare map[string]bool, set func(name, val string) error) (Security, error) {
	var sec Security
	if len(args) == 0 || args[0] != word {
		return sec, errors.New(usage)
	}
	args = args[1:]
	for len(args) > 0 {
		name := args[0]
		if bare[name] {
			if err := set(name, ""); err != nil {
				return sec, err
			}
			args = args[1:]
			continue
		}
		if !strings.HasPrefix(name, "--") {
			return sec, fmt.Errorf("unexpected argument %q", name)
		}
		if len(args) < 2 {
			return sec, fmt.Errorf("%s needs a value", name)
		}
		val := args[1]
		args = args[2:]
		if sec.setFlag(name, val) {
			continue
		}
		if err := set(name, val); err != nil {
			return sec, err
		}
	}
	return sec, nil
}

// parsePartition reads a --partition value.
func parsePartition(val string) (*int32, error) {
	n, err := strconv.ParseInt(val, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("--partition: %w", err)
	}
	p := int32(n)
	return &p, nil
}

// parseTimeout reads a --timeout value in seconds.
func parseTimeout(val string) (time.Duration, error) {
	s, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return 0, fmt.Errorf("--timeout must be seconds, got %q", val)
	}
	return time.Duration(s * float64(time.Second)), nil
}

// setFlag stores a SASL or TLS flag; false when name is not one.
func (s *Security) setFlag(name, val string) bool {
	switch name {
	case "--sasl-user":
		s.SASLUser = val
	case "--sasl-password":
		s.SASLPassword = val
	case "--sasl-mechanism":
		s.SASLMechanism = val
	case "--sasl-token-file":
		s.SASLTokenFile = val
	case "--tls-ca":
		s.TLSCA = val
	case "--tls-cert":
		s.TLSCert = val
	case "--tls-key":
		s.TLSKey = val
	default:
		return false
	}
	return true
}
