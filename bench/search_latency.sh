#!/usr/bin/env bash
# bench/search_latency.sh: `slm search` latency (p50/p99) and throughput for indexes of about 10k
# and 100k entries, exact (flat) against HNSW, in vector and hybrid mode. Entries are windows of 8
# tokens of TEXT (stride 55 or 5), embedded by the model RUN; the queries are 200 lines of TEXT.
# Each query's time includes embedding it with the model (what a user waits for).
# Usage: bench/search_latency.sh SLM RUN TEXT WORK_DIR
set -euo pipefail
SLM=$(realpath "$1") RUN=$(realpath "$2") TEXT=$(realpath "$3") WORK=$4
mkdir -p "$WORK" && cd "$WORK"
grep -v '^\s*$' "$TEXT" | awk 'length($0) > 30' | head -200 > queries.txt
for stride in 55 5; do
  for kind in flat hnsw; do
    ix=ix-$stride-$kind
    [ -d $ix ] || "$SLM" embed "$RUN" "$TEXT" --separator blank --window 9 --stride $stride --index $kind -q --out $ix \
      --device cpu | sed 's/^/  /'
    for mode in vector hybrid; do
      "$SLM" search $ix --queries queries.txt --mode $mode -k 10 --device cpu 2>&1 > /dev/null | sed 's/^/  /'
    done
  done
done
