#!/usr/bin/env bash
# bench/robustness/memory_growth.sh [STEPS]: looks for memory that grows with the number of steps, in
# every layout. Each layout trains a 1.7M-parameter model (2 layers x 256 channels, T = 64, fp32, Gloo
# over loopback) for STEPS steps (default 450) with a checkpoint and an evaluation every 100 steps,
# and reads the largest rank's peak RSS (metrics.jsonl, peak_mem_per_rank) at step FROM (default
# 150: after the first checkpoint and evaluation), halfway from there, and at the end. A layout
# fails when its peak grew by more than LIMIT_MB (default 8) in both halves: memory that each step
# leaves behind grows in both, while a one-off peak (a burst of messages in flight on a busy
# machine) lands in one. Prints one row per layout; exits 1 if any grew. Not part of CI (~20 min on
# 2 cores); run it after changes to what a step keeps (comm/, parallel/, train/).
#   bash bench/robustness/memory_growth.sh                        every layout, build/slm (or SLM=...)
#   ONLY='zero3 diloco' bash bench/robustness/memory_growth.sh    the named layouts only
#   EXTRA='--set model.n_embd=64' bash ...                        more settings for every layout
#   KEEP=1 bash ...                                               keeps the runs (metrics.jsonl, logs)
set -euo pipefail
SLM=$(realpath "${SLM:-$(cd "$(dirname "$0")/../.." && pwd)/build/slm}")
STEPS=${1:-450}
FROM=${FROM:-150}
LIMIT_MB=${LIMIT_MB:-8}
[ "$STEPS" -gt $((FROM + 1)) ] || { echo "memory_growth: STEPS ($STEPS) must be more than FROM + 1 ($FROM)" >&2; exit 2; }
work=$(mktemp -d /tmp/slm_growth_XXXXXX)
trap '[ -n "${KEEP:-}" ] && echo "runs kept in $work" || rm -rf "$work"' EXIT
cd "$work"

# The shipped default corpus (Debian's fortunes), else generated text.
if [ -d /usr/share/games/fortunes ]; then
  find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' -exec cat {} + > corpus.txt
else
  for i in $(seq 3000); do printf 'Line %d: the fox %d jumps over the dog.\n\n' "$i" $((i % 7)); done > corpus.txt
fi
"$SLM" tokenizer train corpus.txt --vocab-size 512 --out tok -q >/dev/null
"$SLM" data prepare corpus.txt -t tok --separator blank --val-fraction 0.02 --out data -q >/dev/null

COMMON=(-c /dev/null --set system.precision=fp32 --set data.dir=data --set model.n_layer=2 --set model.n_head=4
        --set model.n_embd=256 --set model.block_size=64 --set batch.batch_size=16 --set batch.micro_batch=4
        --set schedule.warmup_steps=10 --set schedule.max_steps="$STEPS" --set log.every=10
        --set eval.every=100 --set eval.batches=2 --set checkpoint.every=100 --set system.threads=1)
SITES=(--set dist.ranks_per_site=1)
# name ranks arguments...
LAYOUTS=(
  "one 1"
  "one_bf16 1 --set system.precision=bf16"
  "loss_scaling 1 --set system.loss_scaling=on --set system.loss_scale_init=1024"
  "ddp 2 --zero 0"
  "zero1 2 --zero 1"
  "zero2 2 --zero 2"
  "zero3 2 --zero 3"
  "async_ckpt 2 --zero 1 --set checkpoint.async=true"
  "tp 2 --tp 2"
  "pp_1f1b 2 --pp 2"
  "pp_interleaved 2 --pp 2 --virtual-stages 2 --micro-batches 4 --set model.n_layer=4"
  "pp_tp 4 --pp 2 --tp 2"
  "wan_flat_channels 2 --set dist.channels=2"
  "wan_sites 2 ${SITES[*]} --set dist.channels=2"
  "wan_sites_bf16 2 ${SITES[*]} --set dist.channels=2 --set dist.compress=true"
  "diloco 2 ${SITES[*]} --set sync.mode=diloco --set sync.inner_steps=5"
  "diloco_streaming 2 ${SITES[*]} --set sync.mode=diloco --set sync.inner_steps=6 --set sync.fragments=2 --set sync.delay=2 --set sync.compress=int8"
)
mid=$(((FROM + STEPS) / 2))
fail=0
printf '%-18s %5s %10s %10s %10s %16s\n' layout ranks "MB@$FROM" "MB@$mid" "MB@$STEPS" "growth MB (1st, 2nd)"
for row in "${LAYOUTS[@]}"; do
  read -r name ranks args <<<"$row"
  [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $name "* ]] || continue
  # shellcheck disable=SC2086  # the layout's arguments (and EXTRA) are words
  if ! "$SLM" launch -n "$ranks" -- "$SLM" train "${COMMON[@]}" $args ${EXTRA:-} --set run.dir="$name" > "$name.log" 2>&1; then
    tail -5 "$name.log"; printf '%-18s %5s  run failed\n' "$name" "$ranks"; fail=1; continue
  fi
  python3 - "$name" "$ranks" "$name/metrics.jsonl" "$FROM" "$mid" "$LIMIT_MB" <<'PY' || fail=1
import json, sys
name, ranks, path, start, mid, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
rows = [r for r in map(json.loads, open(path)) if "peak_mem_per_rank" in r]
at = lambda step: max(next(r for r in rows if r["step"] >= step)["peak_mem_per_rank"]) / 2**20
a, b, c = at(start), at(mid), max(rows[-1]["peak_mem_per_rank"]) / 2**20
print(f"{name:<18} {ranks:>5} {a:10.1f} {b:10.1f} {c:10.1f} {b - a:9.1f}, {c - b:.1f}")
if b - a > limit and c - b > limit:
    sys.exit(print(f"  ^ grew by more than {limit:g} MB in both halves") or 1)
PY
done
exit $fail
