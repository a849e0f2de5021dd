#!/usr/bin/env bash
# Builds the Jaeger v2 binary (github.com/jaegertracing/jaeger/cmd/jaeger, OpenTelemetry Collector
# based) into .cache/bin/jaeger for `make up` and the end-to-end tests (package e2e/jaeger).
#
# `go install github.com/jaegertracing/jaeger/cmd/jaeger@VERSION` is refused by the go command
# because Jaeger's go.mod has a replace directive, so the version is pinned in the tool module
# e2e/jaeger/tool (its go.mod and go.sum) and built from there. Only the Go module proxy is
# needed. Idempotent: skipped when the binary exists and was built from the current go.mod/go.sum
# (a stamp holds their hash, so a version bump rebuilds). A cold build takes several minutes on
# two cores; later builds reuse Go's build cache.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tool="$root/e2e/jaeger/tool"
bin_dir="$root/.cache/bin"
bin="$bin_dir/jaeger"
stamp="$bin_dir/.jaeger.version"

command -v go >/dev/null || { echo "install-jaeger: go is required" >&2; exit 1; }
[ -f "$tool/go.mod" ] && [ -f "$tool/go.sum" ] || { echo "install-jaeger: $tool/go.mod or go.sum missing" >&2; exit 1; }

want=$(cat "$tool/go.mod" "$tool/go.sum" | sha256sum | cut -d' ' -f1)
if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi

# The tool module is not part of go.work (its dependency graph is Jaeger's, not Ferry's):
# GOWORK=off builds it on its own, and -mod=readonly makes a go.sum that does not match fail
# instead of being rewritten.
export GOWORK=off
export GOFLAGS="-mod=readonly ${GOFLAGS:-}"
version=$(cd "$tool" && go list -m -f '{{.Version}}' github.com/jaegertracing/jaeger)
echo "install: jaeger $version (cmd/jaeger from e2e/jaeger/tool) -> $bin"
mkdir -p "$bin_dir"
rm -f "$stamp"
start=$(date +%s)
# The version variables are what `jaeger version` and the query service report; -s -w drops the
# symbol table and DWARF, about a third of the binary, which nobody debugs here.
pkg=github.com/jaegertracing/jaeger/internal/version
(cd "$tool" && go build -trimpath \
  -ldflags "-s -w -X $pkg.latestVersion=$version -X $pkg.date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  -o "$bin.tmp" github.com/jaegertracing/jaeger/cmd/jaeger)
mv "$bin.tmp" "$bin"
echo "$want" > "$stamp"
echo "install: jaeger $version built in $(($(date +%s) - start))s ($(du -h "$bin" | cut -f1))"
