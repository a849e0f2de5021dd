#!/usr/bin/env bash
# Ferry's one test command: `make test` and CI (.ci/run) call this and nothing else.
#
#   install   tools/install.sh (Go tools, buf, Fluss jars, flusshelper, the real clients) and
#             tools/install-apicurio.sh (the reference schema registry, for the e2e suite only)
#   static    gofmt, go vet per module, buf lint, generated code up to date, buf breaking
#   fluss     a real Fluss 0.9.1 cluster on the test ports (ferrystack -only fluss -test-ports)
#   test      go test in every module listed in go.work, against that cluster, then e2e/suite's
#             single-process tests against a stack that runs every service in one process
#   fuzz      each fuzz target for its execution budget (FERRY_TEST_FUZZTIME overrides it)
#
# Tests run with -json through tools/testreport, which prints what plain `go test` does (a line per
# package, the output of failures); the last lines list every failed and skipped test (each skip
# with its reason) and the totals, `tests: N passed, N failed, N skipped` (subtests count like
# tests; the fuzz phase has a line of its own).
#
# Environment knobs:
#   FERRY_TEST_FLAGS   go test flags (default: -count=1 -timeout 25m)
#   FERRY_TEST_KEEP=1  keep the Fluss run directory (logs, data) under .cache/run afterwards
#   FERRY_TEST_SKIP_STATIC=1  skip the static phase (quick local iterations only)
#   FERRY_TEST_FAULTS=0       skip the fault tests (quick local iterations only)
#   FERRY_TEST_ZK_PORT, FERRY_TEST_COORDINATOR_PORT, FERRY_TEST_TABLET_PORT
#                      move the test cluster off 28181/28122/28123 (e.g. two runs side by side)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export PATH="$root/.cache/bin:$PATH"
# Tests must not pick up a developer's cluster settings: the runner provides its own.
unset FERRY_TEST_FLUSS_BOOTSTRAP FERRY_TEST_FLUSS_HELPER FERRY_TEST_KAFKA_BOOTSTRAP

t_start=$(date +%s)
phase=""
phase_start=0
timings=()
mod_timings=()
stack_pid=""
# Per-run names, so two runs in one tree (on different ports) do not clobber each other.
stack_log="$root/.cache/run/ferrystack-test-$$.log"
env_file="$root/.cache/run/test-$$.env"
# go test -json events of this run (tools/testreport), one file per module and one for fuzzing.
events_dir="$root/.cache/run/test-$$-events"
testreport=""

now() { date +%s; }

begin() {
  phase=$1
  phase_start=$(now)
  echo
  echo "==> $phase"
}

end() {
  timings+=("$(printf '%-8s %5ds' "$phase" $(($(now) - phase_start)))")
  [ "$phase" != test ] || timings+=("${mod_timings[@]}")
  phase=""
}

fail() {
  echo "test.sh: FAIL${phase:+ in phase '$phase'}: $*" >&2
  exit 1
}

summary() {
  local rc=$?
  if [ -n "$phase" ]; then
    timings+=("$(printf '%-8s %5ds (failed)' "$phase" $(($(now) - phase_start)))")
    [ "$phase" != test ] || timings+=("${mod_timings[@]}")
  fi
  stop_fluss
  echo
  echo "==> timings"
  for t in "${timings[@]}"; do echo "    $t"; done
  echo "    total    $(printf '%5ds' $(($(now) - t_start)))"
  report_tests
  if [ "$rc" -eq 0 ]; then
    rm -f "$stack_log"
    rm -rf "$events_dir"
    echo "test.sh: PASS"
  else
    [ ! -s "$stack_log" ] || echo "ferrystack log: ${stack_log#"$root"/}" >&2
    [ ! -d "$events_dir" ] || echo "go test -json events: ${events_dir#"$root"/}" >&2
    echo "test.sh: FAIL (exit $rc)" >&2
  fi
  exit "$rc"
}
trap summary EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# report_tests prints the failed and skipped tests and the totals of whatever ran.
report_tests() {
  [ -n "$testreport" ] && [ -d "$events_dir" ] || return 0
  local files=() fuzz=()
  for f in "$events_dir"/*.jsonl; do
    [ -e "$f" ] || continue
    if [ "${f##*/}" = fuzz.jsonl ]; then fuzz=(-fuzz "$f"); else files+=("$f"); fi
  done
  echo
  echo "==> tests"
  "$testreport" summary "${fuzz[@]}" "${files[@]}" || echo "test.sh: testreport summary failed" >&2
}

