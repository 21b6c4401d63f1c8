#!/usr/bin/env bash
# bench/studies/schedules.sh: two learning-rate schedules side by side at the same steps: cosine
# from the end of warmup (the default) against warmup-stable-decay (schedule.decay_ratio = 0.2:
# the last 20% of the steps decay, schedule.decay = "sqrt"). The tiny preset in fp32 on one thread,
# its 300 steps (30 of warmup, lr 1e-3 down to 10%); validation every 50 steps over 40 batches.
# Prints a Markdown table: each schedule's validation loss at steps 150, 200, 250, 300 and the
# mean training loss of its last 10 steps. Runs already in OUT (metrics.jsonl present) are reused.
# Usage: bench/studies/schedules.sh SLM DATA_DIR OUT
set -euo pipefail
SLM=$1 DATA=$2 OUT=$3
COMMON=(-c configs/tiny.toml --set data.dir="$DATA" --set system.precision=fp32 --set system.threads=1
        --set eval.every=50 --set eval.batches=40 --set log.every=50 --set checkpoint.every=0)
RUNS=("cosine:0:cosine" "wsd_sqrt:0.2:sqrt")
mkdir -p "$OUT"
for r in "${RUNS[@]}"; do
  IFS=: read -r name ratio decay <<<"$r"
  [ -f "$OUT/$name/metrics.jsonl" ] && continue
  "$SLM" train "${COMMON[@]}" --set run.dir="$OUT/$name" --set schedule.decay_ratio="$ratio" \
    --set schedule.decay="$decay" > "$OUT/$name.log" 2>&1 || { tail -5 "$OUT/$name.log"; exit 1; }
done
python3 - "$OUT" "${RUNS[@]}" <<'PY'
import json, sys
out, runs = sys.argv[1], sys.argv[2:]
print("| schedule | val loss @150 | @200 | @250 | @300 | train loss, last 10 steps |")
print("|---|---|---|---|---|---|")
for r in runs:
    name, ratio, decay = r.split(":")
    rows = [json.loads(l) for l in open(f"{out}/{name}/metrics.jsonl")]
    val = {j["step"]: j["val_loss"] for j in rows if "val_loss" in j}
    train = [j["loss"] for j in rows if "loss" in j][-10:]
    what = f"{decay} from the end of warmup" if float(ratio) == 0 else f"warmup-stable-decay, last {float(ratio):.0%} {decay}"
    print(f"| {what} | " + " | ".join(f"{val[s]:.4f}" for s in (150, 200, 250, 300)) + f" | {sum(train) / len(train):.4f} |")
PY
