package jaeger

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrTraceNotFound is returned by Client.Trace for an id Jaeger does not hold.
var ErrTraceNotFound = errors.New("jaeger: trace not found")

// maxResponseBytes bounds what the client reads from one answer: the in-memory store can hold a
// lot, and a runaway query must fail with a clear error rather than exhaust the test's memory.
const maxResponseBytes = 64 << 20

// Client queries a Jaeger query service through its api_v3 HTTP endpoints.
type Client struct {
	base string
}

// NewClient returns a client for the query service at baseURL (e.g. http://127.0.0.1:16686).
func NewClient(baseURL string) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/")}
}

// DefaultLimit is the number of traces a Query without a Limit asks for (Jaeger UI's default).
const DefaultLimit = 20

// waitLimit is how many of the newest matching traces each WaitForTrace poll examines.
const waitLimit = 100

// Query selects traces. Service is required by Jaeger; the rest narrows the search.
type Query struct {
	Service string
	// Operation matches a span name within Service.
	Operation string
	// Start time window of the matching span; zero values mean [now-Lookback, now].
	StartMin, StartMax time.Time
	// Lookback is used when StartMin is zero; zero means one hour.
	Lookback time.Duration
	// MinDuration/MaxDuration bound the matching span's duration; zero means no bound.
	MinDuration, MaxDuration time.Duration
	// Limit is the maximum number of traces; zero means DefaultLimit. Jaeger's memory store
	// refuses a limit at or above its max_traces.
	Limit int
}

// Validate names the first bad field.
func (q Query) Validate() error {
	switch {
	case q.Service == "":
		return errors.New("jaeger: Query.Service is empty")
	case q.Lookback < 0:
		return fmt.Errorf("jaeger: Query.Lookback %v is negative", q.Lookback)
	case q.MinDuration < 0:
		return fmt.Errorf("jaeger: Query.MinDuration %v is negative", q.MinDuration)
	case q.MaxDuration < 0:
		return fmt.Errorf("jaeger: Query.MaxDuration %v is negative", q.MaxDuration)
	case q.MaxDuration != 0 && q.MaxDuration < q.MinDuration:
		return fmt.Errorf("jaeger: Query.MaxDuration %v is below MinDuration %v", q.MaxDuration, q.MinDuration)
	case q.Limit < 0:
		return fmt.Errorf("jaeger: Query.Limit %d is negative", q.Limit)
	case !q.StartMin.IsZero() && !q.StartMax.IsZero() && q.StartMax.Before(q.StartMin):
		return fmt.Errorf("jaeger: Query.StartMax %v is before StartMin %v", q.StartMax, q.StartMin)
	}
	return nil
}

func (q Query) values(now time.Time) url.Values {
	v := url.Values{}
	v.Set("query.service_name", q.Service)
	if q.Operation != "" {
		v.Set("query.operation_name", q.Operation)
	}
	max := q.StartMax
	if max.IsZero() {
		// A little slack: a span stamped by a clock read just after ours is still found.
		max = now.Add(time.Minute)
	}
	min := q.StartMin
	if min.IsZero() {
		lb := q.Lookback
		if lb == 0 {
			lb = time.Hour
		}
		min = now.Add(-lb)
	}
	v.Set("query.start_time_min", min.UTC().Format(time.RFC3339Nano))
	v.Set("query.start_time_max", max.UTC().Format(time.RFC3339Nano))
	if q.MinDuration > 0 {
		v.Set("query.duration_min", q.MinDuration.String())
	}
	if q.MaxDuration > 0 {
		v.Set("query.duration_max", q.MaxDuration.String())
	}
	// Always sent: without it api_v3 passes a search depth of 0, which the memory store rejects.
	limit := q.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	v.Set("query.num_traces", strconv.Itoa(limit))
	return v
}

// Services lists the service names Jaeger has seen, sorted.
func (c *Client) Services(ctx context.Context) ([]string, error) {
	var resp struct {
		Services []string `json:"services"`
	}
	if err := c.get(ctx, "/api/v3/services", nil, &resp); err != nil {
		return nil, err
	}
	sort.Strings(resp.Services)
	return resp.Services, nil
}

// Operation is a span name Jaeger has seen for a service, with its span kind as Jaeger reports
// it ("server", "client", ... or empty).
type Operation struct {
	Name     string `json:"name"`
	SpanKind string `json:"spanKind"`
}

