#!/usr/bin/env bash
# Installs the real Kafka clients of the e2e client harness (e2e/clients) and the reference
# Apache Kafka broker (e2e/kafkabroker), all from the package registries. Idempotent: each step is
# skipped when its result is present and its pinned inputs (pom, package-lock, requirements) are
# unchanged. Needs: Go, Java 17 (javac), Maven, Node 20 + npm (+ make, g++, python3 for the native
# lz4 codec), Python 3.11 with venv; kcat comes from Debian (apt-get; run as root or with sudo).
#
#   kcat + librdkafka     Debian package kcat                         (apt-get)
#   Java kafka-clients    e2e/clients/java/pom.xml    -> .cache/clients/java/lib   (mvn)
#   Confluent JVM Avro serdes  e2e/clients/javaserde/pom.xml -> .cache/clients/javaserde/lib (mvn)
#   Confluent JVM Protobuf serdes  e2e/clients/javaprotobuf/pom.xml -> .cache/clients/javaprotobuf/lib (mvn)
#   Kafka broker (KRaft)  e2e/kafkabroker/pom.xml     -> .cache/kafkabroker/lib     (mvn)
#   Kafka tools           e2e/bench/pom.xml           -> .cache/bench/kafka-tools-lib (mvn)
#   kafkajs + codecs      e2e/clients/node/package-lock.json -> e2e/clients/node/node_modules (npm ci)
#   confluent-kafka       e2e/clients/python/requirements.txt -> .cache/clients/venv (pip)
#   kafka-python          e2e/clients/kafkapython/requirements.txt -> .cache/clients/kafka-python-venv (pip)
#   Kafka Viewer (web console)  e2e/clients/kafkaviewer/requirements.txt -> .cache/clients/kafka-viewer-venv (pip)
#   chromium + playwright-core  Debian package chromium (apt-get); e2e/clients/kafkaviewer/package-lock.json
#                               -> e2e/clients/kafkaviewer/node_modules (npm ci), for the console's screenshot
#   franz-go, sarama, kafka-go   e2e/clients/go.mod   -> .cache/clients/bin/gorunner-<hash> (go build)
# The versions in use are written to .cache/clients/versions.txt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache="$root/.cache"
clients="$root/e2e/clients"
mkdir -p "$cache/clients"

need() { command -v "$1" >/dev/null || { echo "install-clients: $1 is required ($2)" >&2; exit 1; }; }
stamp_ok() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }
sha() { cat "$@" | sha256sum | cut -d' ' -f1; }

# kcat, and chromium for the web console's screenshot, from Debian. apt-get update only when the
# package index does not know a missing package yet.
for pkg in kcat chromium; do
  if ! command -v "$pkg" >/dev/null; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    if ! apt-cache show "$pkg" >/dev/null 2>&1; then
      echo "install-clients: apt-get update"
      $sudo apt-get update -qq
    fi
    echo "install-clients: apt-get install $pkg"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null
  fi
done

# Maven jar sets: a stamp with the pom's hash; a failed copy leaves no stamp so the next run retries.
jars() { # pom dir [maven goal]
  local want goal=${3:-dependency:copy-dependencies}
  want=$(sha "$1")
  if [ -d "$2" ] && stamp_ok "$2.sha256" "$want"; then
    return
  fi
  need mvn "Maven, to fetch jars from Maven Central"
  echo "install-clients: jars of $1 -> $2"
  rm -rf "$2" "$2.sha256"
  mvn -q -B -Dstyle.color=never -f "$1" "$goal" -DincludeScope=runtime -DoutputDirectory="$2"
  echo "$want" > "$2.sha256"
}
need java "Java 17+"
jars "$clients/java/pom.xml" "$cache/clients/java/lib"
jars "$root/e2e/kafkabroker/pom.xml" "$cache/kafkabroker/lib"
# Kafka's command-line tools (kafka-consumer-groups for the e2e suite), the set and stamp
# e2e/bench/install.sh uses too.
jars "$root/e2e/bench/pom.xml" "$cache/bench/kafka-tools-lib"
# Confluent's KafkaAvroSerializer/-Deserializer for the JVM (inside a shaded jar: see its pom).
jars "$clients/javaserde/pom.xml" "$cache/clients/javaserde/lib" dependency:copy
# Confluent's KafkaProtobufSerializer/-Deserializer 5.5.3 (inside another shaded jar: see its pom).
jars "$clients/javaprotobuf/pom.xml" "$cache/clients/javaprotobuf/lib" dependency:copy
# Compiles the Java runner and the serde program (each rebuilds only when its sources changed).
"$clients/bin/java" check >/dev/null
"$clients/javaserde/run" check >/dev/null
"$clients/javaprotobuf/run" check >/dev/null

