#!/bin/sh
# The OHDB paper's Table II workload divided by 40 on the real HyperLevelDB 1.1.0, to count
# the level compactions its own rules make (docs/design/baselines.md, docs/design/ohdb.md).
#
# usage: tools/hyperleveldb/run.sh SRC WORK [RATE] [ROUNDS]
#   SRC    a HyperLevelDB source tree at tag releases/1.1.0 (commit 4c3d56e2), e.g.
#          git clone https://github.com/rescrv/HyperLevelDB && git -C HyperLevelDB checkout releases/1.1.0
#   WORK   a scratch directory: the patched build, the database, runs/NAME.{out,LOG,json}
#   RATE   puts/s of the fill (default 15000: the level thread keeps up, L0 stays under 7
#          tables, so the optimistic thread never runs; 0 = unpaced)
#   ROUNDS default 3 (seeds 301, 302, ...)
# Needs: apt-get install -y autoconf automake libtool g++
#
# 1.1.0 fixes table size, level targets and the compaction-size cap as constants in
# db/version_set.cc: patch-scale-1-40.diff divides each by 40 (tables 209,715 B, L1 = L2 =
# 2,621,440 B). The workload: 2.5M random 16 B keys (db_bench fillrandom's), 100 B values,
# memtable 838,861 B, no compression, no Bloom filter; fill, wait until the LOG is quiet,
# 250K random reads, wait. parse_log.py counts merges, move operations and bytes from the
# LOG; summarize.py prints rounds and medians.
set -e
if [ $# -lt 2 ] || [ -z "$1" ] || [ -z "$2" ]; then
  echo "usage: $0 SRC WORK [RATE] [ROUNDS]" >&2
  exit 2
fi
SRC=$(cd "$1" && pwd); WORK=$2; RATE=${3:-15000}; ROUNDS=${4:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$WORK/runs"
WORK=$(cd "$WORK" && pwd)
case "$WORK/" in
  "$SRC"/*) echo "$0: WORK must be outside SRC" >&2; exit 2 ;;
esac
if [ ! -f "$WORK/driver" ]; then
  rm -rf "$WORK/src" && cp -r "$SRC" "$WORK/src"
  (cd "$WORK/src" && patch -p1 --forward --batch < "$HERE/patch-scale-1-40.diff" \
    && autoreconf -fi && ./configure --disable-shared CXXFLAGS="-O2 -g -DNDEBUG" \
    && make -j2 libhyperleveldb.la)
  g++ -O2 -std=c++11 -pthread -DLEVELDB_PLATFORM_POSIX -DHAVE_CONFIG_H -I"$WORK/src" \
    "$HERE/driver.cc" "$WORK/src/.libs/libhyperleveldb.a" \
    $(sed -n 's/^SNAPPY_LIBS = //p' "$WORK/src/Makefile") -o "$WORK/driver"
fi
cd "$WORK"
names=""
i=1
while [ "$i" -le "$ROUNDS" ]; do
  n="r$RATE-$i"
  rm -rf "$WORK/db"
  ./driver --db="$WORK/db" --num=2500000 --reads=250000 --write_buffer_size=838861 \
    --seed=$((300 + i)) --rate="$RATE" --quiet=8 > "runs/$n.out"
  cp "$WORK/db/LOG" "runs/$n.LOG"
  python3 "$HERE/parse_log.py" "runs/$n.LOG" "runs/$n.out" > "runs/$n.json"
  names="$names $n"
  i=$((i + 1))
done
python3 "$HERE/summarize.py" $names
