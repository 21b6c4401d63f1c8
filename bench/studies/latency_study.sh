#!/usr/bin/env bash
# bench/studies/latency_study.sh: the latency study of the FABRIC paper, reproduced on this machine's
# testbed (needs root): 2 sites x 2 ranks, RTT between the sites 0 / 20 / 100 ms (one-way 0 / 10 /
# 50 ms; inside a site no delay), 1 Gbit/s between sites, and for each RTT the layouts
#   dp            data parallel (flat ring all-reduce across all 4 ranks)
#   zero2         ZeRO-2 over the 4 ranks
#   shard         tensor (intra-operator) parallel over all 4 ranks (tp 4)
#   pipeshard     one pipeline stage per site, tp 2 inside each site (pp 2 x tp 2, 1F1B)
#   hier-dp       our hierarchical data parallel (sum in site, shard across sites, gather)
#   hier-dp-bf16  the same with bf16 across sites
#   zero2-site    ZeRO-2 with hybrid sharding: state split inside each site, replicated across
#                 sites (parallel.zero_scope = site), gradients reduced hierarchically
# on a GPT-2-medium-shaped model scaled to this CPU (24 layers and 16 heads as GPT-2 medium, but
# 256 channels instead of 1024 and T = 128: 19M parameters + embeddings), fixed global batch 8 x
# 128 tokens, STEPS steps each. Per run: median step time (steps 3..), tokens/s, TFLOP/s per rank
# by the study's formula (72BsLh^2(1+s/6h) + 6BshV per step, over 4 ranks), bytes across the sites
# per step (slm-delayer's counters between the 2nd and the last step), loss after STEPS steps.
# Writes OUT/latency_study.md (table + command) and OUT/latency_study.svg/.png (gnuplot).
# VARIANT=heterogeneous: one slower site instead (site b's 2 ranks share 0.5 CPU cores, a cgroup
# quota; site a's share the other ~1.5: b computes ~3x slower), 20 ms RTT, and the layouts that
# either ignore it or balance it: dp and pipeshard split evenly, dp with micro-batches 3,3,1,1
# (replicas on the fast site take more samples), pipeshard with 18 of the 24 layers on the fast
# site, hierarchical dp with bf16. Writes OUT/latency_study_het.md.
# LAYOUTS="a b" runs only those layouts (OUT/latency_study_<first layout>.md).
# A run that exceeds LIMIT seconds is stopped (SIGTERM: the testbed is torn down) and reported
# from the steps it finished (at least 2), marked "(stopped at N steps)".
# Usage: sudo bench/studies/latency_study.sh SLM DATA_DIR [OUT=runs/latency_study] [STEPS=6] [LIMIT=150] [VARIANT=homogeneous]
set -euo pipefail
SLM=$(readlink -f "$1") DATA=$(readlink -f "$2") OUT=$(mkdir -p "${3:-runs/latency_study}" && readlink -f "${3:-runs/latency_study}") STEPS=${4:-6} LIMIT=${5:-150}
VARIANT=${6:-homogeneous}
[ "$(id -u)" -eq 0 ] || { echo "latency_study: needs root (the testbed); run with sudo" >&2; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"; "$SLM" testbed down "$W/geo.toml" 2>/dev/null || true' EXIT
MODEL=(-c /dev/null --set data.dir="$DATA" --set model.n_layer=24 --set model.n_head=16 --set model.n_embd=256
       --set model.block_size=128 --set batch.batch_size=8 --set batch.micro_batch=2 --set optim.lr=1e-3
       --set schedule.warmup_steps=2 --set schedule.max_steps=$STEPS --set eval.every=0 --set checkpoint.every=0
       --set log.every=1)
declare -A LAYOUT=(
  [dp]=""
  [zero2]="--zero 2"
  [shard]="--tp 4"
  [pipeshard]="--pp 2 --tp 2"
  [hier-dp]="--set dist.ranks_per_site=2"
  [hier-dp-bf16]="--set dist.ranks_per_site=2 --set dist.compress=true"
  [zero2-site]="--zero 2 --set dist.ranks_per_site=2 --set parallel.zero_scope=site"
  [dp-uneven]="--set parallel.plan=$W/dp_uneven.toml"
  [pipeshard-uneven]="--set parallel.plan=$W/pipeshard_uneven.toml"
)
# Plans for the heterogeneous variant (ranks 0-1 = the fast site a, 2-3 = the slow site b).
cat > "$W/dp_uneven.toml" <<'TOML'
schedule = "none"
micro_batches = 1
micro_batch = [3, 3, 1, 1]
[[stage]]
layers = [0, 24]
ranks = [0, 1, 2, 3]
TOML
cat > "$W/pipeshard_uneven.toml" <<'TOML'
schedule = "1f1b"
micro_batches = 4
micro_batch = [2]
[[stage]]
layers = [0, 18]
tp = 2
ranks = [0, 1]
[[stage]]
layers = [18, 24]
tp = 2
ranks = [2, 3]
TOML
ORDER=(dp zero2 shard pipeshard hier-dp hier-dp-bf16 zero2-site) RTTS=(0 20 100) CPUS_B=0 SUFFIX=""
if [ "$VARIANT" = heterogeneous ]; then
  ORDER=(dp dp-uneven hier-dp-bf16 pipeshard pipeshard-uneven) RTTS=(20) CPUS_B=0.5 SUFFIX=_het
fi
if [ -n "${LAYOUTS:-}" ]; then read -r -a ORDER <<< "$LAYOUTS"; SUFFIX="${SUFFIX}_${ORDER[0]}"; fi
# tp 4 across the sites does 4 all-reduces per block per micro-batch, each 2(P-1) one-way delays:
# minutes per step at 100 ms, so it runs 2 steps (its time is step 2's).
declare -A RUN_STEPS=([shard]=2)
echo "| RTT ms | layout | step s | tokens/s | TFLOP/s per rank | MiB across sites per step | loss at the last step |" > "$W/table.md"
echo "|---|---|---|---|---|---|---|" >> "$W/table.md"
: > "$W/plot.dat"
for rtt in "${RTTS[@]}"; do
  cat > "$W/geo.toml" <<TOML
name = "lat"
[[site]]
name = "a"
ranks = 2
[[site]]
name = "b"
ranks = 2
cpus = $CPUS_B
[[link]]
sites = ["a", "b"]
delay_ms = $(python3 -c "print($rtt / 2)")
rate_mbit = 1000
TOML
  for name in "${ORDER[@]}"; do
    run="$W/$name-$rtt"
    # shellcheck disable=SC2086
    rc=0
    timeout --signal=TERM "$LIMIT" "$SLM" testbed run --link-log "$run.links" "$W/geo.toml" -- "$SLM" train \
      "${MODEL[@]}" --set schedule.max_steps="${RUN_STEPS[$name]:-$STEPS}" --set run.dir="$run" ${LAYOUT[$name]} \
      > "$run.log" 2>&1 || rc=$?
    if [ "$(grep -c '"loss"' "$run/metrics.jsonl" 2>/dev/null || echo 0)" -lt 2 ]; then
      echo "| $rtt | $name | failed (exit $rc): $(grep -m1 -o 'error: .*' "$run.log" || tail -1 "$run.log") | | | | |" >> "$W/table.md"
      continue
    fi
    python3 - "$run" "$rtt" "$name" "$W/table.md" "$W/plot.dat" "${RUN_STEPS[$name]:-$STEPS}" <<'PY'
import json, re, statistics, sys
run, rtt, name, table, plot, STEPS = sys.argv[1:]
STEPS = int(STEPS)
rows = [json.loads(l) for l in open(run + "/metrics.jsonl") if '"loss"' in l]
steady = rows[2:] or rows[1:]
step = statistics.median(r["step_s"] for r in steady)
tok = statistics.median(r["tokens_per_s"] for r in steady)
tf = statistics.median(r["tflops_per_device"] for r in steady)
# Bytes across sites: the delayer's counters (both directions) between the 2nd and the last step.
samples = {}
for line in open(run + ".links"):
    m = re.match(r"slm-delayer: at ([\d.]+) link (\d+) bytes (\d+)", line)
    if m:
        samples.setdefault(float(m.group(1)), 0)
        samples[float(m.group(1))] += int(m.group(3))
times = sorted(samples)
def at(t):  # counter value at time t (last sample before it)
    before = [s for s in times if s <= t]
    return samples[before[-1]] if before else 0
t0, t1 = rows[0 if len(rows) == 2 else 1]["time"], rows[-1]["time"]
cross = (at(t1) - at(t0)) / max(1, len(rows) - (1 if len(rows) == 2 else 2)) / 2**20 if times else 0.0
with open(table, "a") as f:
    note = f" ({STEPS} steps)" if STEPS < 4 else ""
    if rows[-1]["step"] < STEPS: note = f" (stopped at {rows[-1]['step']} steps)"
    f.write(f"| {rtt} | {name}{note} | {step:.2f} | {tok:.0f} | {tf:.4f} | {cross:.1f} | {rows[-1]['loss']:.3f} |\n")
with open(plot, "a") as f:
    f.write(f"{name} {rtt} {step:.3f}\n")
PY
  done
done
mkdir -p "$OUT"
{
  echo "Command: \`sudo ${LAYOUTS:+LAYOUTS=\"$LAYOUTS\" }bench/studies/latency_study.sh build/slm DATA runs/latency_study $STEPS $LIMIT $VARIANT\`" \
       "(2-vCPU VM, 4 ranks, 1 thread each$([ "$CPUS_B" = 0 ] || echo "; site b's ranks capped at $CPUS_B CPU cores together"))."
  echo
  cat "$W/table.md"
} > "$OUT/latency_study$SUFFIX.md"
cat "$OUT/latency_study$SUFFIX.md"
if [ -z "$SUFFIX" ] && command -v gnuplot >/dev/null; then
  for term in "svg size 720,420" "pngcairo size 720,420"; do
    ext=${term%% *}; ext=${ext/pngcairo/png}
    gnuplot <<GP || echo "latency_study: gnuplot failed ($ext)" >&2
set terminal $term
set output "$OUT/latency_study.$ext"
set title "Step time vs RTT between 2 sites (2 ranks each, 1 Gbit/s)"
set xlabel "RTT between sites, ms"; set ylabel "step time, s (log scale)"; set logscale y; set key left top; set grid
plot for [l in "${ORDER[*]}"] sprintf("< grep '^%s ' $W/plot.dat", l) using 2:3 with linespoints title l
GP
  done
fi
