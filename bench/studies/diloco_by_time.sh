#!/usr/bin/env bash
# bench/studies/diloco_by_time.sh: DiLoCo across a fast and a slow site, `--sync-by steps` against
# `--sync-by time` (docs/benchmarks.md "DiLoCo by time"; needs root: the testbed).
# 2 sites x 1 rank joined at RTT ms (default 20); site b's rank gets CPUS of a core (default 0.35,
# a cgroup quota: an older GPU's share of the work). The same global steps for both modes, so
# `time` sees more tokens in about the same wall time: wall time, tokens, tokens/s, the inner
# steps the sites took per sync, and the validation loss at the end. Then ZeRO 0 against ZeRO 3
# inside 2 sites x 2 ranks (no delay): peak memory per rank and step time.
# Model: 4 layers, 4 heads, 128 channels, T = 128, tinyshakespeare with a 4,096-token tokenizer,
# batch 16 x 128 (micro 4), AdamW lr 1e-3, H = 10, outer SGD lr 0.7, Nesterov 0.9.
# Usage: sudo bench/studies/diloco_by_time.sh SLM SHARED_DATA_DIR [STEPS=100] [RTT=20] [CPUS=0.35]
set -euo pipefail
SLM=$(readlink -f "$1") DATA=$(readlink -f "$2") STEPS=${3:-100} RTT=${4:-20} CPUS=${5:-0.35}
[ "$(id -u)" -eq 0 ] || { echo "diloco_by_time: needs root (the testbed)" >&2; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"; "$SLM" testbed down "$W/geo.toml" 2>/dev/null || true' EXIT
cd "$W"
"$SLM" tokenizer train "$DATA/tinyshakespeare.txt" --vocab-size 4096 --out tok -q > /dev/null
"$SLM" data prepare "$DATA/tinyshakespeare.txt" -t tok --separator blank --val-fraction 0.05 --out data -q > /dev/null
cat > geo.toml <<TOML
name = "dbt"
[[site]]
name = "a"
[[site]]
name = "b"
cpus = $CPUS
[[link]]
sites = ["a", "b"]
delay_ms = $(python3 -c "print($RTT / 2)")
TOML
MODEL=(-c /dev/null --set data.dir="$W/data" --set model.n_layer=4 --set model.n_head=4 --set model.n_embd=128
       --set model.block_size=128 --set batch.batch_size=16 --set batch.micro_batch=4 --set optim.lr=1e-3
       --set checkpoint.every=0 --set system.threads=1 --set log.every=10 --set eval.every="$STEPS"
       --set schedule.max_steps="$STEPS" --set sync.mode=diloco --set sync.inner_steps=10)
summary() {  # RUN LOG -> one table row
  python3 - "$1" "$2" <<'PY'
import json, re, sys
run, log = sys.argv[1], open(sys.argv[2]).read()
rows = [json.loads(l) for l in open(run + "/metrics.jsonl")]
steps = [r for r in rows if "step_s" in r]
val = [r["val_loss"] for r in rows if "val_loss" in r]
wall = steps[-1]["time"] - steps[0]["time"]  # steps 2..N
tokens = sum(r["tokens"] for r in steps[1:])
counts = re.findall(r"the sites take ([0-9, ]+) inner steps", log)
print(f"| {run} | {wall:.1f} | {tokens:,} | {tokens / wall:,.0f} | {counts[-1] if counts else '10, 10'} | {val[-1]:.4f} |")
PY
}
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "Command: \`sudo bench/studies/diloco_by_time.sh build/slm DATA $STEPS $RTT $CPUS\` ($cpu, $(nproc) cores, $(date -u +%F))."
echo
echo "| sync by | wall s (steps 2..$STEPS) | tokens | tokens/s | inner steps per sync (a, b), last round | val loss |"
echo "|---|---|---|---|---|---|"
for by in steps time; do
  "$SLM" testbed run geo.toml -- "$SLM" train "${MODEL[@]}" --set dist.ranks_per_site=1 --sync-by "$by" \
    --set run.dir="$W/$by" > "$by.log" 2>&1 || { tail -20 "$by.log"; exit 1; }
  (cd "$W" && summary "$by" "$by.log")
done
echo
echo "ZeRO inside the sites (2 sites x 2 ranks, \`slm launch\`, no delay, $STEPS steps):"
echo
echo "| ZeRO | peak memory per rank, MiB | median step s |"
echo "|---|---|---|"
for z in 0 3; do
  "$SLM" launch -n 4 -- "$SLM" train "${MODEL[@]}" --set dist.ranks_per_site=2 --zero "$z" --set eval.every=0 \
    --set run.dir="$W/z$z" > "z$z.log" 2>&1 || { tail -20 "z$z.log"; exit 1; }
  python3 - "$W/z$z" "$z" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl") if '"step_s"' in l]
peak = max(max(r["peak_mem_per_rank"]) for r in rows) / 2**20
s = sorted(r["step_s"] for r in rows[1:])
print(f"| {sys.argv[2]} | {peak:.0f} | {s[len(s) // 2]:.3f} |")
PY
done
