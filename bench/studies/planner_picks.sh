#!/usr/bin/env bash
# bench/studies/planner_picks.sh: how the planner's pick holds up from profile to profile (needs root:
# the testbed). ROUNDS times on planner_study.sh's model and testbed (2 sites x 2 ranks, one of its
# scenarios): a fresh `slm profile` and `slm probe`, the planner's pick from them (`slm plan auto
# --all-ranks`), then the pick and the presets (PRESETS, by planner_setup.sh's names; default dp,
# pp4 and pp2-dp2, under mem20 zero3, pp4 and pp2-dp2-rc: those that fit), each predicted from that
# profile and measured (median of steps 2-8). Each round's pick is its own, so the rounds show what
# one profile's scatter does to the choice.
# Writes OUT/picks.txt (round, layout, predicted s, measured s, the pick in words) and each round's
# profile, topology and plan.
# Usage: sudo bench/studies/planner_picks.sh SLM DATA_DIR [OUT=runs/planner_picks] [ROUNDS=4] [SCENARIO=rtt20]
# (SCENARIO: rtt0, rtt20, rtt100, het20, gpu20 or mem20, as planner_study.sh's)
set -euo pipefail
SLM=$(readlink -f "$1") DATA=$(readlink -f "$2") OUT=$(mkdir -p "${3:-runs/planner_picks}" && readlink -f "${3:-runs/planner_picks}")
ROUNDS=${4:-4} SCENARIO=${5:-rtt20}
[ "$(id -u)" -eq 0 ] || { echo "planner_picks: needs root (the testbed); run with sudo" >&2; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"; "$SLM" testbed down "$W/c.toml" 2>/dev/null || true' EXIT
export HOME=$W  # a profile cache of its own
. "$(dirname "$0")/planner_setup.sh"
study_model "$DATA"
study_scenario "$SCENARIO" "$W/c.toml" || exit 2
if [ "$SCENARIO" = mem20 ]; then default="zero3 pp4 pp2-dp2-rc"; else default="dp pp4 pp2-dp2"; fi
read -r -a PRESETS <<< "${PRESETS:-$default}"
seconds() { grep -o "predicted [0-9.]* s per step" | awk '{print $2}' || true; }  # none: refused
: > "$OUT/picks.txt"
for ((i = 1; i <= ROUNDS; i++)); do
  echo "== round $i of $ROUNDS: profile" >&2
  "$SLM" testbed run "$W/c.toml" -- "$SLM" profile "${MODEL[@]}" --micro-batches 1,2,4,8 --no-cache -o "$OUT/profile_$i.json" > "$W/log" 2>&1 || { cat "$W/log"; exit 1; }
  "$SLM" testbed run "$W/c.toml" -- "$SLM" probe -o "$OUT/topology_$i.json" > "$W/log" 2>&1 || { cat "$W/log"; exit 1; }
  P=(--cluster "$W/c.toml" --profile "$OUT/profile_$i.json" --topology "$OUT/topology_$i.json")
  "$SLM" plan auto "${MODEL[@]}" "${P[@]}" --all-ranks -o "$OUT/auto_$i.toml" > "$W/auto.txt" 2>&1 || { cat "$W/auto.txt"; exit 1; }
  pick=$(grep -o "^chosen: [^;]*;[^;]*" "$W/auto.txt" | sed 's/^chosen: //')
  for name in "${PRESETS[@]}" auto; do
    if [ "$name" = auto ]; then f=(--set "parallel.plan=$OUT/auto_$i.toml"); else read -r -a f <<< "${PRESET_FLAGS[$name]}"; fi
    if [ "$name" = auto ]; then pred=$("$SLM" plan check "$OUT/auto_$i.toml" "${MODEL[@]}" --world 4 "${P[@]}" 2>&1 >/dev/null | seconds)
    else pred=$("$SLM" plan make "${MODEL[@]}" --world 4 "${f[@]}" "${P[@]}" 2>&1 >/dev/null | seconds); fi
    echo "== round $i: $name (predicted $pred s)" >&2
    rm -rf "$W/run"
    timeout -s TERM 300 "$SLM" testbed run "$W/c.toml" -- "$SLM" train "${MODEL[@]}" "${f[@]}" --set run.dir="$W/run" \
      --set schedule.max_steps=8 > "$W/run.log" 2>&1 || true
    meas=$(python3 - "$W/run" <<'PY'
import json, os, sys
f = sys.argv[1] + "/metrics.jsonl"  # none where the run failed (its log: W/run.log)
s = [json.loads(l)["step_s"] for l in open(f) if '"step_s"' in l][1:] if os.path.exists(f) else []
print(f"{sorted(s)[len(s) // 2]:.3f}" if s else "nan")
PY
)
    echo "$i $name $pred $meas $pick" | tee -a "$OUT/picks.txt"
  done
done
