package rest

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/grpc"

	"github.com/ferrygw/ferry/schemasvc/internal/protomap"
	"github.com/ferrygw/ferry/schemasvc/internal/registry"
	"github.com/ferrygw/ferry/schemasvc/internal/store/storetest"
	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
)

type fakeCatalog struct {
	catalogv1.CatalogServiceClient
}

// ResolveTopics knows one topic, "t": id BIGINT NOT NULL, name STRING.
func (fakeCatalog) ResolveTopics(_ context.Context, in *catalogv1.ResolveTopicsRequest, _ ...grpc.CallOption) (*catalogv1.ResolveTopicsResponse, error) {
	out := &catalogv1.ResolveTopicsResponse{}
	for _, t := range in.GetTopics() {
		if t != "t" {
			out.Results = append(out.Results, &catalogv1.TopicResult{Topic: t, ErrorCode: 3})
			continue
		}
		out.Results = append(out.Results, &catalogv1.TopicResult{Topic: t, Mapping: &catalogv1.TopicMapping{
			Topic: "t", Database: "db", Table: "t",
			Columns: []*catalogv1.Field{
				{Name: "id", Type: &catalogv1.DataType{Root: catalogv1.TypeRoot_TYPE_ROOT_BIGINT}},
				{Name: "name", Type: &catalogv1.DataType{Root: catalogv1.TypeRoot_TYPE_ROOT_STRING, Nullable: true}},
			},
			Mapping: &catalogv1.ColumnMapping{ValueFormat: catalogv1.ValueFormat_VALUE_FORMAT_AVRO, UnknownFields: catalogv1.UnknownFieldPolicy_UNKNOWN_FIELD_POLICY_REJECT},
		}})
	}
	return out, nil
}

type users map[string]string

func (u users) Authenticate(user, pw string) bool { return u[user] == pw && pw != "" }

func server(t *testing.T, auth Authenticator) *httptest.Server {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg, err := registry.New(&storetest.MemLog{}, fakeCatalog{}, logger, noop.NewMeterProvider())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(reg, auth, logger))
	t.Cleanup(srv.Close)
	return srv
}

type call struct {
	method, path, body string
	status             int
	want               string // the exact body, without the trailing newline
}

func run(t *testing.T, srv *httptest.Server, calls []call, header http.Header) {
	t.Helper()
	for _, c := range calls {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", ContentType)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := strings.TrimSuffix(string(b), "\n")
		if resp.StatusCode != c.status || got != c.want {
			t.Errorf("%s %s: %d %s\n want %d %s", c.method, c.path, resp.StatusCode, got, c.status, c.want)
		}
		if ct := resp.Header.Get("Content-Type"); ct != ContentType {
			t.Errorf("%s %s: content type %q", c.method, c.path, ct)
		}
	}
}

const v1 = `{"type":"record","name":"R","fields":[{"name":"id","type":"long"}]}`
const v2 = `{"type":"record","name":"R","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string"],"default":null}]}`

func quote(s string) string { return strings.ReplaceAll(s, `"`, `\"`) }