// Operations lists the operations (span names) of service, sorted by name then kind.
func (c *Client) Operations(ctx context.Context, service string) ([]Operation, error) {
	if service == "" {
		return nil, errors.New("jaeger: Operations: empty service")
	}
	var resp struct {
		Operations []Operation `json:"operations"`
	}
	if err := c.get(ctx, "/api/v3/operations", url.Values{"service": {service}}, &resp); err != nil {
		return nil, err
	}
	sort.Slice(resp.Operations, func(i, j int) bool {
		a, b := resp.Operations[i], resp.Operations[j]
		return a.Name < b.Name || (a.Name == b.Name && a.SpanKind < b.SpanKind)
	})
	return resp.Operations, nil
}

// Traces returns up to limit recent traces (within lookback) that contain a span of service,
// newest first. Zero lookback means one hour; zero limit means DefaultLimit.
func (c *Client) Traces(ctx context.Context, service string, lookback time.Duration, limit int) ([]Trace, error) {
	return c.FindTraces(ctx, Query{Service: service, Lookback: lookback, Limit: limit})
}

// FindTraces returns the traces matching q, newest first. No match is an empty result, not an
// error.
func (c *Client) FindTraces(ctx context.Context, q Query) ([]Trace, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	var resp tracesResponse
	err := c.get(ctx, "/api/v3/traces", q.values(time.Now()), &resp)
	if noTraces(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	traces, err := resp.Result.traces()
	if err != nil {
		return nil, err
	}
	// Newest first, like Jaeger's search page; ties by id so the order is deterministic.
	sort.SliceStable(traces, func(i, j int) bool {
		si, sj := traceStart(traces[i]), traceStart(traces[j])
		if !si.Equal(sj) {
			return si.After(sj)
		}
		return traces[i].TraceID < traces[j].TraceID
	})
	return traces, nil
}

// Trace fetches one trace by its 32-hex-digit id; ErrTraceNotFound if Jaeger does not hold it.
func (c *Client) Trace(ctx context.Context, traceID string) (Trace, error) {
	id := strings.ToLower(traceID)
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		return Trace{}, fmt.Errorf("jaeger: trace id %q is not 32 hex digits", traceID)
	}
	var resp tracesResponse
	err := c.get(ctx, "/api/v3/traces/"+id, nil, &resp)
	if noTraces(err) {
		return Trace{}, fmt.Errorf("%w: %s", ErrTraceNotFound, id)
	}
	if err != nil {
		return Trace{}, err
	}
	traces, err := resp.Result.traces()
	if err != nil {
		return Trace{}, err
	}
	for _, t := range traces {
		if t.TraceID == id {
			return t, nil
		}
	}
	return Trace{}, fmt.Errorf("%w: %s (answer held %d other traces)", ErrTraceNotFound, id, len(traces))
}

