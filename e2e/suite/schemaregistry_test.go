package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// confluentPython is the confluent-kafka venv's python (tools/install-clients.sh).
func confluentPython(t *testing.T, e *suiteEnv) string {
	t.Helper()
	py := filepath.Join(e.stack.Config().Root, ".cache", "clients", "venv", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("confluent-kafka venv missing (tools/install-clients.sh): %v", err)
	}
	return py
}

// TestSchemaRegistryPythonClient: confluent-kafka-python's SchemaRegistryClient and Avro serdes
// against schemasvc, on a table of the real Fluss cluster: the latest version of a subject
// nobody registered is derived from the table, a registration gets one id however often it is
// made, a schema that does not fit the table is refused with 409 naming the field, a
// serializer that only uses the latest version frames records with the registered id, and the
// JSON Schema serializer registers its schema and frames records with its id. A Protobuf schema
// registers, is read back with schemaType PROTOBUF, a Protobuf schema that does not fit is refused
// naming the field, and the Protobuf serializer (which registers the message's descriptor in
// base64) gets the id of the same schema registered as .proto source, its deserializer decoding
// the record with the descriptor the registry serves (format=serialized).
func TestSchemaRegistryPythonClient(t *testing.T) {
	e, f := need(t)
	py := confluentPython(t, e)
	db := dbName(t, f, "schema_registry")
	topic := topicTable(t, f, db, "orders", 1, []testenv.Column{
		{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"},
		{Name: "price", Type: "DECIMAL(10, 2)"}, {Name: "at", Type: "TIMESTAMP_LTZ(3)"},
	}, nil)
	jsonTopic := topicTable(t, f, db, "events", 1, []testenv.Column{{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "kind", Type: "STRING"}}, nil)
	jsonSchema := `{"$schema":"http://json-schema.org/draft-07/schema#","title":"Event","type":"object","properties":{"id":{"type":"integer"},"kind":{"type":["string","null"]}},"required":["id"]}`
	protoTopic := topicTable(t, f, db, "items", 1, []testenv.Column{
		{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "name", Type: "STRING"}, {Name: "at", Type: "TIMESTAMP_LTZ(3)"},
	}, nil)
	// The message the Python script builds as a descriptor, as source.
	protoSchema := "syntax = \"proto3\";\npackage ferry.e2e;\n\nimport \"google/protobuf/timestamp.proto\";\n\n" +
		"// An item, as its producer writes it.\nmessage Item {\n  int64 id = 1;\n  string name = 2;\n  google.protobuf.Timestamp at = 3;\n}\n"
	protoBad := `syntax = "proto3"; package ferry.e2e; message Item { optional int64 id = 1; }`
	subject := topic + "-value"
	schema := `{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string"],"default":null}]}`
	bad := `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}`
	url := e.stack.Config().RegistryURL()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-B", filepath.Join(e.stack.Config().Root, "e2e", "clients", "python", "schema_registry.py"),
		url, subject, schema, bad, `{"id": 7, "name": "seven"}`, jsonTopic, jsonSchema, `{"id": 8, "kind": "eight"}`,
		protoTopic, protoSchema, protoBad, `{"id": 9, "name": "nine", "at_ms": 1767225600123}`)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("schema_registry.py: %v\n%s", err, stderr.String())
	}
	var got struct {
		Latest struct {
			ID, Version int
			Schema      string
		}
		Register []int
		Lookup   struct {
			ID, Version int
			Subject     string
		}
		ByID    string `json:"by_id"`
		Refused *struct {
			HTTPStatus int `json:"http_status"`
			Code       int
			Message    string
		}
		Serde struct {
			Magic, ID int
			Decoded   map[string]any
		}
		JSON struct {
			Magic, ID    int
			RegisteredID int `json:"registered_id"`
			Type         string
			Decoded      map[string]any
		}
		Protobuf struct {
			Register int
			Latest   struct {
				ID, Version int
				Type        string
			}
			Lookup  struct{ ID, Version int }
			ByID    struct{ Type, Schema string } `json:"by_id"`
			Refused *struct {
				HTTPStatus int `json:"http_status"`
				Code       int
				Message    string
			}
			Serde struct {
				Magic, ID, Index int
				LatestID         int `json:"latest_id"`
				Decoded          struct {
					ID   int
					Name string
					AtMs int64 `json:"at_ms"`
				}
			}
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("output %s: %v", out, err)
	}
	t.Logf("python client saw: %s", out)

	// Derived from the table: every column, nullable ones as ["null", T].
	wantDerived := `{"fields":[{"name":"id","type":"long"},{"default":null,"name":"name","type":["null","string"]},` +
		`{"default":null,"name":"price","type":["null",{"logicalType":"decimal","precision":10,"scale":2,"type":"bytes"}]},` +
		`{"default":null,"name":"at","type":["null",{"logicalType":"timestamp-millis","type":"long"}]}],` +
		`"name":"orders","namespace":"` + db + `","type":"record"}`
	if got.Latest.Version != 1 || got.Latest.ID <= 0 || sortedJSON(t, got.Latest.Schema) != sortedJSON(t, wantDerived) {
		t.Errorf("derived latest: v%d id %d %s\nwant %s", got.Latest.Version, got.Latest.ID, got.Latest.Schema, wantDerived)
	}
	if len(got.Register) != 2 || got.Register[0] != got.Register[1] || got.Register[0] == got.Latest.ID {
		t.Errorf("register twice: ids %v (derived %d)", got.Register, got.Latest.ID)
	}
	id := got.Register[0]
	if got.Lookup.ID != id || got.Lookup.Version != 2 || got.Lookup.Subject != subject {
		t.Errorf("lookup: %+v, want id %d version 2", got.Lookup, id)
	}
	if got.ByID != schema {
		t.Errorf("schema by id: %s", got.ByID)
	}
	if r := got.Refused; r == nil || r.HTTPStatus != 409 || r.Code != 409 ||
		!strings.Contains(r.Message, "field id: Avro string does not fit column type BIGINT NOT NULL") {
		t.Errorf("incompatible registration: %+v", got.Refused)
	}
	if got.Serde.Magic != 0 || got.Serde.ID != id || got.Serde.Decoded["id"] != float64(7) || got.Serde.Decoded["name"] != "seven" {
		t.Errorf("serde: %+v, want magic 0, id %d, the record back", got.Serde, id)
	}

	if j := got.JSON; j.Magic != 0 || j.ID <= 0 || j.ID != j.RegisteredID || j.Type != "JSON" || j.Decoded["id"] != float64(8) || j.Decoded["kind"] != "eight" {
		t.Errorf("JSON serde: %+v", got.JSON)
	}

	p := got.Protobuf
	if p.Register <= 0 || p.Latest.ID != p.Register || p.Latest.Version != 1 || p.Latest.Type != "PROTOBUF" {
		t.Errorf("protobuf registration %d, latest %+v", p.Register, p.Latest)
	}
	if p.Lookup.ID != p.Register || p.Lookup.Version != 1 || p.ByID.Type != "PROTOBUF" || p.ByID.Schema != protoSchema {
		t.Errorf("protobuf lookup %+v, by id %+v", p.Lookup, p.ByID)
	}
	if r := p.Refused; r == nil || r.HTTPStatus != 409 || r.Code != 409 ||
		!strings.Contains(r.Message, "field id: int64 may be absent (it is declared with presence: optional, a wrapper or in a oneof) but the column is BIGINT NOT NULL") {
		t.Errorf("incompatible protobuf registration: %+v", p.Refused)
	}
	if s := p.Serde; s.Magic != 0 || s.ID != p.Register || s.Index != 0 || s.LatestID != p.Register ||
		s.Decoded.ID != 9 || s.Decoded.Name != "nine" || s.Decoded.AtMs != 1767225600123 {
		t.Errorf("protobuf serde: %+v, want magic 0, id %d, message index [0], the record back", s, p.Register)
	}
	var protoVersions []int
	getJSON(t, url+"/subjects/"+protoTopic+"-value/versions", 200, &protoVersions)
	if fmt.Sprint(protoVersions) != "[1]" {
		t.Errorf("protobuf versions %v: the descriptor must be the registered version", protoVersions)
	}

	// The refused registration left nothing behind.
	var versions []int
	getJSON(t, url+"/subjects/"+subject+"/versions", 200, &versions)
	if len(versions) != 2 {
		t.Errorf("versions %v after a refused registration", versions)
	}
}

