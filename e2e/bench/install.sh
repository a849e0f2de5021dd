#!/usr/bin/env bash
# Installs what e2e/bench needs beyond tools/install.sh (Fluss jars, flusshelper), from Maven
# Central, into .cache:
#   kafka-tools (ProducerPerformance = kafka-producer-perf-test)  e2e/bench/pom.xml -> .cache/bench/kafka-tools-lib
#   the reference Kafka broker (KRaft)                           e2e/kafkabroker/pom.xml -> .cache/kafkabroker/lib
# The broker jars are the ones tools/install-clients.sh installs, with the same stamp, so either
# script reuses the other's copy. The bench command runs this on demand; CI never does (the
# default test run does not benchmark). Idempotent: a jar set whose stamp matches its pom's hash
# is left alone; a failed copy leaves no stamp, so the next run retries.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=$root/.cache

jars() { # pom dir
  local want
  want=$(sha256sum "$1" | cut -d' ' -f1)
  if [ -d "$2" ] && [ "$(cat "$2.sha256" 2>/dev/null)" = "$want" ]; then
    return
  fi
  command -v mvn >/dev/null || { echo "bench install: mvn (Maven) is required to fetch $1's jars" >&2; exit 1; }
  echo "bench install: jars of $1 -> $2" >&2
  rm -rf "$2" "$2.sha256"
  mkdir -p "$(dirname "$2")"
  mvn -q -B -Dstyle.color=never -f "$1" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$2" >&2
  echo "$want" > "$2.sha256"
}

jars "$here/pom.xml" "$cache/bench/kafka-tools-lib"
ls "$cache/bench/kafka-tools-lib"/kafka-tools-*.jar >/dev/null 2>&1 \
  || { echo "bench install: no kafka-tools jar in $cache/bench/kafka-tools-lib" >&2; exit 1; }
jars "$root/e2e/kafkabroker/pom.xml" "$cache/kafkabroker/lib"
