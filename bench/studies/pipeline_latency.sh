#!/usr/bin/env bash
# bench/studies/pipeline_latency.sh: a latency-bound pipeline on the testbed (needs root): 2 sites x 1 rank
# at RTT ms and 1 Gbit/s, a small model (2 layers x 64, T = 64) split in 2 stages, 4 micro-batches
# of 2; the median step, schedule and communication-after-the-schedule time of each binary given,
# runs alternating. What the per-step exchanges cost that compute cannot hide (e.g. the tied
# embedding's, parallel/pipeline/executor.cpp).
# Usage: sudo bench/studies/pipeline_latency.sh DATA_DIR RTT_MS STEPS ROUNDS SLM [SLM ...]
set -euo pipefail
DATA=$(readlink -f "$1") RTT=$2 STEPS=$3 ROUNDS=$4; shift 4
[ "$(id -u)" -eq 0 ] || { echo "pipeline_latency: needs root (the testbed); run with sudo" >&2; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
printf '[[site]]\nname = "a"\nranks = 1\n[[site]]\nname = "b"\nranks = 1\n[[link]]\nsites = ["a", "b"]\ndelay_ms = %s\nrate_mbit = 1000\n' \
  "$(python3 -c "print($RTT / 2)")" > "$W/c.toml"
for r in $(seq "$ROUNDS"); do
  for slm in "$@"; do
    rm -rf "$W/run"
    "$slm" testbed run "$W/c.toml" -- "$slm" train -c /dev/null --set data.dir="$DATA" --set model.n_layer=2 \
      --set model.n_head=2 --set model.n_embd=64 --set model.block_size=64 --set batch.batch_size=8 \
      --set batch.micro_batch=2 --set parallel.pp=2 --set schedule.warmup_steps=2 --set eval.every=0 \
      --set checkpoint.every=0 --set log.every=1 --set system.precision=fp32 --set run.dir="$W/run" \
      --set schedule.max_steps="$STEPS" > "$W/log" 2>&1 || { tail -3 "$W/log" >&2; exit 1; }
    python3 - "$W/run/metrics.jsonl" "$slm" "$r" "$RTT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"step_s"' in l][1:]
m = lambda k: statistics.median(x[k] for x in rows)
print(f"round {sys.argv[3]}, {sys.argv[4]} ms RTT, {sys.argv[2]}: step {m('step_s'):.3f} s, schedule {m('schedule_s'):.3f} s, "
      f"comm after it {m('comm_s'):.3f} s ({len(rows)} steps)")
PY
  done
done
