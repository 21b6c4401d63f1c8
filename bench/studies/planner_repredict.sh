#!/usr/bin/env bash
# bench/studies/planner_repredict.sh: the planner's predictions again for the preset layouts of a
# planner study (bench/studies/planner_study.sh), from the profiles and probed links it kept, against the
# step times it measured: for checking a change of the cost model without the testbed.
# Prints a table like the study's (scenario, layout, predicted, measured, error) and the median
# and worst error. Where the study kept each round's median and profile (since 2026-11-27h), each
# round is predicted from its own profile and the error is the mean of the rounds' ratios, as the
# study's first error column; else the first profile against the pooled median. No root needed.
# Usage: bench/studies/planner_repredict.sh SLM DATA_DIR STUDY_DIR (with planner_study*.md and the
#        planner_study_<scenario>_{profile,topology}.json files)
# COMM_CPU_FROM=profile.json fills in each rank's comm_cpu_s_per_byte where a kept profile
# predates it, from a later `slm profile` of the same 4 ranks on the same machine and testbed;
# PROFILE_FIELDS_FROM=DIR likewise machine_extra_cpu_s_per_byte and machine from DIR/<scenario>.json
# (written by bench/studies/planner_profiles.sh on the same machine).
# A profile that predates alone_cores gets site b's quota (het20: 0.5 cores) for ranks 2 and 3.
set -euo pipefail
SLM=$(readlink -f "$1") DATA=$(readlink -f "$2") DIR=$(readlink -f "$3")
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/planner_setup.sh"
study_model "$DATA"
declare -A RTT=([rtt0]=0 [rtt20]=20 [rtt100]=100 [het20]=20 [gpu20]=20 [mem20]=20)
declare -A RATE=([rtt0]=1000 [rtt20]=1000 [rtt100]=1000 [het20]=1000 [gpu20]=250 [mem20]=1000)
declare -A CPUS_B=([het20]=0.5)
echo "| scenario | layout | predicted s | measured s | error |"
echo "|---|---|---|---|---|"
predict() {  # profile -> the predicted seconds of layout $l in scenario $sc
  local fields=${PROFILE_FIELDS_FROM:+$PROFILE_FIELDS_FROM/$sc.json}
  python3 - "$1" "$W/prof.json" "${COMM_CPU_FROM:-}" "${CPUS_B[$sc]:-1}" "$fields" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
later = json.load(open(sys.argv[3]))["ranks"] if sys.argv[3] else [{}] * len(p["ranks"])
fields = json.load(open(sys.argv[5]))["ranks"] if sys.argv[5] else [{}] * len(p["ranks"])
for i, (r, q, f) in enumerate(zip(p["ranks"], later, fields)):
    r.setdefault("comm_cpu_s_per_byte", q.get("comm_cpu_s_per_byte", 0.0))
    r.setdefault("alone_cores", min(1.0, float(sys.argv[4])) if i >= 2 else 1.0)
    r.setdefault("machine_extra_cpu_s_per_byte", f.get("machine_extra_cpu_s_per_byte", 0.0))
    r.setdefault("machine", f.get("machine", -1))
json.dump(p, open(sys.argv[2], "w"))
PY
  "$SLM" plan make "${MODEL[@]}" --world 4 "${f[@]}" --cluster "$W/c.toml" --profile "$W/prof.json" \
    --topology "$DIR/planner_study_${sc}_topology.json" 2>&1 >/dev/null | grep -o "predicted [0-9.]* s per step" | awk '{print $2}'
}
cat "$DIR"/planner_study*.md | grep -E '^\| [a-z0-9]+ \| (dp|zero2|zero3|pipeshard|pp2-dp2|pp2-dp2-rc|pp4|hier-dp) \| [0-9]' |
while IFS='|' read -r _ sc l _ m rounds _; do
  sc=$(echo $sc) l=$(echo $l) m=$(echo $m) rounds=$(echo $rounds)
  [ -f "$DIR/planner_study_${sc}_profile.json" ] && [ "$m" != nan ] || continue
  printf '[[site]]\nname = "a"\nranks = 2\n[[site]]\nname = "b"\nranks = 2\n[[link]]\nsites = ["a", "b"]\ndelay_ms = %s\nrate_mbit = %s\n' \
    "$(python3 -c "print(${RTT[$sc]} / 2)")" "${RATE[$sc]}" > "$W/c.toml"
  read -r -a f <<< "${PRESET_FLAGS[$l]}"
  # Each round's median, each predicted from its own profile where the study kept it; else the
  # pooled median from the first profile.
  if [[ $rounds =~ ^[0-9.]+( / [0-9.]+)+$ ]]; then read -r -a med <<< "${rounds// \/ / }"; else med=("$m"); fi
  preds=()
  for k in "${!med[@]}"; do
    prof="$DIR/planner_study_${sc}_profile$([ "$k" = 0 ] || echo "_r$((k + 1))").json"
    [ -f "$prof" ] || prof="$DIR/planner_study_${sc}_profile.json"
    preds+=("$(predict "$prof")")
  done
  echo "| $sc | $l | $(sed "s# # / #g" <<< "${preds[*]}") | $(sed "s# # / #g" <<< "${med[*]}") | $(python3 -c "
p, m = [float(x) for x in '${preds[*]}'.split()], [float(x) for x in '${med[*]}'.split()]
print(f'{100 * (sum(a / b for a, b in zip(p, m)) / len(m) - 1):+.0f}%')") |"
done | tee "$W/rows"
python3 - "$W/rows" <<'PY'
import sys
e = sorted(abs(float(r.split("|")[5].strip().rstrip("%"))) for r in open(sys.argv[1]) if r.startswith("| "))
if e: print(f"\nPrediction error over {len(e)} runs: median {e[len(e) // 2]:.0f}%, worst {e[-1]:.0f}%.")
PY
