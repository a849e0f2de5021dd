#!/usr/bin/env bash
# Installs everything Ferry's build, stack and tests need on a fresh machine.
# Idempotent: each step is skipped when its result is already in .cache/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache="$root/.cache"
mkdir -p "$cache/bin"

# Go code generators and buf, pinned; installed from the Go module proxy.
go_tool() { # name module@version
  if [ ! -x "$cache/bin/$1" ] || [ "$(cat "$cache/bin/.$1.version" 2>/dev/null)" != "$2" ]; then
    echo "install: $2"
    GOBIN="$cache/bin" go install "$2"
    echo "$2" > "$cache/bin/.$1.version"
  fi
}
go_tool protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
go_tool protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
go_tool buf github.com/bufbuild/buf/cmd/buf@v1.75.0
