#!/usr/bin/env bash
# bench/robustness/soak.sh [MINUTES] [INTERVAL_S] [LAYOUT]: an unattended run on a flaky "cluster" (issue 17).
# A 2-rank job (LAYOUT: "--dp 2 --zero 1" by default; e.g. "--pp 2 --micro-batches 2") trains
# under `slm launch --max-restarts 1000` with checkpoints every 30 s written in the background,
# while every INTERVAL_S seconds (default 180, ±30%) one failure is injected at random:
#   kill    SIGKILL to a random rank;
#   corrupt flip bytes in the newest checkpoint, then SIGKILL a rank: the restart must skip the
#           corrupt one (a warning) and resume from the one before.
#   outage  (with SOAK_TESTBED=1) every packet between the sites dropped for OUTAGE_S (default 45,
#           longer than dist.timeout_s = 30): the collectives fail, the job restarts and waits at
#           rendezvous until the link is back.
# SOAK_TESTBED=1 (root) runs the job on the testbed: 2 sites of one rank, 10 ms one way, under
# `slm testbed run --max-restarts 1000`; otherwise under `slm launch` on this machine.
# After MINUTES (default 30) the job is stopped with SIGTERM (it saves and exits 143). Prints one
# row per failure (from RUN/events.jsonl: steps lost, seconds down) and a summary: failures,
# restarts, steps lost in all, the most lost at once against the checkpoint interval in steps,
# the training time lost (steps lost x mean step + time down) as a share of the run.
set -euo pipefail
SLM=${SLM:-$(cd "$(dirname "$0")/../.." && pwd)/build/slm}
MINUTES=${1:-30}
INTERVAL=${2:-180}
LAYOUT=${3:---dp 2 --zero 1}
TESTBED=${SOAK_TESTBED:-0}
OUTAGE_S=${OUTAGE_S:-45}
SHARED=$(cd "$(dirname "$0")/../../.." && pwd)/shared/data
W=$(mktemp -d /tmp/slm_soak_XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
cd "$W"
src=$SHARED/wikitext-2/valid.txt
[ -f "$src" ] || { for i in $(seq 20000); do echo "Line $i: the fox $((i % 7)) jumps over the dog."; echo; done > gen.txt; src=gen.txt; }
"$SLM" tokenizer train "$src" --vocab-size 4096 --out tok -q > /dev/null
"$SLM" data prepare "$src" -t tok --separator line --val-fraction 0.01 --out data -q > /dev/null
start=("$SLM" launch -n 2 --max-restarts 1000 --restart-delay 1)
if [ "$TESTBED" = 1 ]; then
  printf 'name = "soak"\ndelay = "delayer"\n[[site]]\nname = "a"\n[[site]]\nname = "b"\n[[link]]\nsites = ["a", "b"]\ndelay_ms = 10\n' > soak.toml
  start=("$SLM" testbed run soak.toml --max-restarts 1000)
fi
# shellcheck disable=SC2086
"${start[@]}" -- "$SLM" train -c /dev/null --set data.dir="$W/data" \
  --set model.n_layer=4 --set model.n_embd=256 --set model.n_head=4 --set model.block_size=128 \
  --set batch.batch_size=8 --set batch.micro_batch=4 --set schedule.max_steps=1000000 --set eval.every=0 \
  --set log.every=100 --set checkpoint.every=0 --set checkpoint.every_minutes=0.5 --set checkpoint.async=true \
  --set checkpoint.keep=3 --set system.threads=1 --set dist.timeout_s=30 $LAYOUT --set run.dir="$W/run" > soak.log 2>&1 &
launcher=$!
ranks() {  # the launcher's children that are ranks (on the testbed it also runs slm-delayer)
  for p in $(pgrep -P $launcher || true); do tr '\0' '\n' < /proc/"$p"/environ 2>/dev/null | grep -q "^RANK=" && echo "$p"; done; true; }
end=$(( $(date +%s) + MINUTES * 60 ))
failures=()
while :; do
  wait_s=$(( INTERVAL * 7 / 10 + RANDOM % (INTERVAL * 6 / 10 + 1) ))
  [ $(( $(date +%s) + wait_s )) -lt $end ] || break
  sleep $wait_s
  kind="kill"; [ $((RANDOM % 3)) -eq 0 ] && kind=corrupt
  [ "$TESTBED" = 1 ] && [ $((RANDOM % 3)) -eq 1 ] && kind=outage
  if [ $kind = outage ]; then  # the link goes away; the job finds out by itself
    ip netns exec soak-rt iptables-legacy -w -I FORWARD 1 -j DROP
    (sleep "$OUTAGE_S"; ip netns exec soak-rt iptables-legacy -w -D FORWARD 1) &
    failures+=("$kind")
    echo "$(date +%T) injected: $kind" >&2
    continue
  fi
  if [ $kind = corrupt ]; then
    newest=$(ls -d run/checkpoints/step_* 2>/dev/null | grep -v partial | tail -1 || true)
    if [ -n "$newest" ] && [ "$(ls -d run/checkpoints/step_* | grep -vc partial)" -ge 2 ]; then
      f=$(ls "$newest"/*.pt | head -1)
      printf 'garbage' | dd of="$f" bs=1 seek=100 conv=notrunc status=none
    else
      kind="kill"
    fi
  fi
  pids=($(ranks))
  [ ${#pids[@]} -gt 0 ] || continue
  kill -9 "${pids[$((RANDOM % ${#pids[@]}))]}" 2>/dev/null || true
  failures+=("$kind")
  echo "$(date +%T) injected: $kind" >&2
done
sleep $(( end > $(date +%s) ? end - $(date +%s) : 0 ))
kill -TERM $launcher; rc=0; wait $launcher || rc=$?
python3 - run "${#failures[@]}" "$rc" "$MINUTES" "${failures[@]}" <<'PY'
import json, sys
run, n, rc, minutes, kinds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5:]
events = [json.loads(l) for l in open(f"{run}/events.jsonl")] if n else []
rows = {}
for l in open(f"{run}/metrics.jsonl"):
    r = json.loads(l)
    if "loss" in r: rows[r["step"]] = r
steps = [r["step_s"] for r in rows.values()]
mean = sum(steps) / len(steps)
interval = 30 / mean
print("| # | injected | cause | resumed at | steps lost | down (s) |\n|---|---|---|---|---|---|")
for i, e in enumerate(events):
    print(f"| {i + 1} | {kinds[i] if i < len(kinds) else '?'} | {e['cause']} | {e['resumed_step']} | {e['steps_lost']} | {e['down_s']:.1f} |")
lost = sum(e["steps_lost"] for e in events)
down = sum(e["down_s"] for e in events)
wasted = lost * mean + down
print(f"\n{minutes:.0f} min, {n} failures injected, {len(events)} restarts, launcher exit {rc} (143 = stopped by SIGTERM "
      f"after saving); {max(rows)} steps reached, mean step {mean:.3f} s; steps lost {lost} in all, at most "
      f"{max([e['steps_lost'] for e in events] or [0])} at once (a checkpoint every 30 s = ~{interval:.0f} steps); time "
      f"lost {wasted:.0f} s = {100 * wasted / (minutes * 60):.1f}% of the run")
print("corrupt checkpoints skipped:", open("soak.log").read().count("is corrupt"))
PY
