// Package rest serves the Confluent Schema Registry REST API (the subset
// serializers, deserializers and common tools call) over a
// registry.Registry, with Confluent's content type, bodies and error codes.
package rest

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/ferrygw/ferry/schemasvc/internal/registry"
	"github.com/ferrygw/ferry/schemasvc/internal/store"
)

// ContentType is what answers are sent as unless the Accept header asks for
// another JSON type (accept.go).
const ContentType = "application/vnd.schemaregistry.v1+json"

// Authenticator checks a user's password; nil lets every request in.
type Authenticator interface {
	Authenticate(user, password string) bool
}

// maxBody bounds a request body: schemas are small.
const maxBody = 8 << 20

// Handler returns the API's handler.
func Handler(reg *registry.Registry, auth Authenticator, logger *slog.Logger) http.Handler {
	a := &api{reg: reg, logger: logger}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { a.reply(w, r, map[string]any{}) })
	mux.HandleFunc("GET /schemas/types", func(w http.ResponseWriter, r *http.Request) { a.reply(w, r, registry.Types()) })
	mux.HandleFunc("GET /schemas/ids/{id}", a.schemaByID)
	mux.HandleFunc("GET /schemas/ids/{id}/schema", a.rawSchemaByID)
	mux.HandleFunc("GET /schemas/ids/{id}/versions", a.versionsOfID)
	mux.HandleFunc("GET /schemas/ids/{id}/subjects", a.subjectsOfID)
	mux.HandleFunc("GET /subjects", a.subjects)
	mux.HandleFunc("POST /subjects/{subject}", a.lookup)
	mux.HandleFunc("DELETE /subjects/{subject}", a.deleteSubject)
	mux.HandleFunc("GET /subjects/{subject}/versions", a.versions)
	mux.HandleFunc("POST /subjects/{subject}/versions", a.register)
	mux.HandleFunc("GET /subjects/{subject}/versions/{version}", a.version)
	mux.HandleFunc("GET /subjects/{subject}/versions/{version}/schema", a.rawVersion)
	mux.HandleFunc("DELETE /subjects/{subject}/versions/{version}", a.deleteVersion)
	mux.HandleFunc("GET /subjects/{subject}/versions/{version}/referencedby", a.referencedBy)
	mux.HandleFunc("GET /config", a.getConfig)
	mux.HandleFunc("PUT /config", a.putConfig)
	mux.HandleFunc("DELETE /config", a.deleteConfig)
	mux.HandleFunc("GET /config/{subject}", a.getConfig)
	mux.HandleFunc("PUT /config/{subject}", a.putConfig)
	mux.HandleFunc("DELETE /config/{subject}", a.deleteConfig)
	mux.HandleFunc("POST /compatibility/subjects/{subject}/versions/{version}", a.compatibility)
	mux.HandleFunc("POST /compatibility/subjects/{subject}/versions", a.compatibility)
	var h http.Handler = mux
	h = notFoundAsJSON(h)
	if auth != nil {
		h = basicAuth(h, auth, logger)
	}
	return negotiated(h, logger)
}

type api struct {
	reg    *registry.Registry
	logger *slog.Logger
}

// schemaBody is a schema in requests and answers.
type schemaBody struct {
	Subject    string               `json:"subject,omitempty"`
	Version    int32                `json:"version,omitempty"`
	ID         int32                `json:"id,omitempty"`
	SchemaType string               `json:"schemaType,omitempty"`
	References []registry.Reference `json:"references,omitempty"`
	Schema     string               `json:"schema"`
}

func body(s *store.Schema) schemaBody {
	b := schemaBody{Schema: s.Text, References: registry.References(s)}
	if s.Type != registry.TypeAvro {
		b.SchemaType = s.Type // Confluent leaves out AVRO, the default
	}
	return b
}

func subjectBody(v *registry.SubjectSchema) schemaBody {
	b := body(v.Schema)
	b.Subject, b.Version, b.ID = v.Subject, v.Version, v.Schema.ID
	return b
}

// formatted answers b with its schema in the request's format= (for
// Protobuf, "serialized": a base64 FileDescriptorProto).
func (a *api) formatted(w http.ResponseWriter, r *http.Request, b schemaBody, s *store.Schema) {
	if f := r.URL.Query().Get("format"); f != "" {
		text, err := a.reg.Formatted(r.Context(), s, f)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		b.Schema = text
	}
	a.reply(w, r, b)
}

func (a *api) reply(w http.ResponseWriter, r *http.Request, v any) {
	w.Header().Set("Content-Type", answerType(r))
	if err := json.NewEncoder(w).Encode(v); err != nil {
		a.logger.DebugContext(r.Context(), "writing answer", "path", r.URL.Path, "err", err)
	}
}

