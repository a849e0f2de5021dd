package rest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNegotiate(t *testing.T) {
	for _, c := range []struct {
		accept []string
		want   string // "" for 406
	}{
		{nil, ContentType},
		{[]string{"*/*"}, ContentType},
		{[]string{"application/json"}, "application/json"},
		{[]string{"application/vnd.schemaregistry+json"}, "application/vnd.schemaregistry+json"},
		{[]string{"application/*"}, ContentType},
		// What Confluent's Java and Python clients send.
		{[]string{"application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json; qs=0.9, application/json; qs=0.5"}, ContentType},
		{[]string{"application/vnd.schemaregistry.v1+json", "application/json"}, ContentType},
		// The client's q outweighs the server's preference.
		{[]string{"application/vnd.schemaregistry.v1+json;q=0.1, application/json"}, "application/json"},
		// A more specific range decides over a wildcard.
		{[]string{"application/vnd.schemaregistry.v1+json;q=0, */*"}, "application/vnd.schemaregistry+json"},
		{[]string{"text/html,application/xhtml+xml,*/*;q=0.8"}, ContentType},
		{[]string{"text/plain"}, ""},
		{[]string{"application/json;q=0"}, ""},
		// Unparseable ranges are ignored.
		{[]string{"garbage"}, ContentType},
	} {
		got, ok := negotiate(c.accept)
		if !ok {
			got = ""
		}
		if got != c.want {
			t.Errorf("Accept %q: %q, want %q", c.accept, got, c.want)
		}
	}
}

// TestAnswersNegotiated: answers, errors included, come in the negotiated type; an Accept header
// that admits no JSON type is answered 406 with Confluent's error body.
func TestAnswersNegotiated(t *testing.T) {
	srv := server(t, nil)
	for _, c := range []struct {
		path, accept, wantType string
		status                 int
		wantBody               string
	}{
		{"/schemas/types", "application/json", "application/json", 200, `["JSON","PROTOBUF","AVRO"]`},
		{"/schemas/types", "", ContentType, 200, `["JSON","PROTOBUF","AVRO"]`},
		{"/schemas/ids/7", "application/json", "application/json", 404, `{"error_code":40403,"message":"Schema 7 not found"}`},
		{"/no/such/path", "application/json", "application/json", 404, `{"error_code":404,"message":"HTTP 404 Not Found"}`},
		{"/schemas/types", "text/plain", ContentType, 406, `{"error_code":406,"message":"HTTP 406 Not Acceptable"}`},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+c.path, nil)
		if c.accept != "" {
			req.Header.Set("Accept", c.accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != c.wantType || strings.TrimSpace(string(b)) != c.wantBody {
			t.Errorf("GET %s Accept %q: %d %s %s, want %d %s %s", c.path, c.accept, resp.StatusCode, resp.Header.Get("Content-Type"), b, c.status, c.wantType, c.wantBody)
		}
	}
}

// TestBodyTypes: a request body declared as a type Confluent's registry does
// not read is answered 415 and not registered.
func TestBodyTypes(t *testing.T) {
	srv := server(t, nil)
	body := `{"schema":"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"}]}"}`
	for _, c := range []struct {
		contentType string
		status      int
	}{
		{"text/plain", 415},
		{"application/x-www-form-urlencoded", 415},
		{"not a media type", 415},
		{"", 200},
		{"application/octet-stream", 200},
		{"application/json; charset=utf-8", 200},
		{"application/vnd.schemaregistry+json", 200},
		{ContentType, 200},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/subjects/t-value/versions", strings.NewReader(body))
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("Content-Type %q: %d %s, want %d", c.contentType, resp.StatusCode, b, c.status)
		}
		if c.status == 415 && strings.TrimSpace(string(b)) != `{"error_code":415,"message":"HTTP 415 Unsupported Media Type"}` {
			t.Errorf("Content-Type %q: %s", c.contentType, b)
		}
	}
	resp, err := http.Get(srv.URL + "/subjects/t-value/versions")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(b)) != "[1]" {
		t.Errorf("versions after the refused registrations: %s", b)
	}
}

// TestRouteSeenByWrapper: the route the mux matched reaches the request a
// wrapper handed in (otelhttp labels metrics and spans with it), though
// negotiation serves a copy of it.
func TestRouteSeenByWrapper(t *testing.T) {
	h := server(t, nil).Config.Handler
	for _, c := range []struct{ accept, pattern string }{
		{"", "GET /subjects/{subject}/versions/{version}"},
		{"application/json", "GET /subjects/{subject}/versions/{version}"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/subjects/x-value/versions/latest", nil)
		if c.accept != "" {
			r.Header.Set("Accept", c.accept)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if r.Pattern != c.pattern {
			t.Errorf("Accept %q: route %q, want %q", c.accept, r.Pattern, c.pattern)
		}
	}
}
