package rest

import (
	"context"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// answerTypes are the media types an answer can be sent as, with the quality Confluent's registry
// gives each: its own versioned type first, then its unversioned one, then plain JSON. A client
// that accepts several gets the best; one that accepts only application/json gets that.
var answerTypes = []struct {
	name    string
	quality float64
}{
	{ContentType, 1},
	{"application/vnd.schemaregistry+json", 0.9},
	{"application/json", 0.5},
}

type answerTypeKey struct{}

// answerType is the media type negotiated for r (ContentType when nothing was negotiated).
func answerType(r *http.Request) string {
	if t, ok := r.Context().Value(answerTypeKey{}).(string); ok {
		return t
	}
	return ContentType
}

// negotiated picks each request's answer type from its Accept header, as Confluent's registry
// does; an Accept header that admits none of them is answered 406.
func negotiated(next http.Handler, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, ok := negotiate(r.Header.Values("Accept"))
		if !ok {
			logger.InfoContext(r.Context(), "schema registry request refused: no acceptable media type", "method", r.Method, "path", r.URL.Path, "accept", r.Header.Values("Accept"))
			writeError(w, r, http.StatusNotAcceptable, http.StatusNotAcceptable, "HTTP 406 Not Acceptable")
			return
		}
		routed := r.WithContext(context.WithValue(r.Context(), answerTypeKey{}, t))
		next.ServeHTTP(w, routed)
		// The mux set the route on the copy; otelhttp labels its metrics and
		// span with the one on r.
		r.Pattern = routed.Pattern
	})
}

// negotiate picks the answer type for the Accept header values: the type with the highest
// product of the client's q for it (from the most specific range that matches it, RFC 9110
// 12.5.1) and the server's quality; the first of equals. No header accepts every type.
func negotiate(accept []string) (string, bool) {
	var ranges []mediaRange
	for _, v := range accept {
		for _, part := range strings.Split(v, ",") {
			if mr, ok := parseRange(part); ok {
				ranges = append(ranges, mr)
			}
		}
	}
	if len(ranges) == 0 {
		return ContentType, true
	}
	best, bestScore := "", 0.0
	for _, at := range answerTypes {
		q, specificity := 0.0, -1
		for _, mr := range ranges {
			if s := mr.matches(at.name); s > specificity {
				q, specificity = mr.q, s
			}
		}
		if score := q * at.quality; score > bestScore {
			best, bestScore = at.name, score
		}
	}
	return best, best != ""
}

// mediaRange is one element of an Accept header.
type mediaRange struct {
	typ, sub string
	q        float64
}

func parseRange(s string) (mediaRange, bool) {
	params := strings.Split(s, ";")
	typ, sub, ok := strings.Cut(strings.ToLower(strings.TrimSpace(params[0])), "/")
	if !ok || typ == "" || sub == "" {
		return mediaRange{}, false
	}
	mr := mediaRange{typ: typ, sub: sub, q: 1}
	for _, p := range params[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || q < 0 || q > 1 {
				return mediaRange{}, false
			}
			mr.q = q
		}
	}
	return mr, true
}

// matches reports how specifically the range names the media type name: 2 exactly, 1 by
// type/*, 0 by */*, -1 not at all.
func (mr mediaRange) matches(name string) int {
	typ, sub, _ := strings.Cut(name, "/")
	switch {
	case mr.typ == typ && mr.sub == sub:
		return 2
	case mr.typ == typ && mr.sub == "*":
		return 1
	case mr.typ == "*" && mr.sub == "*":
		return 0
	}
	return -1
}

// bodyType reports whether a request body of media type ct is read: the
// JSON types answers are sent as, and application/octet-stream, which
// Confluent's registry reads as JSON because clients that name no type get
// it. No Content-Type is read too.
func bodyType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	for _, at := range answerTypes {
		if mt == at.name {
			return true
		}
	}
	return mt == "application/octet-stream"
}
