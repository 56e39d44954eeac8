#!/usr/bin/env bash
# YCSB 0.17 core workloads A, B, C and E against a Redis-protocol server (strata-server or
# redis-server) through tools/ycsb's binding (YCSB's own redis-binding jar is not served by
# the registry here; ours stores records as its documentation describes: a hash per record,
# a sorted set "_indices" for scans). Needs Java and Maven (the jars come from Maven Central).
# Usage: tools/ycsb-redis.sh PORT [RECORDS=1000000] [OPERATIONS=1000000] [THREADS=8]
# (E_OPERATIONS=N sets workload E's operation count apart: its scans take ~1 ms each;
# WORKLOADS="c" runs only those workloads after the load, default "a b c e".)
# Prints one line per workload: throughput and p99 latencies (us).
set -euo pipefail
cd "$(dirname "$0")/ycsb"
port=${1:?port}; records=${2:-1000000}; ops=${3:-1000000}; threads=${4:-8}
lib=${YCSB_LIB:-/tmp/strata-ycsb/lib}; classes=${YCSB_CLASSES:-/tmp/strata-ycsb/classes}
if [ ! -f "$lib/core-0.17.0.jar" ]; then
  mvn -q dependency:copy-dependencies -DoutputDirectory="$lib"
fi
mkdir -p "$classes"
javac -d "$classes" -cp "$lib/*" src/strata/ycsb/RedisHashClient.java
cp="$lib/*:$classes"
common=(-db strata.ycsb.RedisHashClient -p redis.port="$port" -p recordcount="$records" -p operationcount="$ops" -threads "$threads")
summary() { # workload name, log
  tp=$(grep -m1 '^\[OVERALL\], Throughput' "$2" | awk -F', ' '{print $3}')
  p99=$(grep '99thPercentileLatency' "$2" | grep -v -- '-FAILED' | awk -F', ' '{printf "%s %s ", $1, $3}')
  echo "$1: throughput ${tp} ops/s; p99 us: ${p99}"
}
log=$(mktemp -d)
java -cp "$cp" site.ycsb.Client -load -P workloads/workloada "${common[@]}" -s > "$log/load.txt" 2> "$log/load.err"
summary load "$log/load.txt"
for w in ${WORKLOADS:-a b c e}; do
  n=$ops; [ "$w" = e ] && n=${E_OPERATIONS:-$ops}
  java -cp "$cp" site.ycsb.Client -t -P "workloads/workload$w" "${common[@]}" -p operationcount="$n" -s > "$log/$w.txt" 2> "$log/$w.err"
  summary "workload$w" "$log/$w.txt"
done
echo "logs: $log"