// The API answers each call with Confluent's status, body and error code.
func TestAPI(t *testing.T) {
	srv := server(t, nil)
	reg := func(s string) string { return `{"schema":"` + quote(s) + `"}` }
	// Ids are derived from the schema: read them from the answers.
	id1, id2 := registerID(t, srv, v1), ""
	calls := []call{
		{"GET", "/", "", 200, `{}`},
		{"GET", "/schemas/types", "", 200, `["JSON","PROTOBUF","AVRO"]`},
		{"GET", "/subjects", "", 200, `["t-value"]`},
		{"POST", "/subjects/t-value/versions", reg(v1), 200, `{"id":` + id1 + `}`},
		{"GET", "/subjects/t-value/versions", "", 200, `[1]`},
		{"GET", "/subjects/t-value/versions/1", "", 200, `{"subject":"t-value","version":1,"id":` + id1 + `,"schema":"` + quote(v1) + `"}`},
		{"GET", "/subjects/t-value/versions/latest/schema", "", 200, v1},
		{"GET", "/subjects/t-value/versions/1/referencedby", "", 200, `[]`},
		{"GET", "/subjects/t-value/versions/4/referencedby", "", 404, `{"error_code":40402,"message":"Version 4 not found."}`},
		{"GET", "/schemas/ids/" + id1, "", 200, `{"schema":"` + quote(v1) + `"}`},
		{"GET", "/schemas/ids/" + id1 + "/versions", "", 200, `[{"subject":"t-value","version":1}]`},
		{"GET", "/schemas/ids/" + id1 + "/subjects", "", 200, `["t-value"]`},
		{"POST", "/subjects/t-value", reg(v1), 200, `{"subject":"t-value","version":1,"id":` + id1 + `,"schema":"` + quote(v1) + `"}`},
		{"POST", "/subjects/t-value", reg(v2), 404, `{"error_code":40403,"message":"Schema not found"}`},
		{"GET", "/schemas/ids/7", "", 404, `{"error_code":40403,"message":"Schema 7 not found"}`},
		{"GET", "/subjects/t-value/versions/9", "", 404, `{"error_code":40402,"message":"Version 9 not found."}`},
		{"GET", "/subjects/t-value/versions/0", "", 422, `{"error_code":42202,"message":"The specified version '0' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\""}`},
		{"GET", "/subjects/x-value/versions", "", 404, `{"error_code":40401,"message":"Subject 'x-value' not found."}`},
		{"GET", "/subjects/a%2Fb-value/versions", "", 404, `{"error_code":40401,"message":"Subject 'a/b-value' not found."}`},
		{"GET", "/subjects/x-value/versions/latest", "", 404, `{"error_code":40401,"message":"Subject 'x-value' not found."}`},
		{"POST", "/subjects/t-value/versions", `{"schema":"{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"id\",\"type\":\"string\"}]}"}`, 409,
			`{"error_code":409,"message":"Schema being registered is incompatible with table db.t: field id: Avro string does not fit column type BIGINT NOT NULL"}`},
		{"POST", "/subjects/t-value/versions", `{"schema":"{"}`, 422, ""},
		{"POST", "/subjects/t-value/versions", `not json`, 400, ""},
		{"GET", "/config", "", 200, `{"compatibilityLevel":"BACKWARD"}`},
		{"GET", "/config/t-value", "", 404, `{"error_code":40408,"message":"Subject 't-value' does not have subject-level compatibility configured"}`},
		{"GET", "/config/t-value?defaultToGlobal=true", "", 200, `{"compatibilityLevel":"BACKWARD"}`},
		{"PUT", "/config/t-value", `{"compatibility":"FULL"}`, 200, `{"compatibility":"FULL"}`},
		{"GET", "/config/t-value", "", 200, `{"compatibilityLevel":"FULL"}`},
		{"PUT", "/config", `{"compatibility":"sideways"}`, 422, `{"error_code":42203,"message":"Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive"}`},
		{"DELETE", "/config/t-value", "", 200, `{"compatibilityLevel":"FULL"}`},
		{"DELETE", "/config/t-value", "", 404, `{"error_code":40401,"message":"Subject 't-value' not found."}`},
		{"POST", "/compatibility/subjects/t-value/versions/latest", reg(v2), 200, `{"is_compatible":true}`},
		{"POST", "/compatibility/subjects/t-value/versions/latest?verbose=true", `{"schema":"` + quote(`{"type":"record","name":"R","fields":[{"name":"idx","type":"long"}]}`) + `"}`, 200, ""},
		{"DELETE", "/subjects/t-value?permanent=true", "", 404, `{"error_code":40405,"message":"Subject 't-value' was not deleted first before being permanently deleted"}`},
		{"PATCH", "/subjects", "", 405, `{"error_code":405,"message":"HTTP 405 Method Not Allowed"}`},
		{"GET", "/nowhere", "", 404, `{"error_code":404,"message":"HTTP 404 Not Found"}`},
	}
	// Bodies left empty above are checked by their code only.
	for i, c := range calls {
		if c.want == "" {
			calls[i].want = "*"
		}
	}
	runLoose(t, srv, calls)
	id2 = registerID(t, srv, v2)
	js := `{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`
	// The JSON Schema's id, from a registry of its own: ids are the schema's.
	jsID := registerJSONID(t, js)
	run(t, srv, []call{
		{"GET", "/subjects/t-value/versions", "", 200, `[1,2]`},
		{"DELETE", "/subjects/t-value/versions/1", "", 200, `1`},
		{"GET", "/subjects/t-value/versions", "", 200, `[2]`},
		{"GET", "/subjects/t-value/versions?deleted=true", "", 200, `[1,2]`},
		{"GET", "/schemas/ids/" + id1, "", 200, `{"schema":"` + quote(v1) + `"}`},
		{"DELETE", "/subjects/t-value", "", 200, `[2]`},
		{"GET", "/subjects", "", 200, `[]`},
		{"DELETE", "/subjects/t-value?permanent=true", "", 200, `[1,2]`},
		{"POST", "/subjects/t-value/versions", `{"schemaType":"JSON","schema":"` + quote(js) + `"}`, 200, `{"id":` + jsID + `}`},
		{"GET", "/subjects/t-value/versions/latest", "", 200, `{"subject":"t-value","version":1,"id":` + jsID + `,"schemaType":"JSON","schema":"` + quote(js) + `"}`},
		{"GET", "/schemas/ids/" + jsID, "", 200, `{"schemaType":"JSON","schema":"` + quote(js) + `"}`},
		{"DELETE", "/subjects/t-value", "", 200, `[1]`},
		{"DELETE", "/subjects/t-value?permanent=true", "", 200, `[1]`},
		{"GET", "/subjects?deleted=true", "", 200, `[]`},
		{"GET", "/schemas/ids/" + id2, "", 200, `{"schema":"` + quote(v2) + `"}`},
	}, nil)
}

