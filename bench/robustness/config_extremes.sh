#!/usr/bin/env bash
# bench/robustness/config_extremes.sh: every numeric setting of the training config at extreme
# values through `slm train` (one rank, two steps of a small model), to find what a unit test of
# the parser cannot: a value the config accepts that overflows, crashes or trips a sanitizer
# further on. Run it with the sanitizer build (`bash scripts/sanitize.sh` makes build-asan/) after
# adding a setting; ~1 h on 2 cores. Prints one line per finding: "BAD key=value: SAN (the report's first line) |
# exit N"; exit 1 if any. A value accepted and trained with (exit 0) or refused in one line
# (exit 1 or 2) is fine; a run still going after 90 s (a huge max_steps) is stopped and counts as
# fine.
# Usage: SLM=build-asan/slm [KEYS=REGEX] bench/robustness/config_extremes.sh [VALUE...]
#   (default values: ±(2^63 - 1), ±2^40, ±(2^31 - 1), -1, 0, 2^20, 2^24, ±1e308; KEYS: only the
#   keys it matches, e.g. KEYS='^system\.threads$' for a new setting)
set -uo pipefail
SLM=${SLM:-$(cd "$(dirname "$0")/../.." && pwd)/build/slm}
values=("$@")
[ ${#values[@]} -gt 0 ] || values=(9223372036854775807 -9223372036854775807 1099511627776 -1099511627776
                                   2147483647 -2147483647 -1 0 1048576 16777216 1e308 -1e308)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:detect_container_overflow=0:verify_asan_link_order=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
W=$(mktemp -d /tmp/slm_extremes_XXXXXX)
trap 'rm -rf "$W"' EXIT
for i in $(seq 400); do printf 'Line %d: the fox %d jumps over the dog.\n' "$i" $((i % 7)); done > "$W/corpus.txt"
"$SLM" tokenizer train "$W/corpus.txt" --vocab-size 300 --out "$W/tok" -q > /dev/null
"$SLM" data prepare "$W/corpus.txt" -t "$W/tok" --separator line --val-fraction 0.1 --out "$W/data" -q > /dev/null
BASE=(--set data.dir="$W/data" --set model.n_layer=2 --set model.n_embd=64 --set model.n_head=2
      --set model.block_size=64 --set batch.batch_size=4 --set batch.micro_batch=2 --set schedule.max_steps=2
      --set schedule.warmup_steps=1 --set eval.every=0 --set checkpoint.every=0)
# The numeric keys, from the effective configuration's dump ("key = 12", "key = -1.5").
keys=$("$SLM" train "${BASE[@]}" --print-config |
       awk '/^\[/ { s = substr($0, 2, length($0) - 2) } / = -?[0-9]/ { print s "." $1 }' | grep -E "${KEYS:-.}")
found=0
for k in $keys; do
  for v in "${values[@]}"; do
    rm -rf "$W/run"
    timeout 90 "$SLM" train "${BASE[@]}" --set run.dir="$W/run" --set "$k=$v" > "$W/out.txt" 2>&1
    rc=$?
    what=""
    if grep -q "runtime error\|AddressSanitizer\|LeakSanitizer" "$W/out.txt"; then
      what="SAN ($(grep -m1 "runtime error\|ERROR: " "$W/out.txt" | cut -c1-200))"
    elif [ $rc -ge 3 ] && [ $rc -ne 124 ]; then
      what="exit $rc ($(grep -m1 "slm: " "$W/out.txt" | cut -c1-200))"
    fi
    [ -z "$what" ] || { echo "BAD $k=$v: $what"; found=1; }
  done
done
echo "checked $(echo "$keys" | wc -w) keys x ${#values[@]} values"
exit $found
