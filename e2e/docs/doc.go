// Package docs keeps the user documentation in docs/ honest. Its tests build
// every service binary, read the settings each one declares from its -help
// output, and compare them with docs/configuration.md, so a setting that is
// added, renamed, removed or given a new default fails the test until the
// document says the same. Run
//
//	FERRY_DOCS_UPDATE=1 go test ./docs
//
// from the e2e module to rewrite the generated tables in place.
package docs
