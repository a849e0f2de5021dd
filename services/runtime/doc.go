// Package runtime is the bootstrap every Ferry service binary shares:
// settings (flags and environment mapped in one place, flag > env >
// default), slog logging, OpenTelemetry providers, a gRPC server with
// health and reflection, traced gRPC clients, and an App that starts
// components in order and shuts them down in reverse on SIGINT/SIGTERM.
//
// A service's main is a few lines:
//
//	os.Exit(runtime.Main(runtime.Service[*config]{
//		Name: "catalogsvc", DefaultListen: "127.0.0.1:7101",
//		Declare: declare, // binds the service's own settings
//		Setup:   register, // registers gRPC services, adds components
//	}))
//
// Exit codes: 0 after a clean shutdown, 2 when a setting is invalid or
// unusable (the one-line error names the environment variable and flag),
// 1 for any other failure.
//
// # Module convention
//
// Every Ferry module that depends on another Ferry module both requires it
// at v0.0.0 and replaces it with its relative path, e.g. in catalogsvc/go.mod:
//
//	require github.com/ferrygw/ferry/services/runtime v0.0.0
//	replace github.com/ferrygw/ferry/services/runtime => ../services/runtime
//
// Replace directives only apply in the main module, so a service must also
// replace the Ferry modules it depends on indirectly (runtime requires
// services/api, hence every service replaces services/api too). With the
// replaces, `go build ./...` works from a module directory with go.work
// (the default in this repository) and without it (GOWORK=off), and
// `GOWORK=off go mod tidy` works because tidy never has to look the local
// modules up in the module proxy. Dockerfiles copy the whole repository and
// build from the module directory, so both the relative replaces and go.work
// resolve.
package runtime
