package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrygw/ferry/e2e/apicurio"
	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// refCall is one REST call of the reference check, sent to Ferry and to Apicurio alike.
type refCall struct {
	method, path string
	// body is the request body (JSON), empty for none.
	body string
	// accept is the Accept header; empty sends Confluent's own media type.
	accept string
	// contentType is the body's Content-Type; empty sends Confluent's own media type.
	contentType string
	// save keeps the answer's "id" under this name, for {id:name} in later paths.
	save string
	// idList: the answer is a list of schema ids, compared through the id mapping.
	idList bool
	// differ lists the differences this call is expected to show, by where they are: "status",
	// "content-type", or a path into the JSON body ("$" the whole body, "$.message", "$[1]").
	// A difference found elsewhere fails the test, and so does an expected one not found.
	differ map[string]string
}

// Why answers differ. Most are Apicurio departing from Confluent's registry, whose behaviour
// (its documentation and source) Ferry follows; the rest are Ferry's by design. Every one is
// listed in docs/schema-registry.md#reference-check.
const (
	// Every error answer: Apicurio sends errors as application/json whatever the Accept header
	// asks for; Confluent negotiates them as any answer (its v1 type first), and so does Ferry.
	whyErrorType = "Apicurio sends errors as application/json whatever Accept asks for"
	// Error messages Apicurio words its own way; Ferry's are Confluent's (its Errors class).
	whyWording = "Apicurio's own wording of the error; Ferry's is Confluent's"
	// The 409's message: Ferry's has Confluent's form, with its own compatibility checker's
	// details; Apicurio names its Java exception.
	whyIncompatible = "the 409's message: Ferry's has Confluent's form with its own checker's details; Apicurio's names its Java exception"
	// Invalid schemas: each registry quotes its own parser.
	whyParser         = "each registry quotes its own schema parser (Ferry hamba/avro, Apicurio its type detection)"
	whyVerbose        = "with verbose=true Confluent lists the reasons in messages (an empty list when compatible); Apicurio leaves messages out"
	whyNormalize      = "Apicurio adds normalize:false to the answer; Confluent answers the request back without null fields"
	whyVersionName    = "Apicurio answers a version that is not a number 40402 (404); Confluent 42202 (422)"
	whyNoSubjectLevel = "a subject without its own level: Confluent answers GET 40408 and DELETE 40401; Apicurio 200 NONE"
	whyDeletedLevel   = "Apicurio keeps NONE as the subject's level after DELETE /config/{subject}; Confluent falls back to the global level"
	whySerialized     = "format=serialized: Confluent answers the FileDescriptorProto in base64; Apicurio its raw bytes as a string"
	whyLookupType     = "Apicurio's lookup answer leaves out schemaType PROTOBUF; Confluent names every type but AVRO"
	whyDeleteStatus   = "Apicurio sends 40406 and 40407 with HTTP 409; Confluent with 404 (RestNotFoundException)"
	whyIDsKept        = "by design: Ferry keeps every schema by id while its table lives (Fluss may hold records framed with it); Confluent and Apicurio forget an id whose last version is permanently deleted"
	whyBadBody        = "Apicurio answers a body that is not JSON in plain text; Confluent with its JSON error (error_code 400)"
	whyNoTable        = "by design: a subject must name a table (TopicNameStrategy), Ferry refuses the registration with 42201; Apicurio takes any subject"
	whyTableFit       = "by design: Ferry checks a registration against the table (409: a union of two types fits no column); Apicurio registers it"
	whyDerived        = "by design: Ferry derives the latest version of a subject without live versions from its table; Apicurio answers 40401"
	whyNoBodyType     = "a body declared text/plain: Apicurio answers 415 with an empty body; Confluent with its JSON error (error_code 415)"
	whyNoPath         = "Apicurio answers an unknown path with an empty body; Confluent with its JSON error (error_code 404)"
	whyClientAccept   = "Apicurio answers application/json to the Accept header Confluent's clients send; Confluent its v1 type"
	whyNotAcceptable  = "an Accept header that admits no JSON type: Apicurio answers 406 with an empty body; Confluent with its JSON error (error_code 406)"
)

