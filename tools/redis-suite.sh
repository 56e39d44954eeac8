#!/usr/bin/env bash
# Redis 7.0.15's own test suite (../shared/redis-tests, its external-server mode) against a
# release-built strata-server: each unit against a fresh server on a temporary database.
#   tools/redis-suite.sh [--expect-all] UNIT...    e.g. tools/redis-suite.sh unit/type/string
# Needs tclsh and redis-cli (Debian: apt-get install tcl redis-tools). Prints `ok / err /
# exception` per unit and the total of tests passed; logs go to $LOGDIR (default a temporary
# directory, printed). Tests that raise are counted and the unit goes on (the suite's own
# --durable). With --expect-all, exits non-zero if any unit had a failure (CI runs the units
# that pass whole this way).
set -uo pipefail
cd "$(dirname "$0")/.."
expect_all=0
[ "${1:-}" = "--expect-all" ] && { expect_all=1; shift; }
suite=${REDIS_TESTS:-../shared/redis-tests}
[ -x "$suite/run-external.sh" ] || { echo "Redis's test suite not found at $suite (set REDIS_TESTS)" >&2; exit 2; }
command -v tclsh >/dev/null || { echo "tclsh not found (apt-get install tcl)" >&2; exit 2; }
command -v redis-cli >/dev/null || { echo "redis-cli not found (apt-get install redis-tools)" >&2; exit 2; }
cargo build --release -q -p strata-server || exit 2
bin="${CARGO_TARGET_DIR:-target}/release/strata-server"
export LOGDIR=${LOGDIR:-$(mktemp -d)}
echo "logs: $LOGDIR"
total=0; failed=0
for u in "$@"; do
  dir=$(mktemp -d)
  port=$((20000 + RANDOM % 20000))
  "$bin" --dir "$dir/db" --port "$port" --enable-flushdb --sync none 2>"$dir/log" &
  pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  if ! redis-cli -p "$port" ping >/dev/null 2>&1; then
    echo "$u: strata-server did not start on port $port:" >&2; cat "$dir/log" >&2
    kill $pid 2>/dev/null; rm -rf "$dir"; failed=1; continue
  fi
  line=$(UNIT_TIMEOUT=${UNIT_TIMEOUT:-600} DURABLE=1 "$suite/run-external.sh" "$port" "$u" | tail -1)
  echo "$line"
  # A unit passes whole only if the harness says so itself (a hang killed by the timeout, or
  # an abort outside a test, can leave "err 0, exception 0" behind).
  grep -q "All tests passed without errors" "$LOGDIR/$(echo "$u" | tr / _).log" || failed=1
  kill -0 $pid 2>/dev/null || { echo "$u: strata-server died during the unit:" >&2; tail -20 "$dir/log" >&2; failed=1; }
  kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"
  ok=$(echo "$line" | sed -n 's/.*: ok \([0-9]*\),.*/\1/p')
  total=$((total + ${ok:-0}))
done
echo "passed: $total"
[ $expect_all = 1 ] && [ $failed = 1 ] && exit 1
exit 0
