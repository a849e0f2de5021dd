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
go_tool protoc-gen-go-vtproto github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto@v0.6.1-0.20240319094008-0393e58bdf10
go_tool buf github.com/bufbuild/buf/cmd/buf@v1.75.0


# Apache Fluss jars from Maven Central (tools/fluss/pom.xml): the server classpath for the local stack
# and the client classpath for e2e/flusshelper. A stamp holding the pom's hash makes a version bump
# re-resolve; a failed copy leaves no stamp, so the next run retries.
fluss_jars() { # profile dir
  local dir="$cache/fluss/$2" stamp="$cache/fluss/.$2.sha256" want
  want=$(sha256sum "$root/tools/fluss/pom.xml" | cut -d' ' -f1)
  if [ -d "$dir" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    return
  fi
  command -v mvn >/dev/null || { echo "install: mvn (Maven) is required to fetch the Fluss jars" >&2; exit 1; }
  echo "install: Fluss $1 jars -> $dir"
  rm -rf "$dir" "$stamp"
  mvn -q -B -Dstyle.color=never -f "$root/tools/fluss/pom.xml" -P "$1" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$dir"
  echo "$want" > "$stamp"
}
command -v java >/dev/null || { echo "install: java (17+) is required for Fluss and flusshelper" >&2; exit 1; }
fluss_jars server server-lib
fluss_jars client client-lib

# e2e/flusshelper: plain javac against client-lib, rebuilt when its sources change (same hash as
# the check in e2e/flusshelper/flusshelper).
helper="$root/e2e/flusshelper"
helper_sha=$(cd "$helper" && find src log4j2.properties -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
if [ ! -f "$cache/fluss/flusshelper.jar" ] || [ "$(cat "$cache/fluss/flusshelper.sha256" 2>/dev/null)" != "$helper_sha" ]; then
  echo "install: building flusshelper"
  rm -f "$cache/fluss/flusshelper.sha256"
  classes=$(mktemp -d)
  trap 'rm -rf "$classes"' EXIT
  javac --release 17 -Xlint:all,-try,-serial,-processing -Werror -d "$classes" \
    -cp "$cache/fluss/client-lib/*" $(find "$helper/src" -name '*.java')
  jar --create --file "$cache/fluss/flusshelper.jar.tmp" -C "$classes" .
  mv "$cache/fluss/flusshelper.jar.tmp" "$cache/fluss/flusshelper.jar"
  rm -f "$cache/fluss/flusshelper.jsa"
  echo "$helper_sha" > "$cache/fluss/flusshelper.sha256"
fi
if [ ! -f "$cache/fluss/flusshelper.jsa" ]; then
  # A class-data archive of the helper's start-up path cuts every call's JVM start by about a
  # third. Recorded with a connection attempt to a closed port (no cluster needed), with the same
  # JVM options the wrapper uses; the attempt failing is expected.
  java -XX:ArchiveClassesAtExit="$cache/fluss/flusshelper.jsa" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Xlog:disable --add-opens=java.base/java.nio=ALL-UNNAMED \
    -Dlog4j2.configurationFile="$helper/log4j2.properties" \
    -cp "$cache/fluss/flusshelper.jar:$cache/fluss/client-lib/*" io.ferrygw.flusshelper.Main \
    wait-ready --bootstrap 127.0.0.1:1 --timeout 1500ms >/dev/null 2>&1 || true
fi

# Jaeger, built from its Go module (e2e/jaeger/tool pins the version).
bash "$root/tools/install-jaeger.sh"

# Real Kafka clients and the reference Kafka broker (e2e/clients, e2e/kafkabroker).
bash "$root/tools/install-clients.sh"