# kafkajs: npm ci from the committed lock file; the lz4 codec builds a native addon.
need npm "Node 20 with npm"
want=$(sha "$clients/node/package-lock.json")
if [ ! -d "$clients/node/node_modules/kafkajs" ] || ! stamp_ok "$clients/node/node_modules/.ferry.sha256" "$want"; then
  echo "install-clients: npm ci in e2e/clients/node"
  (cd "$clients/node" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" > "$clients/node/node_modules/.ferry.sha256"
fi

# confluent-kafka: a venv of its own.
need python3 "Python 3.11 with venv"
want=$(sha "$clients/python/requirements.txt")
venv="$cache/clients/venv"
if [ ! -x "$venv/bin/python" ] || ! stamp_ok "$venv/.ferry.sha256" "$want"; then
  echo "install-clients: venv + pip install -r e2e/clients/python/requirements.txt"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$clients/python/requirements.txt"
  echo "$want" > "$venv/.ferry.sha256"
fi

# kafka-python (and its codec libraries): a venv of its own.
want=$(sha "$clients/kafkapython/requirements.txt")
venv="$cache/clients/kafka-python-venv"
if [ ! -x "$venv/bin/python" ] || ! stamp_ok "$venv/.ferry.sha256" "$want"; then
  echo "install-clients: venv + pip install -r e2e/clients/kafkapython/requirements.txt"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$clients/kafkapython/requirements.txt"
  echo "$want" > "$venv/.ferry.sha256"
fi

# Kafka Viewer, the web console TestWebConsole drives (Streamlit): a venv of its own.
want=$(sha "$clients/kafkaviewer/requirements.txt")
venv="$cache/clients/kafka-viewer-venv"
if [ ! -x "$venv/bin/python" ] || ! stamp_ok "$venv/.ferry.sha256" "$want"; then
  echo "install-clients: venv + pip install -r e2e/clients/kafkaviewer/requirements.txt"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$clients/kafkaviewer/requirements.txt"
  echo "$want" > "$venv/.ferry.sha256"
fi

# playwright-core, which drives chromium for the console's screenshot (it downloads no browser).
want=$(sha "$clients/kafkaviewer/package-lock.json")
if [ ! -d "$clients/kafkaviewer/node_modules/playwright-core" ] || ! stamp_ok "$clients/kafkaviewer/node_modules/.ferry.sha256" "$want"; then
  echo "install-clients: npm ci in e2e/clients/kafkaviewer"
  (cd "$clients/kafkaviewer" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" > "$clients/kafkaviewer/node_modules/.ferry.sha256"
fi

# Go clients: one binary (bin/_gorunner rebuilds it when sources change).
need go "Go"
"$clients/bin/franz" check >/dev/null

{
  echo "# Versions installed by tools/install-clients.sh ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
  for c in java kcat kafkajs confluent-kafka franz sarama kafka-go kafka-python; do
    printf '%-16s %s\n' "$c" "$("$clients/bin/$c" check 2>&1 | tr '\n' ' ')"
  done
  printf '%-16s %s\n' "java-serde" "$("$clients/javaserde/run" check 2>&1 | tr '\n' ' ')"
  printf '%-16s %s\n' "java-protobuf" "$("$clients/javaprotobuf/run" check 2>&1 | tr '\n' ' ')"
  printf '%-16s %s\n' "kafka-viewer" "$("$cache/clients/kafka-viewer-venv/bin/pip" list --disable-pip-version-check 2>/dev/null |
    awk '$1 == "kafka-viewer" || $1 == "streamlit" {printf "%s %s ", $1, $2}')"
  printf '%-16s %s\n' "chromium" "$(chromium --version 2>/dev/null | head -1)"
  printf '%-16s %s\n' "playwright-core" "$(cd "$clients/kafkaviewer" && node -p 'require("playwright-core/package.json").version' 2>/dev/null)"
  printf '%-16s %s\n' "kafka-broker" "$(ls "$cache/kafkabroker/lib" | grep -E '^kafka_2\.13-.*\.jar$')"
  printf '%-16s %s\n' "librdkafka(deb)" "$(dpkg-query -W -f='${Version}' librdkafka1 2>/dev/null || echo unknown)"
} > "$cache/clients/versions.txt"
cat "$cache/clients/versions.txt"