// fail answers err as Confluent does: {"error_code": ..., "message": ...}
// with the code's HTTP status. Store failures are logged as errors, bad
// input (422) at info, and "not found" at debug: serializers look a
// schema up before registering it, so those are the normal flow.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	e := registry.AsError(err)
	switch e.HTTPStatus() {
	case http.StatusInternalServerError:
		a.logger.ErrorContext(r.Context(), "schema registry request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	case http.StatusUnprocessableEntity:
		a.logger.InfoContext(r.Context(), "schema registry request refused", "method", r.Method, "path", r.URL.Path, "code", e.Code, "err", e.Message)
	default:
		a.logger.DebugContext(r.Context(), "schema registry request refused", "method", r.Method, "path", r.URL.Path, "code", e.Code, "err", e.Message)
	}
	writeError(w, r, e.HTTPStatus(), e.Code, e.Message)
}

func writeError(w http.ResponseWriter, r *http.Request, status, code int, msg string) {
	w.Header().Set("Content-Type", answerType(r))
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error_code": code, "message": msg})
}

// decode reads a JSON request body into v; a body that is not JSON is
// answered 400, and one declared as another media type 415, as Confluent's
// registry does.
func (a *api) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); !bodyType(ct) {
		a.logger.InfoContext(r.Context(), "schema registry request body of an unsupported media type", "method", r.Method, "path", r.URL.Path, "content_type", ct)
		writeError(w, r, http.StatusUnsupportedMediaType, http.StatusUnsupportedMediaType, "HTTP 415 Unsupported Media Type")
		return false
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		a.logger.InfoContext(r.Context(), "schema registry request body unreadable", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, r, http.StatusBadRequest, http.StatusBadRequest, "Unrecognized request body: "+err.Error())
		return false
	}
	return true
}

func boolParam(r *http.Request, name string) bool {
	b, _ := strconv.ParseBool(r.URL.Query().Get(name))
	return b
}

func (a *api) pathID(w http.ResponseWriter, r *http.Request) (int32, bool) {
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil {
		// Confluent answers a malformed id as an unknown one.
		a.fail(w, r, &registry.Error{Code: registry.CodeSchemaNotFound, Message: "Schema " + r.PathValue("id") + " not found"})
		return 0, false
	}
	return int32(n), true
}

func (a *api) pathVersion(w http.ResponseWriter, r *http.Request) (int32, bool) {
	v, err := registry.ParseVersion(r.PathValue("version"))
	if err != nil {
		a.fail(w, r, err)
		return 0, false
	}
	return v, true
}

