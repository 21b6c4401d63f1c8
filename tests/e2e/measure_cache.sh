# tests/e2e/measure_cache.sh: what `slm doctor` and `slm train` measure once and cache (the GEMM
# peaks, the precision probe) is kept from a machine with no other work and read back; beside two
# busy processes per core it is measured and used, said so, and not kept (a low peak had put MFU at
# 126-138% in every later run); doctor measures the peaks again and keeps the higher. The same for
# the planner's compute profile of 2 ranks (kept alone: tests/e2e/planner.sh). Serial: the unit
# tests of the same (tests/host/hardware_test.cpp) skip where CI's other test takes a core.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
export HOME=$WORK/alone
"$SLM" doctor "${TINY_MODEL[@]}" > first.txt || { cat first.txt; fail "doctor"; }
for p in fp32 bf16; do
  grep -q "^ok    $p peak .*(matmul, measured now)$" first.txt || { cat first.txt; fail "$p peak not measured alone"; }
done
grep -q "^ok    precision .*(measured now; " first.txt || { cat first.txt; fail "precision probe not measured alone"; }
"$SLM" doctor "${TINY_MODEL[@]}" > again.txt || { cat again.txt; fail "doctor again"; }
for p in fp32 bf16; do  # measured again: the higher of the two kept, whichever it was
  grep -Eq "^ok    $p peak .*\(matmul, (cached; [0-9.]+ measured now|measured now; the cached [0-9.]+ was lower)\)$" \
    again.txt || { cat again.txt; fail "$p peak not refreshed"; }
done
grep -q "^ok    precision .*(cached; " again.txt || { cat again.txt; fail "precision probe not read back"; }
echo "ok: measured alone, cached, read back; doctor refreshes the peaks"

export HOME=$WORK/busy
busy=()
for _ in $(seq $((2 * $(nproc)))); do (while :; do :; done) & busy+=($!); done
"$SLM" doctor "${TINY_MODEL[@]}" > busy.txt || { kill "${busy[@]}"; cat busy.txt; fail "doctor on a busy machine"; }
"$SLM" launch -n 2 -- "$SLM" profile -c /dev/null "${TINY_MODEL[@]}" --set system.precision=fp32 --micro-batches 1,2 \
  -o profile.json > profile.txt 2>&1 || { kill "${busy[@]}"; cat profile.txt; fail "profile on a busy machine"; }
kill "${busy[@]}"
grep -q "profile: 2 ranks, .*(measured on a busy machine ([0-9]*% of its threads' time): not cached; " profile.txt \
  || { cat profile.txt; fail "profile of a busy machine"; }
for p in fp32 bf16; do
  grep -Eq "^ok    $p peak .*\(matmul, measured now on a busy machine \([0-9]+% of its threads' time\): not cached\)$" \
    busy.txt || { cat busy.txt; fail "$p peak of a busy machine"; }
done
grep -q "^ok    precision .*(measured now on a busy machine ([0-9]*% of its threads' time): not cached; " busy.txt \
  || { cat busy.txt; fail "precision probe of a busy machine"; }
[ ! -e "$HOME/.cache/slmtrain/peak.json" ] && [ ! -e "$HOME/.cache/slmtrain/precision.json" ] \
  && [ ! -e "$HOME/.cache/slmtrain/profile.json" ] \
  || fail "a busy machine's timings were cached: $(ls "$HOME/.cache/slmtrain")"
echo "ok: a busy machine's timings are used, said so, and not cached"
echo "measure_cache: all passed"
