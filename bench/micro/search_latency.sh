#!/usr/bin/env bash
# bench/micro/search_latency.sh: `slm search` latency (p50/p99) and throughput for indexes of about 10k
# and 100k entries, exact (flat) against HNSW, in vector and hybrid mode. Entries are windows of 8
# tokens of TEXT (the first 330 kB at stride 8, or all of it at stride 5), embedded by the model
# RUN; the queries are 200 lines of TEXT.
# Each query's time includes embedding it with the model (what a user waits for).
# Usage: bench/micro/search_latency.sh SLM RUN TEXT WORK_DIR   (DEVICE=cuda embeds entries and queries on
# the GPU; FAISS searches on the CPU either way)
set -euo pipefail
SLM=$(realpath "$1") RUN=$(realpath "$2") TEXT=$(realpath "$3") WORK=$4 DEVICE=${DEVICE:-cpu}
mkdir -p "$WORK" && cd "$WORK"
awk 'length($0) > 30 && n < 200 { print; n++ }' "$TEXT" > queries.txt
head -c 330000 "$TEXT" > small.txt  # ~10k entries at stride 8; all of TEXT at stride 5: ~100k
for size in small all; do
  text=small.txt stride=8
  [ $size = all ] && text=$TEXT stride=5
  for kind in flat hnsw; do
    ix=ix-$size-$kind
    [ -d $ix ] || "$SLM" embed "$RUN" "$text" --separator blank --window 9 --stride $stride --index $kind -q --out $ix \
      --device "$DEVICE" | sed 's/^/  /'
    for mode in vector hybrid; do
      "$SLM" search $ix --queries queries.txt --mode $mode -k 10 --device "$DEVICE" 2>&1 > /dev/null | sed 's/^/  /'
    done
  done
done