// WaitForTrace polls until a trace with a span of service named operation (empty: any) satisfies
// pred (nil: any such trace), and returns it. Spans from different services arrive separately,
// so pred should check for everything the caller needs (e.g. all services present). On timeout
// the error says how many candidate traces were seen and why the last poll failed, if it did.
func (c *Client) WaitForTrace(ctx context.Context, service, operation string, pred func(Trace) bool) (Trace, error) {
	if _, ok := ctx.Deadline(); !ok {
		return Trace{}, errors.New("jaeger: WaitForTrace needs a context with a deadline")
	}
	q := Query{Service: service, Operation: operation, Limit: waitLimit}
	if err := q.Validate(); err != nil {
		return Trace{}, err
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var (
		lastErr error
		seen    int
	)
	for {
		traces, err := c.FindTraces(ctx, q)
		lastErr = err
		if err == nil {
			seen = len(traces)
			for _, t := range traces {
				if pred == nil || pred(t) {
					return t, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("jaeger: no trace of %s/%s matched: %v (last poll found %d candidate traces)", service, operationOrAny(operation), ctx.Err(), seen)
			if lastErr != nil && !errors.Is(lastErr, context.DeadlineExceeded) && !errors.Is(lastErr, context.Canceled) {
				msg += fmt.Sprintf("; last poll error: %v", lastErr)
			}
			return Trace{}, errors.New(msg)
		case <-tick.C:
		}
	}
}

func operationOrAny(op string) string {
	if op == "" {
		return "*"
	}
	return op
}

// APIError is a non-200 answer from the query service.
type APIError struct {
	Path    string
	Status  int
	Message string // api_v3's error message, or the start of the body
}

func (e *APIError) Error() string {
	return fmt.Sprintf("jaeger: GET %s: HTTP %d: %s", e.Path, e.Status, e.Message)
}

// noTraces reports api_v3's way of saying a search or lookup matched nothing: 404 with
// "No traces found". A 404 with another message (a wrong base URL, say) stays an error.
func noTraces(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound && strings.Contains(ae.Message, "No traces found")
}

// get performs a GET and decodes a 200 answer into out; any other status is an *APIError.
func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("jaeger: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("jaeger: GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("jaeger: GET %s: reading answer: %w", path, err)
	}
	if len(body) > maxResponseBytes {
		return fmt.Errorf("jaeger: GET %s: answer larger than %d bytes; narrow the query", path, maxResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return &APIError{Path: path, Status: resp.StatusCode, Message: errorMessage(body)}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("jaeger: GET %s: decoding answer: %w", path, err)
	}
	return nil
}

// errorMessage extracts api_v3's {"error":{"httpCode":..,"message":".."}}, or returns the body.
func errorMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func traceStart(t Trace) time.Time {
	var first time.Time
	for i, s := range t.Spans {
		if i == 0 || s.Start.Before(first) {
			first = s.Start
		}
	}
	return first
}

// The types below decode OTLP's JSON encoding (what api_v3 answers with): ids in hex, 64-bit
// integers as strings, enums as numbers.

type tracesResponse struct {
	Result otlpTraces `json:"result"`
}

type otlpTraces struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []otlpKeyValue `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Scope struct {
				Name string `json:"name"`
			} `json:"scope"`
			Spans []otlpSpan `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type otlpSpan struct {
	TraceID           string         `json:"traceId"`
	SpanID            string         `json:"spanId"`
	ParentSpanID      string         `json:"parentSpanId"`
	Name              string         `json:"name"`
	Kind              SpanKind       `json:"kind"`
	StartTimeUnixNano otlpUint64     `json:"startTimeUnixNano"`
	EndTimeUnixNano   otlpUint64     `json:"endTimeUnixNano"`
	Attributes        []otlpKeyValue `json:"attributes"`
	Events            []struct {
		TimeUnixNano otlpUint64     `json:"timeUnixNano"`
		Name         string         `json:"name"`
		Attributes   []otlpKeyValue `json:"attributes"`
	} `json:"events"`
	Links []struct {
		TraceID    string         `json:"traceId"`
		SpanID     string         `json:"spanId"`
		Attributes []otlpKeyValue `json:"attributes"`
	} `json:"links"`
	Status struct {
		Code    StatusCode `json:"code"`
		Message string     `json:"message"`
	} `json:"status"`
}

type otlpKeyValue struct {
	Key   string    `json:"key"`
	Value otlpValue `json:"value"`
}

type otlpValue struct {
	StringValue *string     `json:"stringValue"`
	BoolValue   *bool       `json:"boolValue"`
	IntValue    *otlpInt64  `json:"intValue"`
	DoubleValue *float64    `json:"doubleValue"`
	BytesValue  *string     `json:"bytesValue"`
	ArrayValue  *otlpValues `json:"arrayValue"`
	KvlistValue *struct {
		Values []otlpKeyValue `json:"values"`
	} `json:"kvlistValue"`
}

type otlpValues struct {
	Values []otlpValue `json:"values"`
}

// otlpUint64 accepts both a JSON string (OTLP/JSON's form) and a number.
type otlpUint64 uint64

func (u *otlpUint64) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseUint(strings.Trim(string(b), `"`), 10, 64)
	if err != nil {
		return fmt.Errorf("bad uint64 %s: %w", b, err)
	}
	*u = otlpUint64(v)
	return nil
}

type otlpInt64 int64

func (i *otlpInt64) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(strings.Trim(string(b), `"`), 10, 64)
	if err != nil {
		return fmt.Errorf("bad int64 %s: %w", b, err)
	}
	*i = otlpInt64(v)
	return nil
}

// UnmarshalJSON accepts OTLP's enum number or its protobuf name (SPAN_KIND_SERVER).
func (k *SpanKind) UnmarshalJSON(b []byte) error {
	n, err := enumJSON(b, "SPAN_KIND_", spanKindNames[:])
	if err != nil {
		return fmt.Errorf("span kind: %w", err)
	}
	*k = SpanKind(n)
	return nil
}

// UnmarshalJSON accepts OTLP's enum number or its protobuf name (STATUS_CODE_ERROR).
func (c *StatusCode) UnmarshalJSON(b []byte) error {
	n, err := enumJSON(b, "STATUS_CODE_", []string{"unset", "ok", "error"})
	if err != nil {
		return fmt.Errorf("status code: %w", err)
	}
	*c = StatusCode(n)
	return nil
}

func enumJSON(b []byte, prefix string, names []string) (int, error) {
	s := string(b)
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return 0, fmt.Errorf("bad enum %s", b)
	}
	for i, want := range names {
		if strings.EqualFold(strings.TrimPrefix(name, prefix), want) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown enum value %q", name)
}

func (v otlpValue) value() (any, error) {
	switch {
	case v.StringValue != nil:
		return *v.StringValue, nil
	case v.BoolValue != nil:
		return *v.BoolValue, nil
	case v.IntValue != nil:
		return int64(*v.IntValue), nil
	case v.DoubleValue != nil:
		return *v.DoubleValue, nil
	case v.BytesValue != nil:
		b, err := base64.StdEncoding.DecodeString(*v.BytesValue)
		if err != nil {
			return nil, fmt.Errorf("bytesValue: %w", err)
		}
		return b, nil
	case v.ArrayValue != nil:
		out := make([]any, 0, len(v.ArrayValue.Values))
		for _, e := range v.ArrayValue.Values {
			x, err := e.value()
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	case v.KvlistValue != nil:
		return attrMap(v.KvlistValue.Values)
	}
	return nil, nil // an empty AnyValue is valid OTLP
}

func attrMap(kvs []otlpKeyValue) (map[string]any, error) {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		v, err := kv.Value.value()
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", kv.Key, err)
		}
		m[kv.Key] = v
	}
	return m, nil
}

