#!/usr/bin/env bash
# bench/micro/agreement_wait.sh: what the ranks' agreement on their steps (global loss, stop, metrics:
# train/agreement.h) costs between steps on the testbed (needs root): 2 sites x 2 ranks at RTT ms
# and 1 Gbit/s, a small model (2 layers x 64, T = 64, batch 8 of 2) as DiLoCo (the sites' inner
# steps, an outer sync every 20) and as pp 2 x dp 2; per binary given, runs alternating: the
# median step_s against the median time from one step's end to the next (the metrics' `time`),
# and the last block's size (agree_steps, where the binary writes it).
# Usage: sudo bench/micro/agreement_wait.sh DATA_DIR RTT_MS STEPS ROUNDS SLM [SLM ...]
set -euo pipefail
DATA=$(readlink -f "$1") RTT=$2 STEPS=$3 ROUNDS=$4; shift 4
[ "$(id -u)" -eq 0 ] || { echo "agreement_wait: needs root (the testbed); run with sudo" >&2; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
printf '[[site]]\nname = "a"\nranks = 2\n[[site]]\nname = "b"\nranks = 2\n[[link]]\nsites = ["a", "b"]\ndelay_ms = %s\nrate_mbit = 1000\n' \
  "$(python3 -c "print($RTT / 2)")" > "$W/c.toml"
declare -A LAYOUT=([diloco]="--set sync.mode=diloco --set dist.ranks_per_site=2 --set sync.inner_steps=20"
                   [pp2xdp2]="--set parallel.pp=2 --set parallel.micro_batches=2")
for r in $(seq "$ROUNDS"); do
  for layout in diloco pp2xdp2; do
    for slm in "$@"; do
      rm -rf "$W/run"
      # shellcheck disable=SC2086
      "$slm" testbed run "$W/c.toml" -- "$slm" train -c /dev/null --set data.dir="$DATA" --set model.n_layer=2 \
        --set model.n_head=2 --set model.n_embd=64 --set model.block_size=64 --set batch.batch_size=8 \
        --set batch.micro_batch=2 --set eval.every=0 --set checkpoint.every=0 --set system.threads=1 \
        --set run.dir="$W/run" --set schedule.max_steps="$STEPS" ${LAYOUT[$layout]} > "$W/log" 2>&1 \
        || { tail -3 "$W/log" >&2; exit 1; }
      python3 - "$W/run/metrics.jsonl" "$slm" "$r" "$RTT" "$layout" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"step_s"' in l]
gaps = [b["time"] - a["time"] for a, b in zip(rows, rows[1:])][4:]
print(f"round {sys.argv[3]}, {sys.argv[4]} ms RTT, {sys.argv[5]}, {sys.argv[2]}: step_s {statistics.median(x['step_s'] for x in rows[5:]):.4f} s, "
      f"step end to step end {statistics.median(gaps):.4f} s, wall {rows[-1]['time'] - rows[0]['time']:.2f} s for steps 2-{len(rows)}, "
      f"agree_steps {rows[-len(rows) // 2].get('agree_steps', '-')}")
PY
    done
  done
done