// TestSchemaRegistryIDsDurableAndShared: ids come from the Fluss table, not from the instance: a
// schemasvc restarted gives the same answers, and a second schemasvc gives a schema the id the
// first gave it, and the first finds schemas the second registered.
func TestSchemaRegistryIDsDurableAndShared(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "schema_registry_ids")
	topic := topicTable(t, f, db, "events", 1, []testenv.Column{{Name: "id", Type: "BIGINT NOT NULL"}, {Name: "kind", Type: "STRING"}}, nil)
	first := e.stack.Config().RegistryURL()
	schemaA := `{"type":"record","name":"A","fields":[{"name":"id","type":"long"}]}`
	schemaB := `{"type":"record","name":"A","fields":[{"name":"id","type":"long"},{"name":"kind","type":["null","string"],"default":null}]}`
	idA := register(t, first, topic+"-value", schemaA)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := e.stack.Restart(ctx, process(e.stack, stack.Schema)); err != nil {
		t.Fatalf("restart: %v", err)
	}
	var got struct{ Schema string }
	getJSON(t, fmt.Sprintf("%s/schemas/ids/%d", first, idA), 200, &got)
	if got.Schema != schemaA {
		t.Errorf("after restart, id %d is %q", idA, got.Schema)
	}
	if id := register(t, first, topic+"-value", schemaA); id != idA {
		t.Errorf("after restart, schema A registers as %d, was %d", id, idA)
	}

	// A second instance of the registry, on ports of its own.
	spec, ok := e.stack.Spec(stack.Schema)
	if !ok {
		t.Fatal("no schemasvc spec")
	}
	ports, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	host := e.stack.Config().Host
	second := cloneSpec(spec, "schemasvc-2", map[string]int{"grpc": ports[0], "registry": ports[1]})
	second.Env["FERRY_LISTEN"] = net.JoinHostPort(host, strconv.Itoa(ports[0]))
	second.Env["FERRY_REGISTRY_LISTEN"] = net.JoinHostPort(host, strconv.Itoa(ports[1]))
	if err := e.stack.StartService(ctx, second); err != nil {
		t.Fatalf("start second schemasvc: %v", err)
	}
	t.Cleanup(func() { _ = e.stack.StopService("schemasvc-2") })
	other := "http://" + net.JoinHostPort(host, strconv.Itoa(ports[1]))

	if id := register(t, other, topic+"-value", schemaA); id != idA {
		t.Errorf("second instance gives schema A id %d, first gave %d", id, idA)
	}
	idB := register(t, other, topic+"-value", schemaB)
	getJSON(t, fmt.Sprintf("%s/schemas/ids/%d", first, idB), 200, &got)
	if got.Schema != schemaB {
		t.Errorf("first instance reads id %d as %q", idB, got.Schema)
	}
	if id := register(t, first, topic+"-value", schemaB); id != idB {
		t.Errorf("first instance gives schema B id %d, second gave %d", id, idB)
	}
	var versions []int
	getJSON(t, first+"/subjects/"+topic+"-value/versions", 200, &versions)
	if fmt.Sprint(versions) != "[1 2]" {
		t.Errorf("versions %v, want [1 2]", versions)
	}
}