func (a *api) schemaByID(w http.ResponseWriter, r *http.Request) {
	id, ok := a.pathID(w, r)
	if !ok {
		return
	}
	s, err := a.reg.SchemaByID(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.formatted(w, r, body(s), s)
}

func (a *api) rawSchemaByID(w http.ResponseWriter, r *http.Request) {
	id, ok := a.pathID(w, r)
	if !ok {
		return
	}
	s, err := a.reg.SchemaByID(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.raw(w, r, s)
}

// raw answers the schema text itself, as Confluent's .../schema does.
func (a *api) raw(w http.ResponseWriter, r *http.Request, s *store.Schema) {
	w.Header().Set("Content-Type", answerType(r))
	_, _ = io.WriteString(w, s.Text)
}

func (a *api) versionsOfID(w http.ResponseWriter, r *http.Request) {
	id, ok := a.pathID(w, r)
	if !ok {
		return
	}
	used, err := a.reg.VersionsOfID(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	type sv struct {
		Subject string `json:"subject"`
		Version int32  `json:"version"`
	}
	out := []sv{}
	for _, u := range used {
		out = append(out, sv{u.Subject, u.Version})
	}
	a.reply(w, r, out)
}

func (a *api) subjectsOfID(w http.ResponseWriter, r *http.Request) {
	id, ok := a.pathID(w, r)
	if !ok {
		return
	}
	used, err := a.reg.VersionsOfID(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := []string{}
	for _, u := range used {
		if len(out) == 0 || out[len(out)-1] != u.Subject {
			out = append(out, u.Subject)
		}
	}
	a.reply(w, r, out)
}

func (a *api) subjects(w http.ResponseWriter, r *http.Request) {
	out, err := a.reg.Subjects(r.Context(), boolParam(r, "deleted"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if out == nil {
		out = []string{}
	}
	a.reply(w, r, out)
}

func (a *api) versions(w http.ResponseWriter, r *http.Request) {
	out, err := a.reg.Versions(r.Context(), r.PathValue("subject"), boolParam(r, "deleted"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, r, out)
}

func (in schemaBody) input() registry.Input {
	return registry.Input{Type: in.SchemaType, Text: in.Schema, References: in.References}
}

func (a *api) register(w http.ResponseWriter, r *http.Request) {
	var in schemaBody
	if !a.decode(w, r, &in) {
		return
	}
	id, _, err := a.reg.Register(r.Context(), r.PathValue("subject"), in.input())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, r, map[string]int32{"id": id})
}

func (a *api) lookup(w http.ResponseWriter, r *http.Request) {
	var in schemaBody
	if !a.decode(w, r, &in) {
		return
	}
	v, err := a.reg.Lookup(r.Context(), r.PathValue("subject"), in.input(), boolParam(r, "deleted"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.formatted(w, r, subjectBody(v), v.Schema)
}

func (a *api) version(w http.ResponseWriter, r *http.Request) {
	ver, ok := a.pathVersion(w, r)
	if !ok {
		return
	}
	v, err := a.reg.Version(r.Context(), r.PathValue("subject"), ver, boolParam(r, "deleted"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.formatted(w, r, subjectBody(v), v.Schema)
}

func (a *api) rawVersion(w http.ResponseWriter, r *http.Request) {
	ver, ok := a.pathVersion(w, r)
	if !ok {
		return
	}
	v, err := a.reg.Version(r.Context(), r.PathValue("subject"), ver, boolParam(r, "deleted"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.raw(w, r, v.Schema)
}

func (a *api) referencedBy(w http.ResponseWriter, r *http.Request) {
	ver, ok := a.pathVersion(w, r)
	if !ok {
		return
	}
	out, err := a.reg.ReferencedBy(r.Context(), r.PathValue("subject"), ver, boolParam(r, "deleted"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, r, out)
}

func (a *api) deleteSubject(w http.ResponseWriter, r *http.Request) {
	out, err := a.reg.DeleteSubject(r.Context(), r.PathValue("subject"), boolParam(r, "permanent"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, r, out)
}

func (a *api) deleteVersion(w http.ResponseWriter, r *http.Request) {
	ver, ok := a.pathVersion(w, r)
	if !ok {
		return
	}
	out, err := a.reg.DeleteVersion(r.Context(), r.PathValue("subject"), ver, boolParam(r, "permanent"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, r, out)
}

func (a *api) getConfig(w http.ResponseWriter, r *http.Request) {
	level, err := a.reg.Config(r.Context(), r.PathValue("subject"), boolParam(r, "defaultToGlobal"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, r, map[string]string{"compatibilityLevel": level})
}

func (a *api) putConfig(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Compatibility string `json:"compatibility"`
	}
	if !a.decode(w, r, &in) {
		return
	}
	if err := a.reg.SetConfig(r.Context(), r.PathValue("subject"), in.Compatibility); err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, r, map[string]string{"compatibility": in.Compatibility})
}

func (a *api) deleteConfig(w http.ResponseWriter, r *http.Request) {
	was, err := a.reg.DeleteConfig(r.Context(), r.PathValue("subject"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.reply(w, r, map[string]string{"compatibilityLevel": was})
}

func (a *api) compatibility(w http.ResponseWriter, r *http.Request) {
	var ver int32
	if r.PathValue("version") != "" {
		var ok bool
		if ver, ok = a.pathVersion(w, r); !ok {
			return
		}
	}
	var in schemaBody
	if !a.decode(w, r, &in) {
		return
	}
	ok, msgs, err := a.reg.Compatible(r.Context(), r.PathValue("subject"), ver, in.input())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := map[string]any{"is_compatible": ok}
	if boolParam(r, "verbose") {
		if msgs == nil {
			msgs = []string{}
		}
		out["messages"] = msgs
	}
	a.reply(w, r, out)
}

// notFoundAsJSON answers paths and methods the API does not have with
// Confluent's JSON error body instead of the mux's plain text.
func notFoundAsJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&jsonErrors{ResponseWriter: w, r: r}, r)
	})
}

// jsonErrors rewrites the mux's own 404 and 405 answers.
type jsonErrors struct {
	http.ResponseWriter
	r       *http.Request
	swallow bool
}

func (j *jsonErrors) WriteHeader(status int) {
	if (status == http.StatusNotFound || status == http.StatusMethodNotAllowed) && j.Header().Get("Content-Type") != answerType(j.r) {
		j.swallow = true
		msg := "HTTP 404 Not Found"
		if status == http.StatusMethodNotAllowed {
			msg = "HTTP 405 Method Not Allowed"
		}
		j.Header().Del("X-Content-Type-Options")
		writeError(j.ResponseWriter, j.r, status, status, msg)
		return
	}
	j.ResponseWriter.WriteHeader(status)
}

func (j *jsonErrors) Write(b []byte) (int, error) {
	if j.swallow {
		return len(b), nil
	}
	return j.ResponseWriter.Write(b)
}

// basicAuth requires HTTP Basic credentials of a known user.
func basicAuth(next http.Handler, auth Authenticator, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pw, ok := r.BasicAuth()
		if !ok || !auth.Authenticate(user, pw) {
			reason := errors.New("no credentials")
			if ok {
				reason = errors.New("bad credentials")
			}
			logger.InfoContext(r.Context(), "schema registry request unauthenticated", "user", user, "remote", r.RemoteAddr, "err", reason)
			w.Header().Set("WWW-Authenticate", `Basic realm="ferry-schema-registry"`)
			writeError(w, r, http.StatusUnauthorized, registry.CodeUnauthorized, "Unauthorized")
			return
		}
		next.ServeHTTP(w, r)
	})
}