// runLoose is run, with "*" accepting any body of an error of that code.
func runLoose(t *testing.T, srv *httptest.Server, calls []call) {
	t.Helper()
	var exact []call
	for _, c := range calls {
		if c.want != "*" {
			exact = append(exact, c)
			continue
		}
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		code := `"error_code":` + strconv.Itoa(c.status)
		if c.status == 422 {
			code = `"error_code":42201`
		}
		if c.status == 200 {
			code = `"is_compatible":false,"messages":["Schema being registered is incompatible with table db.t: field idx: no column of that name`
		}
		if resp.StatusCode != c.status || !strings.Contains(string(b), code) {
			t.Errorf("%s %s: %d %s, want %d with %s", c.method, c.path, resp.StatusCode, b, c.status, code)
		}
	}
	run(t, srv, exact, nil)
}

func registerID(t *testing.T, srv *httptest.Server, schema string) string {
	t.Helper()
	resp, err := http.Post(srv.URL+"/subjects/t-value/versions", ContentType, strings.NewReader(`{"schema":"`+quote(schema)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(string(b)), `{"id":`), `}`)
	if resp.StatusCode != 200 || s == "" {
		t.Fatalf("register: %d %s", resp.StatusCode, b)
	}
	return s
}

// With users, a request needs HTTP Basic credentials of one of them.
func TestBasicAuth(t *testing.T) {
	srv := server(t, users{"alice": "secret"})
	basic := func(u, p string) http.Header {
		return http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p))}}
	}
	unauthorized := `{"error_code":40101,"message":"Unauthorized"}`
	run(t, srv, []call{{"GET", "/subjects", "", 401, unauthorized}}, nil)
	run(t, srv, []call{{"GET", "/subjects", "", 401, unauthorized}}, basic("alice", "wrong"))
	run(t, srv, []call{{"GET", "/subjects", "", 200, `[]`}}, basic("alice", "secret"))
}

func registerJSONID(t *testing.T, schema string) string {
	t.Helper()
	srv := server(t, nil)
	resp, err := http.Post(srv.URL+"/subjects/t-value/versions", ContentType, strings.NewReader(`{"schemaType":"JSON","schema":"`+quote(schema)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(string(b)), `{"id":`), `}`)
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("register JSON: %d %s", resp.StatusCode, b)
	}
	return id
}

