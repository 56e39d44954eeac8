#!/usr/bin/env bash
# A short redis-benchmark run against a release-built strata-server on a temporary database
# (CI runs it when redis-tools is installed: `apt-get install redis-tools`).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v redis-benchmark >/dev/null || { echo "redis-benchmark not found (apt-get install redis-tools)" >&2; exit 1; }
cargo build --release -q -p strata-server
dir=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
"${CARGO_TARGET_DIR:-target}/release/strata-server" --dir "$dir/db" --port "$port" --sync always 2>"$dir/log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$port" ping >/dev/null 2>&1 || { echo "strata-server did not start:" >&2; cat "$dir/log" >&2; exit 1; }
out=$(redis-benchmark -p "$port" -t set,get,mset,incr -n 20000 -c 20 -P 16 -q 2>&1 | tr '\r' '\n' | grep "requests per second")
echo "$out"
[ "$(echo "$out" | wc -l)" -eq 4 ] || { echo "redis-benchmark did not finish every test" >&2; exit 1; }
[ "$(redis-cli -p "$port" get key:__rand_int__ | wc -c)" -gt 1 ]
# A real client library: redis-py, in a venv of its own.
python3 -m venv "$dir/venv"
"$dir/venv/bin/pip" install --quiet "redis>=5"
"$dir/venv/bin/python" tools/server-client-test.py "$port"
kill -TERM $pid
wait $pid
echo "strata-server smoke: ok"
