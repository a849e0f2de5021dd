package jaeger

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Trace is every span Jaeger holds for one trace id, in start-time order.
type Trace struct {
	TraceID string // 32 lowercase hex digits
	Spans   []Span
}

// Span is one span in the shape the OpenTelemetry SDK exported it.
type Span struct {
	TraceID      string
	SpanID       string // 16 lowercase hex digits
	ParentSpanID string // empty for a root span
	// Service is the resource's service.name.
	Service string
	// Name is the span name, which Jaeger calls the operation.
	Name     string
	Kind     SpanKind
	Start    time.Time
	Duration time.Duration
	// Attributes are the span's attributes: string, bool, int64, float64, []byte, []any or
	// map[string]any values, as typed by the exporter.
	Attributes map[string]any
	// Resource holds the resource attributes (service.name among them).
	Resource map[string]any
	// Scope is the instrumentation scope (tracer) name.
	Scope         string
	StatusCode    StatusCode
	StatusMessage string
	Events        []Event
	Links         []Link
}

// Event is a timestamped span event.
type Event struct {
	Name       string
	Time       time.Time
	Attributes map[string]any
}

// Link points at a span in this or another trace.
type Link struct {
	TraceID    string
	SpanID     string
	Attributes map[string]any
}

// SpanKind mirrors OTLP's span kinds.
type SpanKind int

// OTLP's span kind numbers.
const (
	SpanKindUnspecified SpanKind = iota
	SpanKindInternal
	SpanKindServer
	SpanKindClient
	SpanKindProducer
	SpanKindConsumer
)

var spanKindNames = [...]string{"unspecified", "internal", "server", "client", "producer", "consumer"}

func (k SpanKind) String() string {
	if k >= 0 && int(k) < len(spanKindNames) {
		return spanKindNames[k]
	}
	return fmt.Sprintf("SpanKind(%d)", int(k))
}

// StatusCode mirrors OTLP's status codes.
type StatusCode int

// OTLP's status code numbers.
const (
	StatusUnset StatusCode = iota
	StatusOK
	StatusError
)

func (c StatusCode) String() string {
	switch c {
	case StatusUnset:
		return "unset"
	case StatusOK:
		return "ok"
	case StatusError:
		return "error"
	}
	return fmt.Sprintf("StatusCode(%d)", int(c))
}

// End is Start plus Duration.
func (s Span) End() time.Time { return s.Start.Add(s.Duration) }

// String is a one-line summary for test failure messages.
func (s Span) String() string {
	parent := s.ParentSpanID
	if parent == "" {
		parent = "root"
	}
	return fmt.Sprintf("%s/%s span=%s parent=%s kind=%s dur=%v", s.Service, s.Name, s.SpanID, parent, s.Kind, s.Duration)
}

// Span returns the span with the given id.
func (t Trace) Span(spanID string) (Span, bool) {
	for _, s := range t.Spans {
		if s.SpanID == spanID {
			return s, true
		}
	}
	return Span{}, false
}

// Services lists the distinct service names in the trace, sorted.
func (t Trace) Services() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range t.Spans {
		if !seen[s.Service] {
			seen[s.Service] = true
			out = append(out, s.Service)
		}
	}
	sort.Strings(out)
	return out
}

// Find returns the spans of service with span name operation, in start order. An empty service
// or operation matches any.
func (t Trace) Find(service, operation string) []Span {
	var out []Span
	for _, s := range t.Spans {
		if (service == "" || s.Service == service) && (operation == "" || s.Name == operation) {
			out = append(out, s)
		}
	}
	return out
}

// Children returns the spans whose parent is spanID, in start order.
func (t Trace) Children(spanID string) []Span {
	var out []Span
	for _, s := range t.Spans {
		if s.ParentSpanID == spanID {
			out = append(out, s)
		}
	}
	return out
}

// Roots returns the spans without a parent in this trace: spans with no parent id, and spans
// whose parent Jaeger does not hold (not exported, or evicted).
func (t Trace) Roots() []Span {
	var out []Span
	for _, s := range t.Spans {
		if s.ParentSpanID == "" {
			out = append(out, s)
			continue
		}
		if _, ok := t.Span(s.ParentSpanID); !ok {
			out = append(out, s)
		}
	}
	return out
}

// IsAncestor reports whether ancestorID is on the parent chain of spanID (not spanID itself).
func (t Trace) IsAncestor(ancestorID, spanID string) bool {
	s, ok := t.Span(spanID)
	// The bound guards against a malformed trace with a parent cycle.
	for i := 0; ok && s.ParentSpanID != "" && i <= len(t.Spans); i++ {
		if s.ParentSpanID == ancestorID {
			return true
		}
		s, ok = t.Span(s.ParentSpanID)
	}
	return false
}

// Duration is the time from the earliest span start to the latest span end.
func (t Trace) Duration() time.Duration {
	if len(t.Spans) == 0 {
		return 0
	}
	first, last := t.Spans[0].Start, t.Spans[0].End()
	for _, s := range t.Spans[1:] {
		if s.Start.Before(first) {
			first = s.Start
		}
		if s.End().After(last) {
			last = s.End()
		}
	}
	return last.Sub(first)
}

// Tree renders the trace as an indented parent/child tree with offsets from the trace start and
// durations: the view a person would get from Jaeger's timeline, for logs and failure messages.
func (t Trace) Tree() string {
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s (%d spans, %v)\n", t.TraceID, len(t.Spans), t.Duration().Round(time.Microsecond))
	if len(t.Spans) == 0 {
		return b.String()
	}
	start := t.Spans[0].Start
	for _, s := range t.Spans {
		if s.Start.Before(start) {
			start = s.Start
		}
	}
	printed := map[string]bool{}
	var walk func(s Span, depth int)
	walk = func(s Span, depth int) {
		if printed[s.SpanID] {
			return // a parent cycle in malformed data must not recurse forever
		}
		printed[s.SpanID] = true
		fmt.Fprintf(&b, "%s%s %s  at +%v  took %v  (%s)", strings.Repeat("  ", depth), s.Service, s.Name, s.Start.Sub(start).Round(time.Microsecond), s.Duration.Round(time.Microsecond), s.Kind)
		if s.StatusCode == StatusError {
			fmt.Fprintf(&b, " ERROR %s", s.StatusMessage)
		}
		b.WriteByte('\n')
		for _, c := range t.Children(s.SpanID) {
			walk(c, depth+1)
		}
	}
	for _, r := range t.Roots() {
		walk(r, 0)
	}
	return b.String()
}