stop_fluss() {
  [ -n "$stack_pid" ] || return 0
  if kill -0 "$stack_pid" 2>/dev/null; then
    echo "==> stopping Fluss (ferrystack pid $stack_pid)"
    kill -TERM "$stack_pid" 2>/dev/null || true
    # ferrystack stops its JVMs (SIGTERM, then SIGKILL after its grace period); give it time,
    # then take it down hard: its children die with it through PR_SET_PDEATHSIG.
    for _ in $(seq 1 600); do
      kill -0 "$stack_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$stack_pid" 2>/dev/null || true
  fi
  wait "$stack_pid" 2>/dev/null || true
  stack_pid=""
  rm -f "$env_file"
}

# Module directories from go.work's use directives (block and single-line forms).
modules() {
  awk '
    /^use[ \t]*\(/ { inblock = 1; next }
    inblock && /^\)/ { inblock = 0; next }
    inblock { gsub(/[ \t]|\/\/.*/, ""); if ($0 != "") print; next }
    /^use[ \t]+[^(]/ { sub(/^use[ \t]+/, ""); sub(/[ \t]*\/\/.*/, ""); print }
  ' go.work
}

# ---------------------------------------------------------------------------------------------
begin install
bash tools/install.sh || fail "tools/install.sh failed"
bash tools/install-apicurio.sh || fail "tools/install-apicurio.sh failed"
command -v buf >/dev/null || fail "buf not on PATH after install"
end

# ---------------------------------------------------------------------------------------------
mapfile -t mods < <(modules)
[ "${#mods[@]}" -gt 0 ] || fail "no modules found in go.work"
for m in "${mods[@]}"; do
  [ -f "$m/go.mod" ] || fail "go.work lists $m, which has no go.mod"
done

if [ "${FERRY_TEST_SKIP_STATIC:-}" != "1" ]; then
  begin static
  echo "--- gofmt"
  # Tracked and untracked-but-not-ignored files: new files are checked before their first commit.
  mapfile -t gofiles < <(git ls-files -co --exclude-standard -- '*.go')
  if [ "${#gofiles[@]}" -gt 0 ]; then
    unformatted=$(gofmt -l "${gofiles[@]}")
    [ -z "$unformatted" ] || fail "gofmt needed (run gofmt -w):
$unformatted"
  fi

  echo "--- go vet (${#mods[@]} modules)"
  for m in "${mods[@]}"; do
    (cd "$m" && go vet ./...) || fail "go vet failed in $m"
  done

  echo "--- buf lint"
  buf lint || fail "buf lint"

  echo "--- generated code up to date"
  # Generate into a scratch directory and compare, so the check never rewrites the tree.
  gen_tmp=$(mktemp -d)
  buf generate -o "$gen_tmp" || { rm -rf "$gen_tmp"; fail "buf generate"; }
  if ! diff -r "$gen_tmp/services/api/gen" services/api/gen >"$gen_tmp.diff" 2>&1; then
    head -40 "$gen_tmp.diff" >&2
    rm -rf "$gen_tmp" "$gen_tmp.diff"
    fail "services/api/gen differs from what buf generate produces from proto/: run make generate"
  fi
  rm -rf "$gen_tmp" "$gen_tmp.diff"

  echo "--- buf breaking"
  # On a branch, compare with main; on main itself (CI), with the commit before HEAD, so each
  # landing is checked against what was there before it.
  branch=$(git symbolic-ref --quiet --short HEAD 2>/dev/null || echo "")
  against=main
  [ "$branch" = "main" ] && against=HEAD~1
  if ! git rev-parse --verify --quiet "$against^{commit}" >/dev/null; then
    echo "skipped: no $against to compare against"
  elif [ -z "$(git ls-tree -d --name-only "$against" proto)" ]; then
    echo "skipped: $against has no proto/ yet"
  else
    buf breaking --against ".git#ref=$(git rev-parse "$against")" ||
      fail "buf breaking: proto/ changes break compatibility with $against"
  fi
  end
fi

# ---------------------------------------------------------------------------------------------
begin fluss
mkdir -p "$root/.cache/run" "$events_dir"
go build -o "$root/.cache/bin/ferrystack" ./e2e/cmd/ferrystack || fail "build ferrystack"
go build -o "$root/.cache/bin/testreport" ./tools/testreport || fail "build testreport"
testreport="$root/.cache/bin/testreport"
keep=()
[ "${FERRY_TEST_KEEP:-}" = "1" ] && keep=(-keep)
ports=(-zookeeper-port "${FERRY_TEST_ZK_PORT:-28181}" -coordinator-port "${FERRY_TEST_COORDINATOR_PORT:-28122}"
  -tablet-port "${FERRY_TEST_TABLET_PORT:-28123}")
# A port can be briefly taken (by a socket in TIME_WAIT from an earlier run, or an outgoing
# connection may hold one for a moment): retry a busy-port start a few times before giving up.
for attempt in 1 2 3; do
  # Started directly (not through `go run`) so the signal in stop_fluss reaches ferrystack itself.
  "$root/.cache/bin/ferrystack" -only fluss -test-ports "${ports[@]}" -env-file "$env_file" "${keep[@]}" >"$stack_log" 2>&1 &
  stack_pid=$!
  for _ in $(seq 1 1800); do
    [ -f "$env_file" ] && break
    kill -0 "$stack_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -f "$env_file" ] && break
  if kill -0 "$stack_pid" 2>/dev/null; then
    cat "$stack_log" >&2
    fail "Fluss not ready within 180s"
  fi
  wait "$stack_pid" 2>/dev/null || true
  stack_pid=""
  if [ "$attempt" -lt 3 ] && grep -q 'is not free' "$stack_log"; then
    echo "test port busy (attempt $attempt): $(grep -o '[A-Za-z]*Port [0-9.:]* is not free' "$stack_log" | head -1); retrying in 5s"
    sleep 5
    continue
  fi
  cat "$stack_log" >&2
  fail "ferrystack exited before Fluss was ready (log above)"
done
# shellcheck disable=SC1090
source "$env_file"
export FERRY_TEST_REQUIRE_FLUSS=1
export FERRY_TEST_REQUIRE_JAEGER=1
# The install phase installed every real client and the reference Kafka broker: a test that
# finds one missing or broken fails instead of skipping.
export FERRY_TEST_REQUIRE_CLIENTS=1
# frontdoor's Java client tests run kafka-clients from the jars tools/install-clients.sh resolved.
export FERRY_TEST_KAFKA_CLIENTS_CP="$root/.cache/clients/java/lib/*"
echo "Fluss ready: FERRY_TEST_FLUSS_BOOTSTRAP=$FERRY_TEST_FLUSS_BOOTSTRAP"
end

# ---------------------------------------------------------------------------------------------
begin test
read -r -a test_flags <<<"${FERRY_TEST_FLAGS:--count=1 -timeout 25m}"
failed=()
for m in "${mods[@]}"; do
  echo "--- go test $m"
  m_start=$(now)
  if (cd "$m" && go test -json "${test_flags[@]}" ./... |
    "$testreport" stream -save "$events_dir/$(echo "${m#./}" | tr / _).jsonl"); then
    mod_timings+=("$(printf '  %-22s %5ds' "$m" $(($(now) - m_start)))")
  else
    mod_timings+=("$(printf '  %-22s %5ds FAILED' "$m" $(($(now) - m_start)))")
    failed+=("$m")
  fi
  if ! kill -0 "$stack_pid" 2>/dev/null; then
    tail -40 "$stack_log" >&2
    fail "Fluss (ferrystack) died during the tests (log above)"
  fi
done
# Single-process mode (cmd/ferry): the suite's tests that make sense for one process, against a
# stack that runs every service in one process. The list is e2e/suite's singleTests.
single_tests='TestProduceJSON|TestConsumeWhatFerryWrote|TestConsumerGroup|TestFaultKill|TestFaultKillIdempotentClients|TestTracingOneTracePerProduce|TestSchemaRegistryPythonClient|TestAvroProduceConsumePython|TestJSONSchemaProduceConsumePython|TestProtobufProduceConsumePython'
echo "--- go test ./e2e/suite in single-process mode"
m_start=$(now)
if (cd e2e && FERRY_TEST_SINGLE=1 go test -json "${test_flags[@]}" -run "^($single_tests)\$" ./suite |
  "$testreport" stream -save "$events_dir/e2e_suite_single.jsonl"); then
  mod_timings+=("$(printf '  %-22s %5ds' "e2e/suite single" $(($(now) - m_start)))")
else
  mod_timings+=("$(printf '  %-22s %5ds FAILED' "e2e/suite single" $(($(now) - m_start)))")
  failed+=("e2e/suite (single-process mode)")
fi
if [ "${#failed[@]}" -gt 0 ]; then
  # Keep the Fluss server logs of a failed run: server-side errors often explain client failures.
  run_dir=$(grep 'stack ready' "$stack_log" | grep -o 'dir=[^ ]*' | head -1 | cut -d= -f2 || true)
  if [ -n "$run_dir" ] && [ -d "$run_dir/logs" ]; then
    rm -rf "$root/.cache/run/last-failed-logs"
    cp -r "$run_dir/logs" "$root/.cache/run/last-failed-logs"
    echo "Fluss logs of this run: .cache/run/last-failed-logs/ (grep ERROR coordinator.log tablet.log)" >&2
  fi
  fail "go test failed in: ${failed[*]}"
fi
end

# ---------------------------------------------------------------------------------------------
# Each fuzz target for a bounded number of executions on top of its seed corpus (which `go test`
# already ran): decoders of untrusted bytes must not panic or allocate from a declared length.
# Budgets are counts, not durations: a duration -fuzztime can fail with a bare "context deadline
# exceeded" when a worker is mid-batch at the deadline (golang/go#75804), a Go race, not a finding.
# Each count is roughly 10 s of fuzzing on two cores; FERRY_TEST_FUZZTIME overrides them all.
begin fuzz
while read -r dir target budget; do
  fuzz_time=${FERRY_TEST_FUZZTIME:-$budget}
  echo "--- $target ($dir, $fuzz_time)"
  (cd "$dir" && go test -json -run '^$' -fuzz "^$target\$" -fuzztime "$fuzz_time" . |
    "$testreport" stream -save "$events_dir/fuzz.jsonl") || fail "fuzz target $target in $dir"
done <<'TARGETS'
frontdoor/internal/kafka/broker FuzzReadRequest 60000x
frontdoor/internal/kafka/broker FuzzShapeMatchesKmsg 15000x
frontdoor/internal/kafka/broker FuzzDedupeProduce 60000x
transcodesvc/internal/kafkabatch FuzzDecodeBatch 200000x
transcodesvc/internal/kafkabatch FuzzLZ4Frames 15000x
transcodesvc/internal/convert FuzzConvertJSON 60000x
transcodesvc/internal/convert FuzzConvertAvro 50000x
transcodesvc/internal/convert FuzzAvroFastColumns 40000x
transcodesvc/internal/convert FuzzConvertProtobuf 50000x
services/fluss/logbatch FuzzDecode 100000x
services/fluss/kvbatch FuzzDecode 20000x
services/recordbatch FuzzParseHeader 500000x
TARGETS
end
