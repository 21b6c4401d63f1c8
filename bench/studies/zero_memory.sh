#!/usr/bin/env bash
# bench/studies/zero_memory.sh: per-rank memory of each ZeRO stage against the ZeRO paper's formulas.
# Model: GPT-2 124M's shape (12 layers, d=768, 12 heads; vocabulary from DATA), sequences of 64
# tokens so that activations stay small next to the model state; global batch 8, fp32, 3 steps.
# Our training is fp32 throughout: 4 bytes each of parameters, gradients, and the two Adam moments,
# so the model state is 16 bytes/parameter, the same total as the paper's mixed-precision 2+2+12,
# and the stage formulas carry over: DP 16P, ZeRO-1 8P+8P/N, ZeRO-2 4P+12P/N, ZeRO-3 16P/N.
# Columns: the state this rank holds (from the run's header: parameters / gradients / optimizer),
# the formula's prediction, rank 0's peak RSS (everything: LibTorch, activations, buffers) and the
# step time (the faster of steps 2 and 3; the first warms up).
# With TP=2: dp 2 x tp 2 on 4 ranks, each ZeRO stage over dp; the formulas with P the parameters
# of a tp rank's slice (12 layers x (12C²/2 + 7C/2 + 6C) + V·C/2 + T·C + 2C) and N = dp.
# With PP=2: pp 2 x dp 2 on 4 ranks, each ZeRO stage over a stage's dp group; the formulas with P
# rank 0's stage (6 layers + the embeddings; the last stage's copy of the tied head is not counted).
# Usage: [TP=2 | PP=2] bench/studies/zero_memory.sh SLM DATA_DIR
set -euo pipefail
SLM=$1 DATA=$2 TP=${TP:-1} PP=${PP:-1}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
MODEL=(--set model.n_layer=12 --set model.n_embd=768 --set model.n_head=12 --set model.block_size=64
       --set batch.batch_size=8 --set batch.micro_batch=1 --set schedule.max_steps=3
       --set eval.every=0 --set checkpoint.every=0 --set data.dir="$DATA" --set parallel.bucket_mb=25)
echo "| ranks N | ZeRO | P (params) | params / grads / optimizer MiB (rank 0) | model state MiB | formula MiB | peak RSS MiB | step s |"
echo "|---|---|---|---|---|---|---|---|"
CFGS=("1 0" "2 0" "2 1" "2 2" "2 3" "4 0" "4 1" "4 2" "4 3")
[ "$TP" = 1 ] || CFGS=("$((2 * TP)) 0" "$((2 * TP)) 1" "$((2 * TP)) 2" "$((2 * TP)) 3")
[ "$PP" = 1 ] || CFGS=("$((2 * PP)) 0" "$((2 * PP)) 1" "$((2 * PP)) 2" "$((2 * PP)) 3")
for cfg in "${CFGS[@]}"; do
  set -- $cfg
  n=$1 z=$2
  "$SLM" launch -n "$n" -- "$SLM" train -c /dev/null "${MODEL[@]}" --set run.dir="$W/n${n}z$z" \
    --set parallel.zero="$z" --set parallel.tp="$TP" --set parallel.pp="$PP" > "$W/log" 2>&1 || { cat "$W/log"; exit 1; }
  python3 - "$W/log" "$W/n${n}z$z/metrics.jsonl" "$n" "$z" "$TP" "$PP" <<'PY'
import json, re, sys
log, metrics, n, z, t, pp = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
text = open(log).read()
P = int(re.search(r"train: (\d+) parameters", text).group(1))
C, L, T = 768, 12, 64
V = (P - L * (12 * C * C + 13 * C) - T * C - 2 * C) // C
# rank 0's part: a tp rank's slice (P for tp 1) of the first stage (the whole model for pp 1)
Pt = L // pp * (12 * C * C / t + 7 * C / t + 6 * C) + V * C / t + T * C + (2 * C if pp == 1 else 0)
N = n // t // pp
p, g, o = map(float, re.search(r"parameters ([\d.]+) MiB, gradients ([\d.]+) MiB, optimizer ([\d.]+) MiB", text).groups())
formula = {0: 16 * Pt, 1: 8 * Pt + 8 * Pt / N, 2: 4 * Pt + 12 * Pt / N, 3: 16 * Pt / N}[z] / 2**20
steps = [json.loads(l) for l in open(metrics) if '"loss"' in l]
rss = max(s["peak_mem_bytes"] for s in steps) / 2**20
step_s = min(s["step_s"] for s in steps[1:])
print(f"| {n} | {z} | {P/1e6:.1f}M | {p:.0f} / {g:.0f} / {o:.0f} | {p+g+o:.0f} | {formula:.0f} | {rss:.0f} | {step_s:.1f} |")
PY
done
