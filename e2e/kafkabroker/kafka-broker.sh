#!/usr/bin/env bash
# Launches a real Apache Kafka broker (KRaft, combined broker+controller, one node) from the jars that
# tools/install-clients.sh copies from Maven Central into .cache/kafkabroker/lib. It is the reference
# broker for the client harness (e2e/clients) and for benchmarks against Ferry.
#
#   kafka-broker.sh start [options]   format (if new) and start in the background; waits until ready
#   kafka-broker.sh stop  --dir DIR   stop the broker started with that DIR (SIGTERM, then SIGKILL)
#   kafka-broker.sh run   [options]   format (if new) and run in the foreground (exec)
#   kafka-broker.sh status --dir DIR  exit 0 if the broker of DIR is running
#
# Options:
#   --dir DIR               instance directory (config, data, server.log, pid); required
#   --port N                PLAINTEXT listener, default 19092
#   --controller-port N     KRaft controller listener, default 19093
#   --sasl-port N           also open a SASL_PLAINTEXT listener with mechanism PLAIN (off by default)
#   --sasl-user U --sasl-password P   the one PLAIN user (default ferry / ferry-secret)
#   --partitions N          num.partitions for created topics, default 3
#   --wait SECONDS          how long start waits for the listener, default 90
#   --set key=value         extra server.properties line (repeatable)
# Env: KAFKA_HEAP_OPTS (default "-Xms512m -Xmx1g"), KAFKA_BROKER_LIB (default <repo>/.cache/kafkabroker/lib).
#
# Topics are never auto-created (auto.create.topics.enable=false) so the broker behaves like Ferry,
# which is DDL-first: tests create their topics explicitly.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
lib=${KAFKA_BROKER_LIB:-$root/.cache/kafkabroker/lib}

die() { echo "kafka-broker: $*" >&2; exit 1; }
[ $# -ge 1 ] || die "usage: kafka-broker.sh start|stop|run|status --dir DIR [options]"
cmd=$1; shift
dir="" port=19092 cport=19093 sport="" suser=ferry spass=ferry-secret parts=3 wait=90
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --dir) dir=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --controller-port) cport=$2; shift 2 ;;
    --sasl-port) sport=$2; shift 2 ;;
    --sasl-user) suser=$2; shift 2 ;;
    --sasl-password) spass=$2; shift 2 ;;
    --partitions) parts=$2; shift 2 ;;
    --wait) wait=$2; shift 2 ;;
    --set) extra+=("$2"); shift 2 ;;
    *) die "unknown option $1" ;;
  esac
done
[ -n "$dir" ] || die "--dir is required"
for pair in port:port cport:controller-port parts:partitions wait:wait; do
  v=${pair%%:*}
  [[ ${!v} =~ ^[0-9]+$ ]] || die "--${pair#*:} must be a number, got '${!v}'"
done
[ -z "$sport" ] || [[ $sport =~ ^[0-9]+$ ]] || die "--sasl-port must be a number, got '$sport'"
pidfile="$dir/broker.pid"

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

case $cmd in
  stop)
    if running; then
      pid=$(cat "$pidfile")
      kill -TERM "$pid"
      for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      if kill -0 "$pid" 2>/dev/null; then
        echo "kafka-broker: pid $pid ignored SIGTERM for 30s, killing" >&2
        kill -KILL "$pid"
      fi
    fi
    rm -f "$pidfile"
    exit 0 ;;
  status) running; exit $? ;;
  start|run) ;;
  *) die "unknown command $cmd" ;;
esac

ls "$lib"/kafka_2.13-*.jar >/dev/null 2>&1 || die "Kafka jars not found in $lib: run tools/install-clients.sh"
command -v java >/dev/null || die "java (17+) is required"
running && die "a broker is already running for $dir (pid $(cat "$pidfile"))"

mkdir -p "$dir/data"
dir=$(cd "$dir" && pwd)
props="$dir/server.properties"
{
  echo "process.roles=broker,controller"
  echo "node.id=1"
  echo "controller.quorum.voters=1@127.0.0.1:$cport"
  echo "controller.listener.names=CONTROLLER"
  echo "inter.broker.listener.name=PLAINTEXT"
  if [ -n "$sport" ]; then
    echo "listeners=PLAINTEXT://127.0.0.1:$port,SASL_PLAINTEXT://127.0.0.1:$sport,CONTROLLER://127.0.0.1:$cport"
    echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port,SASL_PLAINTEXT://127.0.0.1:$sport"
    echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"
    echo "sasl.enabled.mechanisms=PLAIN"
    echo "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_${suser}=\"${spass}\";"
  else
    echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
    echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port"
    echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  fi
  echo "log.dirs=$dir/data"
  echo "num.partitions=$parts"
  echo "auto.create.topics.enable=false"
  echo "offsets.topic.replication.factor=1"
  echo "offsets.topic.num.partitions=1"
  echo "transaction.state.log.replication.factor=1"
  echo "transaction.state.log.min.isr=1"
  echo "share.coordinator.state.topic.replication.factor=1"
  echo "share.coordinator.state.topic.min.isr=1"
  echo "group.initial.rebalance.delay.ms=0"
  for kv in "${extra[@]+"${extra[@]}"}"; do echo "$kv"; done
} > "$props"

# Java options shared by the storage tool and the broker. Logging goes to $dir/server.log.
jopts=(-Dlog4j2.configurationFile="$here/log4j2.properties" -Dkafka.logs.dir="$dir"
       -Djava.awt.headless=true -cp "$lib/*")
if [ ! -f "$dir/data/meta.properties" ]; then
  cluster_id=$(java "${jopts[@]}" kafka.tools.StorageTool random-uuid)
  java "${jopts[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$props" > "$dir/format.log" 2>&1 \
    || { cat "$dir/format.log" >&2; die "storage format failed"; }
fi
# shellcheck disable=SC2206
heap=(${KAFKA_HEAP_OPTS:--Xms512m -Xmx1g})
broker=(java "${heap[@]}" -XX:+UseG1GC "${jopts[@]}" kafka.Kafka "$props")

if [ "$cmd" = run ]; then
  echo $$ > "$pidfile"
  exec "${broker[@]}"
fi

# start: background it with its own session so the caller's job control or terminal does not reach it.
setsid "${broker[@]}" > "$dir/stdout.log" 2>&1 < /dev/null &
pid=$!
echo "$pid" > "$pidfile"
deadline=$(( $(date +%s) + wait ))
ready_port=$port
while :; do
  if ! kill -0 "$pid" 2>/dev/null; then
    tail -n 30 "$dir/stdout.log" "$dir/server.log" >&2 2>/dev/null || true
    rm -f "$pidfile"
    die "broker exited during start-up (see $dir/server.log)"
  fi
  # Ready = the broker logged its transition to RUNNING and the client port answers.
  if grep -q "Kafka Server started" "$dir/server.log" 2>/dev/null \
     && (exec 3<>"/dev/tcp/127.0.0.1/$ready_port") 2>/dev/null; then
    break
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    "$0" stop --dir "$dir" || true
    die "broker not ready on 127.0.0.1:$ready_port within ${wait}s (see $dir/server.log)"
  fi
  sleep 0.3
done
echo "kafka-broker: ready on 127.0.0.1:$port${sport:+ (SASL_PLAINTEXT PLAIN on 127.0.0.1:$sport)} pid $pid dir $dir"
