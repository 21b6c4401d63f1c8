#!/usr/bin/env bash
# bench/studies/pipeline_bench.sh: pipeline parallelism and pipeshard on CPU ranks of this machine (Gloo,
# loopback), the numbers the planner needs per plan: median step time, tokens/s, measured pipeline
# bubble (1 - compute / schedule time, mean over ranks) against the schedule's theory
# (P-1)/(v*M+P-1), bytes sent per step per link type (stage-to-stage, tensor-parallel,
# data-parallel; all ranks together) and peak RSS per rank against the plan's estimate.
# Part 1: 2 ranks (one core each), same model, global batch and seed for every plan.
# Part 2: memory cap: a GPT-2-large-shaped model (36 x 1280, 20 heads, 774M parameters) on 4
#   ranks with parallel.memory_cap_gb = CAP: refused under data parallelism, trained under pp 4.
# Usage: bench/studies/pipeline_bench.sh SLM DATA_DIR [STEPS=10] [CAP=6]   (prints markdown tables)
set -euo pipefail
SLM=$1 DATA=$2 STEPS=${3:-10} CAP=${4:-6}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
MODEL=(--set model.n_layer=8 --set model.n_embd=256 --set model.n_head=4 --set model.block_size=128
       --set batch.batch_size=32 --set batch.micro_batch=4 --set schedule.max_steps=$STEPS
       --set eval.every=0 --set checkpoint.every=0 --set data.dir="$DATA")
report() {  # report NAME LABEL
  python3 - "$W/$1" "$2" <<'PY'
import json, re, statistics, sys
d, label = sys.argv[1:]
rows = [json.loads(l) for l in open(d + "/metrics.jsonl") if '"loss"' in l][2:]
med = lambda k: statistics.median(r[k] for r in rows)
peaks = [max(r["peak_mem_per_rank"][i] for r in rows) / 2**20 for i in range(len(rows[0]["peak_mem_per_rank"]))]
est = re.findall(r"rank \d+: ~([\d.]+ [GM]iB)", open(d + ".log").read())
print(f"| {label} | {med('step_s')*1000:.0f} | {med('tokens_per_s'):.0f} | {med('bubble'):.2f} | "
      f"{rows[-1]['bubble_theory']:.2f} | {med('bytes_pp')/2**20:.2f} | {med('bytes_tp')/2**20:.2f} | "
      f"{med('bytes_dp')/2**20:.2f} | {' / '.join(f'{p:.0f}' for p in peaks)} | {' / '.join(est) or '-'} |")
PY
}
run() {  # run NAME LABEL RANKS ARGS...
  local name=$1 label=$2 n=$3; shift 3
  "$SLM" launch -n "$n" -- "$SLM" train -c /dev/null "${MODEL[@]}" --set run.dir="$W/$name" "$@" \
    > "$W/$name.log" 2>&1 || { cat "$W/$name.log"; exit 1; }
  report "$name" "$label"
}
echo "| plan (2 ranks) | step ms | tokens/s | bubble | theory | MiB/step stage-to-stage | MiB/step tp | MiB/step dp | peak RSS MiB per rank | estimate per rank |"
echo "|---|---|---|---|---|---|---|---|---|---|"
run r1 "1 process (2 threads)" 1
run dp2 "dp 2" 2
run tp2 "tp 2" 2 --tp 2
run g2 "pp 2 gpipe, M=8" 2 --pp 2 --schedule gpipe
run f2 "pp 2 1f1b, M=8" 2 --pp 2
run f2m2 "pp 2 1f1b, M=2" 2 --pp 2 --set batch.micro_batch=16
run f2m16 "pp 2 1f1b, M=16" 2 --pp 2 --set batch.micro_batch=2
run i2 "pp 2 interleaved v=2, M=8" 2 --pp 2 --virtual-stages 2
printf 'micro_batch = [4]\nmicro_batches = 8\nschedule = "1f1b"\n[[stage]]\nlayers = [0, 5]\nranks = [0]\n[[stage]]\nlayers = [5, 8]\nranks = [1]\n' > "$W/uneven.toml"
run u2 "pp 2 1f1b, uneven 5+3 layers (head on the last)" 2 --set parallel.plan="$W/uneven.toml"
echo
echo "Memory cap (GPT-2-large shape, 4 ranks, cap ${CAP} GiB, T=64, 4 micro-batches of 1 sequence):"
echo
LARGE=(-c /dev/null --set model.n_layer=36 --set model.n_embd=1280 --set model.n_head=20 --set model.block_size=64
       --set batch.batch_size=4 --set batch.micro_batch=1 --set schedule.max_steps=3 --set eval.every=0
       --set checkpoint.every=0 --set data.dir="$DATA" --set parallel.memory_cap_gb=$CAP)
if "$SLM" launch -n 4 -- "$SLM" train "${LARGE[@]}" --set run.dir="$W/ldp" > "$W/ldp.log" 2>&1; then
  echo "data parallel fitted the cap (unexpected)"
else
  echo "- data parallel, 4 ranks: \`$(grep -m1 -o 'slm: error: .*' "$W/ldp.log")\`"
fi
"$SLM" plan make "${LARGE[@]}" --world 4 --pp 4 2>&1 >/dev/null | sed 's/^/    /'
MODEL=("${LARGE[@]:2}")
echo
echo "| plan (4 ranks) | step ms | tokens/s | bubble | theory | MiB/step stage-to-stage | MiB/step tp | MiB/step dp | peak RSS MiB per rank | estimate per rank |"
echo "|---|---|---|---|---|---|---|---|---|---|"
run lpp "GPT-2-large shape, pp 4 1f1b" 4 --pp 4
