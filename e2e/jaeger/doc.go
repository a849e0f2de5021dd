// Package jaeger runs a real Jaeger v2 (github.com/jaegertracing/jaeger v1.75.0, cmd/jaeger) as
// a child process on loopback and queries the traces it stored, so Ferry's end-to-end tests can
// assert on the spans Ferry's services export and `make up` can offer a trace UI.
//
// Jaeger runs with config.yaml (embedded here and written into the run directory): one OTLP/gRPC
// receiver, bounded in-memory storage and the jaeger_query extension, every listener on
// 127.0.0.1. The binary is built by tools/install-jaeger.sh into <repo>/.cache/bin/jaeger; see
// BinaryPath for how it is found.
//
// Queries use Jaeger's api_v3 HTTP endpoints (/api/v3/services, /api/v3/operations,
// /api/v3/traces, /api/v3/traces/{id}). Unlike the /api/traces endpoints that Jaeger's web UI
// uses, api_v3 is the versioned, documented query API of Jaeger v2, and it answers in OTLP's JSON
// form, so span kinds, typed attributes and parent span ids arrive as the OpenTelemetry SDK sent
// them instead of being translated to Jaeger's older model.
package jaeger