// differ lists where a call's answers differ, all for one reason.
func differ(why string, where ...string) map[string]string {
	m := map[string]string{}
	for _, w := range where {
		m[w] = why
	}
	return m
}

// TestSchemaRegistryMatchesApicurio is the reference check of the Schema Registry's REST API:
// one scripted sequence of calls (registrations of Avro, Protobuf and JSON Schema, lookups,
// listings, every not-found code, invalid and incompatible schemas, compatibility checks,
// global and subject configs, soft and permanent deletions) sent to a schemasvc of its own and
// to a real Apicurio Registry 3.3.3 (its Confluent-compatible API, tools/install-apicurio.sh),
// compared status by status, Content-Type by Content-Type and body field by field: keys present,
// null against absent, types and values; ids through a mapping that must stay one to one (Ferry
// derives ids from the schema, Apicurio counts). Every difference is either listed with its
// reason at its call (docs/schema-registry.md#reference-check) or fails the test.
func TestSchemaRegistryMatchesApicurio(t *testing.T) {
	e, f := need(t)
	if !apicurio.Installed() {
		if os.Getenv("FERRY_TEST_REQUIRE_CLIENTS") == "1" {
			t.Fatal(apicurio.ErrNotInstalled)
		}
		t.Skip(apicurio.ErrNotInstalled)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Apicurio starts (about 5 s) while the tables and Ferry's registry are made.
	type started struct {
		r   *apicurio.Registry
		err error
	}
	// In the stack's run directory, which a failed run keeps: Apicurio's log is there.
	apicurioDir := filepath.Join(e.stack.Dir(), "apicurio-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	ready := make(chan started, 1)
	go func() {
		r, err := apicurio.Start(ctx, apicurioDir)
		ready <- started{r, err}
	}()
	var (
		once sync.Once
		res  started
	)
	waitApicurio := func() started {
		once.Do(func() { res = <-ready })
		return res
	}
	// Runs after ctx is cancelled, so a start still under way gives up at once.
	t.Cleanup(func() {
		s := waitApicurio()
		if s.r == nil {
			return
		}
		if t.Failed() {
			t.Logf("apicurio log: %s", s.r.Log)
		}
		if err := s.r.Stop(); err != nil {
			t.Error(err)
		}
	})

	db := dbName(t, f, "registry_ref")
	orders := topicTable(t, f, db, "orders", 1, []testenv.Column{
		{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}, {Name: "qty", Type: "INT"}}, nil)
	items := topicTable(t, f, db, "items", 1, []testenv.Column{{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}}, nil)
	events := topicTable(t, f, db, "events", 1, []testenv.Column{{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "kind", Type: "STRING"}}, nil)
	customers := topicTable(t, f, db, "customers", 1, []testenv.Column{{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}}, nil)
	shipments := topicTable(t, f, db, "shipments", 1, []testenv.Column{
		{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "customer", Type: "ROW<id BIGINT, name STRING>"}}, nil)
	ferry := startOwnRegistry(ctx, t, e, db+".registry")

	s := waitApicurio()
	if s.err != nil {
		t.Fatal(s.err)
	}
	ref := s.r

	S, P, J, C, SH := orders+"-value", items+"-value", events+"-value", customers+"-value", shipments+"-value"
	X := db + ".nosuch-value"
	ns := "com.example." + db
	v1 := `{"type":"record","name":"Order","namespace":"` + ns + `","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string"],"default":null}]}`
	// qty without a default: data written with v1 cannot be read with it (BACKWARD).
	v2bad := `{"type":"record","name":"Order","namespace":"` + ns + `","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string"],"default":null},{"name":"qty","type":"int"}]}`
	v2 := `{"type":"record","name":"Order","namespace":"` + ns + `","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string"],"default":null},{"name":"qty","type":["null","int"],"default":null}]}`
	other := `{"type":"record","name":"Order","namespace":"` + ns + `","fields":[{"name":"id","type":"long"}]}`
	broken := `{"type":"record","name":"Broken"}`
	proto := "syntax = \"proto3\";\npackage " + db + ";\n\nmessage Item {\n  int64 id = 1;\n  string name = 2;\n}\n"
	jsonSchema := `{"$schema":"http://json-schema.org/draft-07/schema#","title":"Event` + db + `","type":"object","properties":{"id":{"type":"integer"},"kind":{"type":["string","null"]}},"required":["id"]}`

	customer := `{"type":"record","name":"Customer","namespace":"` + ns + `","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string"],"default":null}]}`
	// A compatible next version of Customer (name's union widened) that no column fits: a union
	// with two types besides null.
	customerWide := `{"type":"record","name":"Customer","namespace":"` + ns + `","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string","int"],"default":null}]}`
	// A shipment's customer is the Customer type of subject C, by reference.
	shipment := schemaJSON(t, map[string]any{
		"schema":     `{"type":"record","name":"Shipment","namespace":"` + ns + `","fields":[{"name":"id","type":"long"},{"name":"customer","type":["null","` + ns + `.Customer"],"default":null}]}`,
		"references": []map[string]any{{"name": ns + ".Customer", "subject": C, "version": 1}},
	})

	reg := func(schema string) string { return schemaJSON(t, map[string]any{"schema": schema}) }
	typed := func(schema, typ string) string {
		return schemaJSON(t, map[string]any{"schema": schema, "schemaType": typ})
	}
	calls := []refCall{
		{method: "GET", path: "/schemas/types"},
		{method: "GET", path: "/config"},
		{method: "GET", path: "/subjects"},
		{method: "POST", path: "/subjects/" + S + "/versions", body: reg(v1), save: "v1"},
		{method: "POST", path: "/subjects/" + S + "/versions", body: reg(v1)},
		{method: "POST", path: "/subjects/" + S, body: reg(v1)},
		{method: "POST", path: "/subjects/" + S, body: reg(other), differ: differ(whyWording, "$.message")},
		{method: "POST", path: "/subjects/" + X, body: reg(v1)},
		{method: "GET", path: "/subjects"},
		{method: "GET", path: "/subjects/" + S + "/versions"},
		{method: "GET", path: "/subjects/" + S + "/versions/1"},
		{method: "GET", path: "/subjects/" + S + "/versions/latest"},
		{method: "GET", path: "/subjects/" + S + "/versions/latest/schema"},
		{method: "GET", path: "/schemas/ids/{id:v1}"},
		{method: "GET", path: "/schemas/ids/{id:v1}/schema"},
		{method: "GET", path: "/schemas/ids/{id:v1}/versions"},
		{method: "GET", path: "/schemas/ids/{id:v1}/subjects"},
		{method: "GET", path: "/subjects/" + X + "/versions"},
		{method: "GET", path: "/subjects/" + S + "/versions/7"},
		{method: "GET", path: "/subjects/" + S + "/versions/abc", differ: differ(whyVersionName, "status", "$.error_code", "$.message")},
		{method: "GET", path: "/schemas/ids/1999999999", differ: differ(whyWording, "$.message")},
		{method: "POST", path: "/subjects/" + S + "/versions", body: reg(broken), differ: differ(whyParser, "$.message")},
		{method: "POST", path: "/compatibility/subjects/" + S + "/versions/latest?verbose=true", body: reg(v2bad), differ: differ(whyVerbose, "$.messages")},
		{method: "POST", path: "/compatibility/subjects/" + S + "/versions/latest", body: reg(v2bad)},
		{method: "POST", path: "/subjects/" + S + "/versions", body: reg(v2bad), differ: differ(whyIncompatible, "$.message")},
		{method: "POST", path: "/compatibility/subjects/" + S + "/versions/latest?verbose=true", body: reg(v2), differ: differ(whyVerbose, "$.messages")},
		{method: "POST", path: "/subjects/" + S + "/versions", body: reg(v2), save: "v2"},
		{method: "GET", path: "/subjects/" + S + "/versions"},
		{method: "PUT", path: "/config", body: `{"compatibility":"FULL"}`, differ: differ(whyNormalize, "$.normalize")},
		{method: "GET", path: "/config"},
		{method: "PUT", path: "/config/" + S, body: `{"compatibility":"NONE"}`, differ: differ(whyNormalize, "$.normalize")},
		{method: "GET", path: "/config/" + S},
		{method: "DELETE", path: "/config/" + S},
		{method: "DELETE", path: "/config/" + S, differ: differ(whyNoSubjectLevel, "status", "$")},
		{method: "GET", path: "/config/" + S, differ: differ(whyNoSubjectLevel, "status", "$")},
		{method: "GET", path: "/config/" + S + "?defaultToGlobal=true", differ: differ(whyDeletedLevel, "$.compatibilityLevel")},
		{method: "DELETE", path: "/config"},
		{method: "GET", path: "/config"},
		{method: "PUT", path: "/config", body: `{"compatibility":"BACKWARD"}`, differ: differ(whyNormalize, "$.normalize")},
		{method: "PUT", path: "/config", body: `{"compatibility":"SIDEWAYS"}`, differ: differ(whyWording, "$.message")},
		{method: "POST", path: "/subjects/" + P + "/versions", body: typed(proto, "PROTOBUF"), save: "p1"},
		{method: "GET", path: "/subjects/" + P + "/versions/1"},
		{method: "GET", path: "/subjects/" + P + "/versions/1?format=serialized", differ: differ(whySerialized, "$.schema")},
		{method: "GET", path: "/schemas/ids/{id:p1}"},
		{method: "GET", path: "/schemas/ids/{id:p1}?format=serialized", differ: differ(whySerialized, "$.schema")},
		{method: "POST", path: "/subjects/" + P, body: typed(proto, "PROTOBUF"), differ: differ(whyLookupType, "$.schemaType")},
		{method: "POST", path: "/subjects/" + J + "/versions", body: typed(jsonSchema, "JSON"), save: "j1"},
		{method: "GET", path: "/subjects/" + J + "/versions/latest"},
		{method: "GET", path: "/schemas/ids/{id:j1}"},
		{method: "POST", path: "/subjects/" + C + "/versions", body: reg(customer), save: "c1"},
		{method: "POST", path: "/subjects/" + SH + "/versions", body: shipment, save: "sh1"},
		{method: "GET", path: "/subjects/" + SH + "/versions/1"},
		{method: "GET", path: "/schemas/ids/{id:sh1}"},
		{method: "POST", path: "/subjects/" + SH, body: shipment},
		{method: "GET", path: "/subjects/" + C + "/versions/1/referencedby", idList: true},
		{method: "DELETE", path: "/subjects/" + C, differ: differ(whyWording, "$.message")},
		{method: "DELETE", path: "/subjects/" + S + "/versions/1"},
		{method: "GET", path: "/subjects/" + S + "/versions"},
		{method: "GET", path: "/subjects/" + S + "/versions?deleted=true"},
		{method: "GET", path: "/subjects/" + S + "/versions/1"},
		{method: "GET", path: "/subjects/" + S + "/versions/1?deleted=true"},
		{method: "DELETE", path: "/subjects/" + S + "/versions/1", differ: map[string]string{"status": whyDeleteStatus, "$.message": whyWording}},
		{method: "DELETE", path: "/subjects/" + S + "/versions/2?permanent=true", differ: map[string]string{"status": whyDeleteStatus, "$.message": whyWording}},
		{method: "DELETE", path: "/subjects/" + S + "/versions/1?permanent=true"},
		{method: "DELETE", path: "/subjects/" + S},
		{method: "GET", path: "/subjects"},
		{method: "GET", path: "/subjects?deleted=true"},
		{method: "DELETE", path: "/subjects/" + S, differ: differ(whyWording, "$.message")},
		{method: "GET", path: "/subjects/" + S + "/versions"},
		{method: "DELETE", path: "/subjects/" + S + "?permanent=true"},
		{method: "GET", path: "/subjects?deleted=true"},
		{method: "GET", path: "/schemas/ids/{id:v2}", differ: differ(whyIDsKept, "status", "content-type", "$")},
		{method: "POST", path: "/subjects/" + P + "/versions", body: "this is not JSON", differ: differ(whyBadBody, "$")},
		{method: "POST", path: "/subjects/" + P + "/versions", body: typed(proto, "PROTOBUF"), contentType: "text/plain", differ: differ(whyNoBodyType, "$")},
		{method: "GET", path: "/no/such/path", differ: differ(whyNoPath, "$")},
		{method: "GET", path: "/schemas/types", accept: "application/json"},
		{method: "GET", path: "/schemas/types", accept: "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json; qs=0.9, application/json; qs=0.5",
			differ: differ(whyClientAccept, "content-type")},
		{method: "GET", path: "/schemas/types", accept: "text/plain", differ: differ(whyNotAcceptable, "$")},
		// What only Ferry has, last, as Apicurio's state then departs from Ferry's.
		{method: "POST", path: "/subjects/" + X + "/versions", body: reg(v1), differ: differ(whyNoTable, "status", "$")},
		{method: "POST", path: "/subjects/" + C + "/versions", body: reg(customerWide), differ: differ(whyTableFit, "status", "$")},
		{method: "GET", path: "/subjects/" + S + "/versions/latest", differ: differ(whyDerived, "status", "$")},
	}

	check := &refCheck{t: t, ferry: ferry, apicurio: ref.URL,
		ids: map[string][2]int64{}, fromFerry: map[int64]int64{}, fromApicurio: map[int64]int64{}}
	for i, c := range calls {
		check.run(ctx, i+1, c)
	}
	if check.errorTypes == 0 {
		t.Errorf("no error answer of Apicurio's was application/json: %s no longer holds", whyErrorType)
	}
	t.Logf("%d calls compared; %d schema ids mapped; %d error answers of Apicurio's in application/json (%s)",
		len(calls), len(check.fromFerry), check.errorTypes, whyErrorType)
}

// startOwnRegistry starts a schemasvc of its own, keeping its state in table (a fresh registry,
// as the reference's is: the suite's registry holds other tests' subjects and global config),
// and returns its REST API's URL.
func startOwnRegistry(ctx context.Context, t *testing.T, e *suiteEnv, table string) string {
	t.Helper()
	spec, ok := e.stack.Spec(stack.Schema)
	if !ok {
		t.Fatal("no schemasvc spec")
	}
	ports, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	host := e.stack.Config().Host
	name := "schemasvc-ref"
	own := cloneSpec(spec, name, map[string]int{"grpc": ports[0], "registry": ports[1]})
	own.Env["FERRY_LISTEN"] = net.JoinHostPort(host, strconv.Itoa(ports[0]))
	own.Env["FERRY_REGISTRY_LISTEN"] = net.JoinHostPort(host, strconv.Itoa(ports[1]))
	own.Env["FERRY_SCHEMAS_TABLE"] = table
	if err := e.stack.StartService(ctx, own); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() { _ = e.stack.StopService(name) })
	return "http://" + net.JoinHostPort(host, strconv.Itoa(ports[1]))
}

func schemaJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// refCheck sends calls to both registries and compares the answers.
type refCheck struct {
	t               *testing.T
	ferry, apicurio string
	// ids are the ids saved by name: Ferry's, Apicurio's.
	ids map[string][2]int64
	// fromFerry and fromApicurio are the id mapping, one to one.
	fromFerry, fromApicurio map[int64]int64
	// errorTypes counts the error answers Apicurio sent as application/json (whyErrorType).
	errorTypes int
}

// refAnswer is one registry's answer.
type refAnswer struct {
	status      int
	contentType string
	raw         []byte
	// body is the decoded JSON, or nil (with isJSON false) for a body that is not JSON.
	body   any
	isJSON bool
}

var idPlaceholder = regexp.MustCompile(`\{id:([a-z0-9]+)\}`)

func (c *refCheck) run(ctx context.Context, n int, call refCall) {
	t := c.t
	t.Helper()
	label := fmt.Sprintf("call %d: %s %s", n, call.method, call.path)
	path := func(side int) string {
		return idPlaceholder.ReplaceAllStringFunc(call.path, func(m string) string {
			ids, ok := c.ids[idPlaceholder.FindStringSubmatch(m)[1]]
			if !ok {
				t.Fatalf("%s: %s was not saved", label, m)
			}
			return strconv.FormatInt(ids[side], 10)
		})
	}
	fa := c.send(ctx, label, c.ferry, path(0), call)
	aa := c.send(ctx, label, c.apicurio, path(1), call)

	var diffs []refDiff
	if fa.status != aa.status {
		diffs = append(diffs, refDiff{"status", strconv.Itoa(fa.status), strconv.Itoa(aa.status)})
	}
	// Apicurio's errors are application/json whatever was asked for: expected of every error
	// answer (whyErrorType) unless the call expects its own difference there.
	errorType := aa.status >= 400 && aa.contentType == "application/json" && fa.contentType == answerTypeFor(call)
	if fa.contentType != aa.contentType {
		if _, own := call.differ["content-type"]; errorType && !own {
			c.errorTypes++
		} else {
			diffs = append(diffs, refDiff{"content-type", fa.contentType, aa.contentType})
		}
	}
	switch {
	case call.idList && fa.isJSON && aa.isJSON:
		diffs = append(diffs, c.compareIDs(fa.body, aa.body)...)
	case fa.isJSON && aa.isJSON:
		diffs = append(diffs, c.compare("$", fa.body, aa.body)...)
	case !bytes.Equal(fa.raw, aa.raw):
		diffs = append(diffs, refDiff{"$", string(fa.raw), string(aa.raw)})
	}

	// Every difference must be expected at its place (or a place that contains it), and every
	// expected one must occur.
	used := map[string]bool{}
	for _, d := range diffs {
		where, ok := expectedAt(call.differ, d.where)
		if !ok {
			t.Errorf("%s: %s differs: Ferry %s, Apicurio %s", label, d.where, d.ferry, d.apicurio)
			continue
		}
		used[where] = true
		t.Logf("%s: %s differs as expected (%s): Ferry %s, Apicurio %s", label, d.where, call.differ[where], d.ferry, d.apicurio)
	}
	for where, why := range call.differ {
		if !used[where] {
			t.Errorf("%s: expected %s to differ (%s), but both answered %d %s", label, where, why, fa.status, fa.raw)
		}
	}
	if call.save != "" {
		c.ids[call.save] = [2]int64{answerID(fa), answerID(aa)}
	}
}

// answerTypeFor is the media type Confluent's registry answers call in.
func answerTypeFor(call refCall) string {
	if call.accept == "application/json" {
		return "application/json"
	}
	return "application/vnd.schemaregistry.v1+json"
}

// compareIDs compares two lists of schema ids through the id mapping.
func (c *refCheck) compareIDs(f, a any) []refDiff {
	fl, fok := f.([]any)
	al, aok := a.([]any)
	if !fok || !aok || len(fl) != len(al) {
		return []refDiff{{"$", fmt.Sprint(f), fmt.Sprint(a)}}
	}
	var out []refDiff
	for i := range fl {
		if why, ok := c.sameID(fl[i], al[i]); !ok {
			out = append(out, refDiff{fmt.Sprintf("$[%d]", i), fmt.Sprint(fl[i]), fmt.Sprintf("%v (%s)", al[i], why)})
		}
	}
	return out
}

func answerID(a refAnswer) int64 {
	m, _ := a.body.(map[string]any)
	n, _ := m["id"].(json.Number)
	id, _ := n.Int64()
	return id
}

// expectedAt finds the expectation covering where: where itself or a place containing it.
func expectedAt(differ map[string]string, where string) (string, bool) {
	for w := where; ; {
		if _, ok := differ[w]; ok {
			return w, true
		}
		i := strings.LastIndexAny(w, ".[")
		if i <= 0 {
			return "", false
		}
		w = w[:i]
	}
}

func (c *refCheck) send(ctx context.Context, label, base, path string, call refCall) refAnswer {
	t := c.t
	t.Helper()
	var body io.Reader
	if call.body != "" {
		body = strings.NewReader(call.body)
	}
	req, err := http.NewRequestWithContext(ctx, call.method, base+path, body)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	if call.body != "" {
		ct := call.contentType
		if ct == "" {
			ct = "application/vnd.schemaregistry.v1+json"
		}
		req.Header.Set("Content-Type", ct)
	}
	accept := call.accept
	if accept == "" {
		accept = "application/vnd.schemaregistry.v1+json"
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s at %s: %v", label, base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s at %s: %v", label, base, err)
	}
	a := refAnswer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), raw: raw}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&a.body); err == nil && !dec.More() {
		a.isJSON = true
	}
	return a
}

