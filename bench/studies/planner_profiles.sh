#!/usr/bin/env bash
# bench/studies/planner_profiles.sh: a fresh `slm profile` of the planner study's model on each
# scenario's testbed (needs root), written to OUT/<scenario>.json: for re-predicting a kept study
# (bench/studies/planner_repredict.sh, PROFILE_FIELDS_FROM=OUT) with profile fields measured since.
# Usage: sudo bench/studies/planner_profiles.sh SLM DATA_DIR OUT [SCENARIOS...]
set -euo pipefail
SLM=$(readlink -f "$1") DATA=$(readlink -f "$2") OUT=$3; shift 3
mkdir -p "$OUT"
[ "$(id -u)" -eq 0 ] || { echo "planner_profiles: needs root (the testbed); run with sudo" >&2; exit 1; }
W=$(mktemp -d); trap 'rm -rf "$W"; "$SLM" testbed down "$W/c.toml" 2>/dev/null || true' EXIT
export HOME=$W  # no cached profile
. "$(dirname "$0")/planner_setup.sh"
study_model "$DATA"
for sc in "${@:-rtt0 rtt20 rtt100 het20 gpu20 mem20}"; do
  for s in $sc; do
    study_scenario "$s" "$W/c.toml"
    "$SLM" testbed run "$W/c.toml" -- "$SLM" profile "${MODEL[@]}" --micro-batches 1,2,4,8 --no-cache -o "$OUT/$s.json" \
      > "$W/log" 2>&1 || { cat "$W/log"; exit 1; }
    echo "$s: $(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['ranks']; print('own', [round(q['comm_cpu_s_per_byte']*1e9,2) for q in r], 'machine extra', [round(q.get('machine_extra_cpu_s_per_byte',0)*1e9,2) for q in r], 'ns/B')" "$OUT/$s.json")"
  done
done
