#!/usr/bin/env bash
# bench/robustness/fault_tolerance.sh: what failures and checkpoints cost (issue 17), on this machine.
#  1. Checkpoint cost: a 2-rank ZeRO-1 job of a ~23M-parameter model (6 x 512, vocab 8192 on
#     wikitext-2; ~280 MB per checkpoint) saves every 4 steps, synchronously and in the background
#     (checkpoint.async), and once with no checkpoints: the time each save took from the training
#     thread (metrics.jsonl checkpoint_s), the mean step time, and the whole run's wall time.
#  2. Restarts: a 2-rank job under `slm launch --max-restarts`, a random rank killed (SIGKILL) at
#     a random step, KILLS times: seconds down and steps lost per failure (RUN/events.jsonl), for
#     plain data parallelism and a 2-stage pipeline.
#  3. Lossy links (root; the testbed): 2 sites of 1 rank, 10 ms one way, 0%, 1% and 5% loss:
#     step time and its slowdown.
# Usage: bench/robustness/fault_tolerance.sh [KILLS]  (default 4). Prints Markdown tables.
set -euo pipefail
SLM=${SLM:-$(cd "$(dirname "$0")/../.." && pwd)/build/slm}
KILLS=${1:-4}
SHARED=$(cd "$(dirname "$0")/../../.." && pwd)/shared/data
W=$(mktemp -d /tmp/slm_fault_XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W"
src=$SHARED/wikitext-2/valid.txt
[ -f "$src" ] || { for i in $(seq 20000); do echo "Line $i: the fox $((i % 7)) jumps over the dog."; echo; done > gen.txt; src=gen.txt; }
"$SLM" tokenizer train "$src" --vocab-size 8192 --out tok -q > /dev/null
"$SLM" data prepare "$src" -t tok --separator line --val-fraction 0.01 --out data -q > /dev/null
field() { python3 -c "
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
steps = [r['step_s'] for r in rows if 'loss' in r][1:]
saves = [r['checkpoint_s'] for r in rows if 'checkpoint_s' in r]
print(f'{sum(steps) / len(steps):.3f} {sum(saves[:-1]) / max(1, len(saves) - 1):.3f} {saves[-1] if saves else 0:.3f}')" "$1"; }

echo "## 1. Checkpoint cost (2 ranks, ZeRO-1, ~23M parameters, a save every 4 steps, 24 steps)"
echo
echo "| checkpoints | mean step (s) | mean save, training thread (s) | last save (s) | wall (s) |"
echo "|---|---|---|---|---|"
BIG=(-c /dev/null --set data.dir=data --set model.n_layer=6 --set model.n_embd=512 --set model.n_head=8
     --set model.block_size=128 --set batch.batch_size=8 --set batch.micro_batch=4 --set eval.every=0
     --set log.every=1000 --set schedule.max_steps=24 --set system.precision=fp32 --set checkpoint.keep=2 --dp 2 --zero 1)
for mode in none sync async; do
  extra=(--set checkpoint.every=4 --set checkpoint.async=$([ $mode = async ] && echo true || echo false))
  [ $mode = none ] && extra=(--set checkpoint.every=0)
  start=$(date +%s.%N)
  "$SLM" launch -n 2 -- "$SLM" train "${BIG[@]}" "${extra[@]}" --set run.dir=ck_$mode > ck_$mode.log 2>&1 \
    || { cat ck_$mode.log; exit 1; }
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  read -r step save last <<< "$(field ck_$mode/metrics.jsonl)"
  size=$(du -sm ck_$mode/checkpoints | cut -f1)
  echo "| $mode ($size MB kept) | $step | $save | $last | $(printf %.1f "$wall") |"
done
echo

echo "## 2. Restarts (2 ranks, a random rank SIGKILLed at a random step; checkpoint every 20 steps)"
echo
echo "| layout | killed | after step | resumed at | steps lost | down (s) |"
echo "|---|---|---|---|---|---|"
SMALL=(-c /dev/null --set data.dir=data --set model.n_layer=2 --set model.n_embd=64 --set model.n_head=2
       --set model.block_size=64 --set batch.batch_size=8 --set batch.micro_batch=4 --set eval.every=0
       --set log.every=1000 --set schedule.max_steps=100000 --set checkpoint.every=20 --set system.precision=fp32
       --set system.threads=1 --set dist.timeout_s=20)
last_step() { python3 -c "
import json, sys
s = [json.loads(l)['step'] for l in open(sys.argv[1]) if '\"loss\"' in l]
print(s[-1] if s else 0)" "$1" 2>/dev/null || echo 0; }
for layout in dp pp; do
  flags=(--dp 2); [ $layout = pp ] && flags=(--pp 2 --micro-batches 2)
  "$SLM" launch -n 2 --max-restarts "$KILLS" --restart-delay 0 -- "$SLM" train "${SMALL[@]}" "${flags[@]}" \
    --set run.dir=r_$layout > r_$layout.log 2>&1 &
  launcher=$!
  for k in $(seq "$KILLS"); do
    target=$(( $(last_step r_$layout/metrics.jsonl) + 30 + RANDOM % 60 ))
    while [ "$(last_step r_$layout/metrics.jsonl)" -lt $target ]; do sleep 0.1; done
    victim=$((RANDOM % 2))
    pid=$(for p in $(pgrep -P $launcher); do tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx RANK=$victim && echo $p; done; true)
    kill -9 $pid
    while [ "$(wc -l < r_$layout/events.jsonl 2>/dev/null || echo 0)" -lt $k ]; do sleep 0.1; done
  done
  sleep 2; kill -TERM $launcher; wait $launcher || true
  python3 - r_$layout/events.jsonl $layout <<'PY'
import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    print(f"| {sys.argv[2]} | {e['cause'].split(' was')[0]} | {e['last_step']} | {e['resumed_step']} | {e['steps_lost']} | {e['down_s']:.1f} |")
PY
done
echo

if [ "$(id -u)" -eq 0 ] && [ -x "$(dirname "$SLM")/slm-delayer" ]; then
  echo "## 3. Lossy links (testbed: 2 sites x 1 rank, 10 ms one way, data parallel, 40 steps)"
  echo
  echo "| loss | jitter | mean step (s) | slowdown | packets dropped |"
  echo "|---|---|---|---|---|"
  base=""
  for loss in 0 1 5; do
    printf 'name = "tbfb"\ndelay = "delayer"\n[[site]]\nname = "a"\n[[site]]\nname = "b"\n[[link]]\nsites = ["a", "b"]\ndelay_ms = 10\nloss_pct = %s\njitter_ms = 1\n' $loss > l$loss.toml
    "$SLM" testbed run l$loss.toml --link-log links$loss.log -- "$SLM" train "${SMALL[@]}" --dp 2 \
      --set schedule.max_steps=40 --set checkpoint.every=0 --set run.dir="$W/l_$loss" > l_$loss.log 2>&1 || { cat l_$loss.log; exit 1; }
    read -r step _ _ <<< "$(field l_$loss/metrics.jsonl)"
    base=${base:-$step}
    dropped=$(grep -o "dropped [0-9]*" links$loss.log | awk '{s += $2} END {print s + 0}')
    echo "| $loss% | ±1 ms | $step | $(python3 -c "print(f'{$step / $base:.2f}x')") | $dropped |"
  done
fi
