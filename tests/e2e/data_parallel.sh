# tests/e2e/data_parallel.sh: every data-parallel layout trains the same model as one process.
# On CPU with Gloo over loopback, fp32, same global batch (16) and seed, 20 steps:
#  - DDP (ZeRO 0) and ZeRO 1, 2, 3 on 2 and 4 ranks (`slm launch`): every step's loss within
#    TOL of the single-process run, and the final models' logits within TOL_LOGITS;
#  - resharded resume: 2 ranks with ZeRO 3 stop at step 10; 4 ranks with ZeRO 1, and 1 process,
#    continue from that checkpoint; 2 ranks with ZeRO 2 -> 4 ranks with ZeRO 3: all reproduce the
#    single-process trajectory.
# Tolerances: the only difference is the order of floating-point sums in the all-reduce
# (measured: 4e-7 on the loss).
source "$(dirname "$0")/lib.sh"
DUMP=$3
TOL=1e-5
TOL_LOGITS=1e-4
cd "$WORK"
make_dataset "$(real_corpus)" 512 0.02
COMMON=(-c /dev/null --set system.precision=fp32 --set data.dir=data "${TINY_MODEL[@]}"
        --set batch.batch_size=16 --set batch.micro_batch=4
        --set optim.lr=3e-3 --set schedule.warmup_steps=4 --set schedule.max_steps=20
        --set eval.every=0 --set log.every=10 --set parallel.bucket_mb=0.1)

"$SLM" train "${COMMON[@]}" --set run.dir=ref 2> ref.log || { cat ref.log; fail "single-process run"; }
compare() {  # compare RUN: losses and final logits against ref
  same_losses ref "$1" "$TOL"
  "$DUMP" ref 1 2 3 4 5 > ref.logits
  "$DUMP" "$1" 1 2 3 4 5 > "$1.logits"
  python3 - ref.logits "$1.logits" "$TOL_LOGITS" <<'PY' || fail "$1: final parameters differ"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
d = max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
print(f"  final logits max diff {d:.2e}")
assert len(a) == len(b) == 5 and d < float(sys.argv[3])
PY
}
for n in 2 4; do
  for z in 0 1 2 3; do
    "$SLM" launch -n $n -- "$SLM" train "${COMMON[@]}" --set parallel.zero=$z --set run.dir=n${n}z$z \
      > n${n}z$z.log 2>&1 || { cat n${n}z$z.log; fail "$n ranks, ZeRO $z"; }
    grep -q "data parallel x$n, tensor parallel x1, ZeRO $z" n${n}z$z.log || fail "layout line"
    compare n${n}z$z
  done
done
[ "$(ls n4z2/checkpoints/step_00000020 | grep -c shard_)" -eq 4 ] || fail "ZeRO 2 on 4 ranks: 4 shards expected"
[ "$(ls n4z0/checkpoints/step_00000020 | grep -c shard_)" -eq 1 ] || fail "DDP: one shard expected"

[ "$(ls n4z3/checkpoints/step_00000020 | grep -c shard_)" -eq 4 ] || fail "ZeRO 3 on 4 ranks: 4 shards expected"

# Resharded resume: 2 ranks, ZeRO 3 -> 4 ranks, ZeRO 1 and -> 1 process; ZeRO 2 -> ZeRO 3.
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" --set parallel.zero=3 --set run.dir=rs --stop-at 10 \
  > rs.log 2>&1 || { cat rs.log; fail "stop at 10"; }
cp -r rs rs1
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" --set parallel.zero=2 --set run.dir=rs3 --stop-at 10 \
  > rs3.log 2>&1 || { cat rs3.log; fail "stop at 10 (ZeRO 2)"; }
"$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" --set parallel.zero=3 --set run.dir=rs3 --resume \
  > rs3b.log 2>&1 || { cat rs3b.log; fail "resume on 4 ranks with ZeRO 3"; }
compare rs3
"$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" --set parallel.zero=1 --set run.dir=rs --resume \
  > rs4.log 2>&1 || { cat rs4.log; fail "resume on 4 ranks"; }
grep -q "resumed from rs/checkpoints/step_00000010 at step 10" rs4.log || fail "did not resume"
compare rs
"$SLM" train "${COMMON[@]}" --set run.dir=rs1 --resume 2> rs1.log || { cat rs1.log; fail "resume on 1 process"; }
compare rs1
echo "all layouts match the single-process run"