// refDiff is one difference: where, and what each side answered there.
type refDiff struct{ where, ferry, apicurio string }

// compare walks both JSON values; an "id" is compared through the id mapping.
func (c *refCheck) compare(where string, f, a any) []refDiff {
	show := func(v any) string {
		if v == nil {
			return "null"
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	switch fv := f.(type) {
	case map[string]any:
		av, ok := a.(map[string]any)
		if !ok {
			return []refDiff{{where, show(f), show(a)}}
		}
		keys := map[string]bool{}
		for k := range fv {
			keys[k] = true
		}
		for k := range av {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		var out []refDiff
		for _, k := range sorted {
			fk, fok := fv[k]
			ak, aok := av[k]
			switch {
			case !fok:
				out = append(out, refDiff{where + "." + k, "absent", show(ak)})
			case !aok:
				out = append(out, refDiff{where + "." + k, show(fk), "absent"})
			case k == "id":
				if d, ok := c.sameID(fk, ak); !ok {
					out = append(out, refDiff{where + ".id", show(fk), show(ak) + " (" + d + ")"})
				}
			default:
				out = append(out, c.compare(where+"."+k, fk, ak)...)
			}
		}
		return out
	case []any:
		av, ok := a.([]any)
		if !ok || len(av) != len(fv) {
			return []refDiff{{where, show(f), show(a)}}
		}
		var out []refDiff
		for i := range fv {
			out = append(out, c.compare(fmt.Sprintf("%s[%d]", where, i), fv[i], av[i])...)
		}
		return out
	default:
		// Scalars: the same JSON type and value (json.Number keeps 1 and 1.0 apart).
		if fmt.Sprintf("%T", f) != fmt.Sprintf("%T", a) || show(f) != show(a) {
			return []refDiff{{where, show(f), show(a)}}
		}
		return nil
	}
}

// sameID reports whether Ferry's id f and Apicurio's id a name the same schema: the first time
// either is seen they are paired, and a pair never changes.
func (c *refCheck) sameID(f, a any) (string, bool) {
	fn, fok := f.(json.Number)
	an, aok := a.(json.Number)
	if !fok || !aok {
		return "not both numbers", false
	}
	fi, err1 := fn.Int64()
	ai, err2 := an.Int64()
	if err1 != nil || err2 != nil {
		return "not both integers", false
	}
	if got, ok := c.fromFerry[fi]; ok {
		if got != ai {
			return fmt.Sprintf("Ferry's id was paired with Apicurio's %d", got), false
		}
		return "", true
	}
	if got, ok := c.fromApicurio[ai]; ok {
		return fmt.Sprintf("Apicurio's id was paired with Ferry's %d", got), false
	}
	c.fromFerry[fi], c.fromApicurio[ai] = ai, fi
	return "", true
}