// traces groups the spans by trace id; within a trace, spans are in start order (ties by id).
func (o otlpTraces) traces() ([]Trace, error) {
	byID := map[string]*Trace{}
	var order []string
	for _, rs := range o.ResourceSpans {
		res, err := attrMap(rs.Resource.Attributes)
		if err != nil {
			return nil, fmt.Errorf("jaeger: resource: %w", err)
		}
		service, _ := res["service.name"].(string)
		for _, ss := range rs.ScopeSpans {
			for _, os := range ss.Spans {
				s, err := os.span(service, res, ss.Scope.Name)
				if err != nil {
					return nil, fmt.Errorf("jaeger: span %s/%s: %w", service, os.Name, err)
				}
				t := byID[s.TraceID]
				if t == nil {
					t = &Trace{TraceID: s.TraceID}
					byID[s.TraceID] = t
					order = append(order, s.TraceID)
				}
				t.Spans = append(t.Spans, s)
			}
		}
	}
	out := make([]Trace, 0, len(order))
	for _, id := range order {
		t := byID[id]
		sort.SliceStable(t.Spans, func(i, j int) bool {
			a, b := t.Spans[i], t.Spans[j]
			if !a.Start.Equal(b.Start) {
				return a.Start.Before(b.Start)
			}
			return a.SpanID < b.SpanID
		})
		out = append(out, *t)
	}
	return out, nil
}

func (o otlpSpan) span(service string, res map[string]any, scope string) (Span, error) {
	if !isHexID(o.TraceID, 32) {
		return Span{}, fmt.Errorf("trace id %q is not 32 hex digits", o.TraceID)
	}
	if !isHexID(o.SpanID, 16) {
		return Span{}, fmt.Errorf("span id %q is not 16 hex digits", o.SpanID)
	}
	if o.ParentSpanID != "" && !isHexID(o.ParentSpanID, 16) {
		return Span{}, fmt.Errorf("parent span id %q is not 16 hex digits", o.ParentSpanID)
	}
	attrs, err := attrMap(o.Attributes)
	if err != nil {
		return Span{}, err
	}
	s := Span{
		TraceID:       strings.ToLower(o.TraceID),
		SpanID:        strings.ToLower(o.SpanID),
		ParentSpanID:  strings.ToLower(o.ParentSpanID),
		Service:       service,
		Name:          o.Name,
		Kind:          o.Kind,
		Start:         time.Unix(0, int64(o.StartTimeUnixNano)),
		Attributes:    attrs,
		Resource:      res,
		Scope:         scope,
		StatusCode:    o.Status.Code,
		StatusMessage: o.Status.Message,
	}
	if o.EndTimeUnixNano >= o.StartTimeUnixNano {
		s.Duration = time.Duration(o.EndTimeUnixNano - o.StartTimeUnixNano)
	}
	for _, e := range o.Events {
		ea, err := attrMap(e.Attributes)
		if err != nil {
			return Span{}, fmt.Errorf("event %q: %w", e.Name, err)
		}
		s.Events = append(s.Events, Event{Name: e.Name, Time: time.Unix(0, int64(e.TimeUnixNano)), Attributes: ea})
	}
	for _, l := range o.Links {
		la, err := attrMap(l.Attributes)
		if err != nil {
			return Span{}, fmt.Errorf("link: %w", err)
		}
		s.Links = append(s.Links, Link{TraceID: strings.ToLower(l.TraceID), SpanID: strings.ToLower(l.SpanID), Attributes: la})
	}
	return s, nil
}

func isHexID(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