// Bad input is logged, with what was wrong, and the server keeps serving.
func TestBadInputIsLogged(t *testing.T) {
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	reg, err := registry.New(&storetest.MemLog{}, fakeCatalog{}, logger, noop.NewMeterProvider())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(reg, nil, logger))
	defer srv.Close()
	run(t, srv, []call{
		{"POST", "/subjects/t-value/versions", `{"schema":`, 400, `{"error_code":400,"message":"Unrecognized request body: unexpected end of JSON input"}`},
		{"PUT", "/config", `{"compatibility":"SIDEWAYS"}`, 422, `{"error_code":42203,"message":"Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive"}`},
		{"GET", "/subjects", "", 200, `[]`},
	}, nil)
	for _, want := range []string{"schema registry request body unreadable", "code=42203"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// Protobuf schemas: registered as source or as a base64 descriptor,
// answered with schemaType PROTOBUF and their references, and with
// format=serialized as the descriptor confluent-kafka-python reads.
func TestProtobufAPI(t *testing.T) {
	srv := server(t, nil)
	kinds := `syntax = "proto3"; package kinds; enum Kind { TEA = 0; COFFEE = 1; }`
	r := `syntax = "proto3"; import "kinds.proto"; message R { int64 id = 1; kinds.Kind name = 2; }`
	refs := `[{"name":"kinds.proto","subject":"t-key","version":1}]`
	kindsID := post(t, srv, "/subjects/t-key/versions", `{"schemaType":"PROTOBUF","schema":"`+quote(kinds)+`"}`)
	id := post(t, srv, "/subjects/t-value/versions", `{"schemaType":"PROTOBUF","references":`+refs+`,"schema":"`+quote(r)+`"}`)
	ks, err := protomap.Parse(kinds, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := protomap.Parse(r, map[string]string{"kinds.proto": kinds})
	if err != nil {
		t.Fatal(err)
	}
	kindsSer, _ := ks.Serialized()
	rSer, _ := rs.Serialized()
	js := quote
	run(t, srv, []call{
		{"GET", "/schemas/ids/" + id, "", 200, `{"schemaType":"PROTOBUF","references":` + refs + `,"schema":"` + js(r) + `"}`},
		{"GET", "/schemas/ids/" + id + "?format=serialized", "", 200, `{"schemaType":"PROTOBUF","references":` + refs + `,"schema":"` + rSer + `"}`},
		{"GET", "/subjects/t-value/versions/latest?format=serialized", "", 200, `{"subject":"t-value","version":1,"id":` + id + `,"schemaType":"PROTOBUF","references":` + refs + `,"schema":"` + rSer + `"}`},
		{"GET", "/subjects/t-key/versions/1?format=serialized", "", 200, `{"subject":"t-key","version":1,"id":` + kindsID + `,"schemaType":"PROTOBUF","schema":"` + kindsSer + `"}`},
		// Other formats, and other schema types, answer the text.
		{"GET", "/schemas/ids/" + kindsID + "?format=ignore_extensions", "", 200, `{"schemaType":"PROTOBUF","schema":"` + js(kinds) + `"}`},
		// The descriptor is the same schema.
		{"POST", "/subjects/t-value/versions", `{"schemaType":"PROTOBUF","references":` + refs + `,"schema":"` + rSer + `"}`, 200, `{"id":` + id + `}`},
		{"POST", "/subjects/t-value", `{"schemaType":"PROTOBUF","references":` + refs + `,"schema":"` + rSer + `"}`, 200,
			`{"subject":"t-value","version":1,"id":` + id + `,"schemaType":"PROTOBUF","references":` + refs + `,"schema":"` + js(r) + `"}`},
		{"POST", "/subjects/t-value/versions", `{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; message R { string id = 1; }"}`, 409,
			`{"error_code":409,"message":"Schema being registered is incompatible with table db.t: field id: Protobuf string does not fit column type BIGINT NOT NULL"}`},
	}, nil)
	// Without its reference the schema does not compile: 42201.
	runLoose(t, srv, []call{{"POST", "/subjects/t-value/versions", `{"schemaType":"PROTOBUF","schema":"` + quote(r) + `"}`, 422, "*"}})
}

// post sends body and returns the id answered.
func post(t *testing.T, srv *httptest.Server, path, body string) string {
	t.Helper()
	resp, err := http.Post(srv.URL+path, ContentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(string(b)), `{"id":`), `}`)
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	return id
}
