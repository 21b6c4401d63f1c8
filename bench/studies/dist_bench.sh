#!/usr/bin/env bash
# bench/studies/dist_bench.sh: data parallelism and ZeRO on CPU ranks of this machine (Gloo, loopback).
# For 1, 2 and 4 ranks and ZeRO 0/1/2/3 (ZeRO 2 also with 4 MiB buckets): median step time, exposed communication per step (waiting
# for reductions and the parameter all-gather after backward), tokens/s, per-rank memory of
# parameters / gradients / optimizer state (from the run's header) and peak RSS of rank 0.
# Overlap: the same run with one bucket for all gradients (the all-reduce starts after backward
# ends, nothing hidden) against the default buckets; hidden = 1 - exposed(buckets)/exposed(one).
# Bucket sweep: 2 ranks, ZeRO 0. Same model, global batch and seed everywhere.
# Usage: bench/studies/dist_bench.sh SLM DATA_DIR [STEPS=12]    (prints a markdown table)
set -euo pipefail
SLM=$1 DATA=$2 STEPS=${3:-12}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
MODEL=(--set model.n_layer=4 --set model.n_embd=256 --set model.n_head=4 --set model.block_size=256
       --set batch.batch_size=16 --set batch.micro_batch=4 --set schedule.max_steps=$STEPS
       --set eval.every=0 --set checkpoint.every=0 --set data.dir="$DATA")
run() {  # run NAME RANKS ZERO BUCKET_MB
  local name=$1 n=$2 z=$3 mb=$4
  "$SLM" launch -n "$n" -- "$SLM" train -c /dev/null "${MODEL[@]}" --set run.dir="$W/$name" \
    --set parallel.zero="$z" --set parallel.bucket_mb="$mb" > "$W/$name.log" 2>&1 || { cat "$W/$name.log"; exit 1; }
  python3 - "$W/$name" "$n" "$z" "$mb" <<'PY'
import json, re, statistics, sys
d, n, z, mb = sys.argv[1:]
rows = [json.loads(l) for l in open(d + "/metrics.jsonl") if '"loss"' in l][2:]
med = lambda k: statistics.median(r[k] for r in rows)
log = open(d + ".log").read()
m = re.search(r"parameters ([\d.]+) MiB, gradients ([\d.]+) MiB, optimizer ([\d.]+) MiB", log)
print(f"| {n} | {z} | {mb} | {med('step_s')*1000:.0f} | {med('comm_s')*1000:.0f} | {med('tokens_per_s'):.0f} "
      f"| {m.group(1)} / {m.group(2)} / {m.group(3)} | {max(r['peak_mem_bytes'] for r in rows)/2**20:.0f} |")
PY
}
echo "| ranks | ZeRO | bucket MiB | step ms | exposed comm ms | tokens/s | MiB per rank: params / grads / optimizer | peak RSS MiB (rank 0) |"
echo "|---|---|---|---|---|---|---|---|"
run r1 1 0 25
for n in 2 4; do for z in 0 1 2 3; do run r${n}z$z $n $z 25; done; run r${n}z2b $n 2 4; done
echo
echo "Overlap and bucket sweep (2 ranks, ZeRO 0):"
echo
echo "| ranks | ZeRO | bucket MiB | step ms | exposed comm ms | tokens/s | MiB per rank: params / grads / optimizer | peak RSS MiB (rank 0) |"
echo "|---|---|---|---|---|---|---|---|"
for mb in 0.25 1 4 1000; do run s$mb 2 0 $mb; done
