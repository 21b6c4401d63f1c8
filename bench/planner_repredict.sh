#!/usr/bin/env bash
# bench/planner_repredict.sh: the planner's predictions again for the preset layouts of a
# planner study (bench/planner_study.sh), from the profiles and probed links it kept, against the
# step times it measured: for checking a change of the cost model without the testbed.
# Prints a table like the study's (scenario, layout, predicted, measured, error) and the median
# and worst error. No root needed.
# Usage: bench/planner_repredict.sh SLM DATA_DIR STUDY_DIR (with planner_study.md and the
#        planner_study_<scenario>_{profile,topology}.json files)
set -euo pipefail
SLM=$(readlink -f "$1") DATA=$(readlink -f "$2") DIR=$(readlink -f "$3")
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
MODEL=(-c /dev/null --set data.dir="$DATA" --set model.n_layer=24 --set model.n_head=16 --set model.n_embd=256
       --set model.block_size=128 --set batch.batch_size=8 --set batch.micro_batch=2 --set optim.lr=1e-3
       --set system.precision=fp32)
declare -A FLAGS=([dp]="" [zero2]="--zero 2" [pipeshard]="--pp 2 --tp 2" [pp2-dp2]="--pp 2"
                  [hier-dp]="--set dist.ranks_per_site=2")
declare -A RTT=([rtt0]=0 [rtt20]=20 [rtt100]=100 [het20]=20 [gpu20]=20)
declare -A RATE=([rtt0]=1000 [rtt20]=1000 [rtt100]=1000 [het20]=1000 [gpu20]=250)
echo "| scenario | layout | predicted s | measured s | error |"
echo "|---|---|---|---|---|"
grep -E '^\| [a-z0-9]+ \| (dp|zero2|pipeshard|pp2-dp2|hier-dp) \|' "$DIR/planner_study.md" | while IFS='|' read -r _ sc l _ m _; do
  sc=$(echo $sc) l=$(echo $l) m=$(echo $m)
  [ -f "$DIR/planner_study_${sc}_profile.json" ] || continue
  printf '[[site]]\nname = "a"\nranks = 2\n[[site]]\nname = "b"\nranks = 2\n[[link]]\nsites = ["a", "b"]\ndelay_ms = %s\nrate_mbit = %s\n' \
    "$(python3 -c "print(${RTT[$sc]} / 2)")" "${RATE[$sc]}" > "$W/c.toml"
  read -r -a f <<< "${FLAGS[$l]}"
  p=$("$SLM" plan make "${MODEL[@]}" --world 4 "${f[@]}" --cluster "$W/c.toml" --profile "$DIR/planner_study_${sc}_profile.json" \
      --topology "$DIR/planner_study_${sc}_topology.json" 2>&1 >/dev/null | grep -o "predicted [0-9.]* s per step" | awk '{print $2}')
  echo "| $sc | $l | $p | $m | $(python3 -c "print(f'{100 * ($p / $m - 1):+.0f}%')") |"
done | tee "$W/rows"
python3 - "$W/rows" <<'PY'
import sys
e = sorted(abs(float(r.split("|")[5].strip().rstrip("%"))) for r in open(sys.argv[1]) if r.startswith("| "))
if e: print(f"\nPrediction error over {len(e)} runs: median {e[len(e) // 2]:.0f}%, worst {e[-1]:.0f}%.")
PY