func register(t *testing.T, base, subject, schema string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"schema": schema})
	resp, err := http.Post(base+"/subjects/"+subject+"/versions", "application/vnd.schemaregistry.v1+json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct{ ID int }
	if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil || out.ID <= 0 {
		t.Fatalf("register at %s: %d %s", base, resp.StatusCode, b)
	}
	return out.ID
}

func getJSON(t *testing.T, url string, status int, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %d %s, want %d", url, resp.StatusCode, b, status)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %s: %v", url, b, err)
	}
}

// sortedJSON is the JSON text s with its object keys sorted.
func sortedJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return canonical(t, v)
}

// TestSchemaRegistryBasicAuth: a schemasvc given frontdoor's users file (made by `frontdoor
// hash-password`) and SCRAM credentials file (made by `frontdoor scram-users`) lets
// confluent-kafka-python's client in with HTTP Basic credentials of a user of either file, and
// answers 401 (error code 40101) to a wrong password and to no credentials.
func TestSchemaRegistryBasicAuth(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "schema_registry_auth")
	topic := topicTable(t, f, db, "t", 1, []testenv.Column{{Name: "id", Type: "BIGINT NOT NULL"}}, nil)
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte(hashPassword(t, "alice", "plain-pw")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	scram := filepath.Join(dir, "scram")
	scramUsers(t, scram, "scram-pw", "add", "bob")

	spec, ok := e.stack.Spec(stack.Schema)
	if !ok {
		t.Fatal("no schemasvc spec")
	}
	ports, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	host := e.stack.Config().Host
	secured := cloneSpec(spec, "schemasvc-auth", map[string]int{"grpc": ports[0], "registry": ports[1]})
	secured.Env["FERRY_LISTEN"] = net.JoinHostPort(host, strconv.Itoa(ports[0]))
	secured.Env["FERRY_REGISTRY_LISTEN"] = net.JoinHostPort(host, strconv.Itoa(ports[1]))
	secured.Env["FERRY_REGISTRY_USERS_FILE"] = users
	secured.Env["FERRY_REGISTRY_SCRAM_FILE"] = scram
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := e.stack.StartService(ctx, secured); err != nil {
		t.Fatalf("start schemasvc-auth: %v", err)
	}
	t.Cleanup(func() { _ = e.stack.StopService("schemasvc-auth") })
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(ports[1]))

	py := confluentPython(t, e)
	script := filepath.Join(e.stack.Config().Root, "e2e", "clients", "python", "schema_registry_auth.py")
	call := func(userInfo string) map[string]int {
		cmd := exec.CommandContext(ctx, py, "-B", script, url, userInfo, topic+"-value")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("schema_registry_auth.py %s: %v\n%s", userInfo, err, stderr.String())
		}
		var got map[string]int
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		return got
	}
	alice, bob := call("alice:plain-pw"), call("bob:scram-pw")
	if alice["latest_id"] <= 0 || bob["latest_id"] != alice["latest_id"] {
		t.Errorf("PLAIN user %v, SCRAM user %v: want the derived schema's id for both", alice, bob)
	}
	for _, bad := range []string{"alice:scram-pw", "bob:plain-pw", "carol:plain-pw"} {
		if got := call(bad); got["http_status"] != 401 || got["code"] != 40101 {
			t.Errorf("%s: %v, want 401 with 40101", bad, got)
		}
	}
	resp, err := http.Get(url + "/subjects")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("no credentials: %d %v", resp.StatusCode, resp.Header)
	}
}
