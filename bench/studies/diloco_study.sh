#!/usr/bin/env bash
# bench/studies/diloco_study.sh: DiLoCo against data parallelism and pipeshard on this machine's testbed
# (needs root; docs/benchmarks.md "DiLoCo").
# Part 1, speed: 2 sites x 2 ranks joined by a link of RATE Mbit/s (default "1000 50": a LAN-like
# rate and a lower one at which data parallelism's communication dominates, as it does next to
# GPU compute), RTT 0 and 100 ms, for each layout: amortised step time (wall time of steps 2..N
# over N-1 steps, so a sync every H steps counts once per H), tokens/s, and MiB that crossed the
# sites per step (slm-delayer's counters). Layouts: dp (flat ring over 4 ranks), hier-bf16
# (hierarchical all-reduce, bf16 across), pipeshard (pp 2 across the sites x tp 2), diloco-H10,
# -H50, -H100 (fp32 pseudo-gradients), diloco-H10-int8, streaming (H 10, 2 fragments, delay 2,
# int8). Every layout trains the same model and global batch.
# Part 2, quality: validation loss against tokens seen, same tokens for every method, on
# tinyshakespeare and wikitext-2 (a dataset prepared here, 5% validation), 4 ranks launched
# without delays (the loss does not depend on the link): dp, diloco H 10 and 20 (fp32), H 10 int8,
# streaming; evaluation every 10 steps (= after each H-10 outer sync).
# Writes OUT/diloco_study.md and OUT/diloco_loss.svg/.png (gnuplot).
# Model: 6 layers, 4 heads, 128 channels, T = 128, vocabulary 4096 (1.7M parameters), batch 16 x 128
# tokens (micro 4), AdamW lr 1e-3 (inner), outer SGD lr 0.7, Nesterov 0.9.
# Usage: sudo bench/studies/diloco_study.sh SLM SHARED_DATA_DIR [OUT=runs/diloco_study] [LOSS_STEPS=300] [PARTS="speed loss"]
set -euo pipefail
SLM=$(readlink -f "$1") DATA=$(readlink -f "$2") OUT=$(mkdir -p "${3:-runs/diloco_study}" && readlink -f "${3:-runs/diloco_study}") LOSS_STEPS=${4:-300}
PARTS=${5:-speed loss} RATES=${RATES:-1000 50}
[ "$(id -u)" -eq 0 ] || [[ "$PARTS" != *speed* ]] || { echo "diloco_study: the speed part needs root (the testbed)" >&2; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"; "$SLM" testbed down "$W/geo.toml" 2>/dev/null || true' EXIT
cd "$W"
prepare() {  # prepare NAME CORPUS SEPARATOR
  "$SLM" tokenizer train "$2" --vocab-size 4096 --out "tok-$1" -q > /dev/null
  "$SLM" data prepare "$2" -t "tok-$1" --separator "$3" --val-fraction 0.05 --out "data-$1" -q > /dev/null
}
prepare tinyshakespeare "$DATA/tinyshakespeare.txt" blank
MODEL=(-c /dev/null --set model.n_layer=6 --set model.n_head=4 --set model.n_embd=128 --set model.block_size=128
       --set batch.batch_size=16 --set batch.micro_batch=4 --set optim.lr=1e-3 --set checkpoint.every=0
       --set system.threads=1 --set log.every=10)
DL=(--set sync.mode=diloco --set dist.ranks_per_site=2)
declare -A LAYOUT=(
  [dp]=""
  [hier-bf16]="--set dist.ranks_per_site=2 --set dist.compress=true"
  [pipeshard]="--pp 2 --tp 2"
  [diloco-H10]="${DL[*]} --set sync.inner_steps=10"
  [diloco-H20]="${DL[*]} --set sync.inner_steps=20"
  [diloco-H50]="${DL[*]} --set sync.inner_steps=50"
  [diloco-H100]="${DL[*]} --set sync.inner_steps=100"
  [diloco-H10-int8]="${DL[*]} --set sync.inner_steps=10 --set sync.compress=int8"
  [streaming]="${DL[*]} --set sync.inner_steps=10 --set sync.fragments=2 --set sync.delay=2 --set sync.compress=int8"
)
declare -A SPEED_STEPS=([dp]=8 [hier-bf16]=8 [pipeshard]=8 [diloco-H10]=41 [diloco-H50]=51 [diloco-H100]=101
                        [diloco-H10-int8]=41 [streaming]=41)
SPEED_ORDER=(dp hier-bf16 pipeshard diloco-H10 diloco-H50 diloco-H100 diloco-H10-int8 streaming)
LOSS_ORDER=(dp diloco-H10 diloco-H20 diloco-H10-int8 streaming)

speed() {
  echo "| link Mbit/s | RTT ms | layout | step s (amortised) | tokens/s | MiB across sites per step | loss at the last step |"
  echo "|---|---|---|---|---|---|---|"
  for rate in $RATES; do
    for rtt in 0 100; do
      cat > geo.toml <<TOML
name = "diloco"
[[site]]
name = "a"
ranks = 2
[[site]]
name = "b"
ranks = 2
[[link]]
sites = ["a", "b"]
delay_ms = $((rtt / 2))
rate_mbit = $rate
TOML
      for name in "${SPEED_ORDER[@]}"; do
        run=$W/speed-$name-$rate-$rtt
        # shellcheck disable=SC2086
        "$SLM" testbed run --link-log "$run.links" geo.toml -- "$SLM" train "${MODEL[@]}" --set data.dir="$W/data-tinyshakespeare" \
          --set schedule.max_steps="${SPEED_STEPS[$name]}" --set schedule.warmup_steps=5 --set eval.every=0 \
          --set run.dir="$run" ${LAYOUT[$name]} > "$run.log" 2>&1 || { echo "| $rate | $rtt | $name | failed: $(tail -1 "$run.log") | | | |"; continue; }
        python3 - "$run" "$rate" "$rtt" "$name" <<'PY'
import json, re, sys
run, rate, rtt, name = sys.argv[1:]
rows = [json.loads(l) for l in open(run + "/metrics.jsonl") if '"loss"' in l]
# Amortised over steps 2..N: the time between the first and the last step's log lines.
t0, t1 = rows[0]["time"], rows[-1]["time"]
step = (t1 - t0) / (len(rows) - 1)
tokens = rows[-1]["tokens"]
samples = {}
for line in open(run + ".links"):
    m = re.match(r"slm-delayer: at ([\d.]+) link (\d+) bytes (\d+)", line)
    if m:
        samples[float(m.group(1))] = samples.get(float(m.group(1)), 0) + int(m.group(3))
times = sorted(samples)
def at(t):
    before = [s for s in times if s <= t]
    return samples[before[-1]] if before else 0
# The delayer samples once a second: take the counters from the first sample after step 1 to the
# end of the run, so that every step's traffic (and the last sync) is in.
cross = (samples[times[-1]] - at(t0)) / (len(rows) - 1) / 2**20 if times else 0.0
print(f"| {rate} | {rtt} | {name} | {step:.3f} | {tokens / step:.0f} | {cross:.2f} | {rows[-1]['loss']:.3f} |")
PY
      done
    done
  done
}

loss() {
  local corpus=$1
  echo "| corpus | method | val loss at $LOSS_STEPS steps | vs dp | MiB across sites per step (counted) |"
  echo "|---|---|---|---|---|"
  for name in "${LOSS_ORDER[@]}"; do
    run=$W/loss-$corpus-$name
    # shellcheck disable=SC2086
    "$SLM" launch -n 4 -- "$SLM" train "${MODEL[@]}" --set data.dir="$W/data-$corpus" --set schedule.max_steps="$LOSS_STEPS" \
      --set schedule.warmup_steps=30 --set eval.every=10 --set eval.batches=20 --set run.dir="$run" ${LAYOUT[$name]} \
      > "$run.log" 2>&1 || { echo "| $corpus | $name | failed: $(tail -1 "$run.log") | | |"; continue; }
  done
  python3 - "$W" "$corpus" "${LOSS_ORDER[@]}" <<'PY'
import json, sys
w, corpus, names = sys.argv[1], sys.argv[2], sys.argv[3:]
def load(n):
    rows = [json.loads(l) for l in open(f"{w}/loss-{corpus}-{n}/metrics.jsonl")]
    val = [(r["step"], r["val_loss"]) for r in rows if "val_loss" in r]
    steps = [r for r in rows if "loss" in r]
    cross = sum(r["bytes_outer"] if r.get("bytes_outer") else 0 for r in steps) / len(steps) / 2**20
    return val, cross, steps[0]["tokens"]
ref = load("dp")[0][-1][1]
with open(f"{w}/loss-{corpus}.dat", "w") as f:
    for n in names:
        val, cross, tok = load(n)
        cross_txt = f"{cross:.3f}" if n != "dp" else "(all gradients)"
        print(f"| {corpus} | {n} | {val[-1][1]:.4f} | {100 * (val[-1][1] / ref - 1):+.1f}% | {cross_txt} |")
        f.write("".join(f"{s * tok / 1000:.0f} {v}\n" for s, v in val) + "\n\n")
PY
}

{
  echo "Command: \`sudo bench/studies/diloco_study.sh build/slm ../shared/data runs/diloco_study $LOSS_STEPS \"$PARTS\"\` ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; 4 ranks, 1 thread each)."
  echo
  if [[ "$PARTS" == *speed* ]]; then speed; echo; fi
  if [[ "$PARTS" == *loss* ]]; then
    prepare wikitext-2 "$DATA/wikitext-2/valid.txt" line
    loss tinyshakespeare
    loss wikitext-2 | tail -n +3
  fi
} | tee "$W/diloco_study.md"
mkdir -p "$OUT"
cp "$W/diloco_study.md" "$OUT/diloco_study.md"
if [[ "$PARTS" == *loss* ]] && command -v gnuplot > /dev/null; then
  for term in "svg size 900,380" "pngcairo size 900,380"; do
    ext=${term%% *}; ext=${ext/pngcairo/png}
    gnuplot <<GP || echo "diloco_study: gnuplot failed ($ext)" >&2
set terminal $term
set output "$OUT/diloco_loss.$ext"
set multiplot layout 1,2
set xlabel "tokens seen (thousands)"; set ylabel "validation loss"; set grid; set key top right
set title "tinyshakespeare"
plot for [i=0:$((${#LOSS_ORDER[@]} - 1))] "$W/loss-tinyshakespeare.dat" index i using 1:2 with lines title word("${LOSS_ORDER[*]}", i + 1)
set title "wikitext-2"
plot for [i=0:$((${#LOSS_ORDER[@]} - 1))] "$W/loss-wikitext-2.dat" index i using 1:2 with lines title word("${LOSS_ORDER[*]}", i + 1)
unset multiplot
GP
  done
fi
