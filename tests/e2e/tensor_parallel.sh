# tests/e2e/tensor_parallel.sh: tensor parallelism trains the same model as one process.
#  1. Building blocks (tests/tools/tp_check.cpp): sharded block, vocabulary-parallel embedding,
#     LM head and cross-entropy give the whole model's loss and every gradient slice (1e-5) on
#     1, 2 and 4 ranks.
#  2. `slm train` with tp 2 (2 ranks), dp 2 x tp 2 with ZeRO 0, 2 and 3 (4 ranks): every step's
#     loss and gradient norm within TOL of the single-process run (fp32, same global batch and seed).
#  3. Checkpoints across plans: tp 2 stopped at step 10 and continued as dp 2 x tp 2 with ZeRO 1,
#     and as one process; dp 2 with ZeRO 2 stopped at 10 and continued with tp 2: all the same
#     trajectory; a tp checkpoint's final model (read whole by the single-process tools) gives the
#     single-process run's logits (1e-4); so does dp 2 x tp 2 with ZeRO 3's, stopped at 10 and resumed.
#  4. Sequence parallelism (parallel.sequence_parallel): tp 2, and dp 2 x tp 2 with ZeRO 2 and 3,
#     within TOL of the single-process run; its activation memory estimate below plain tp's, and
#     ZeRO 3's estimate with tp below ZeRO 2's. Recomputation (model.recompute) with tp 2, and with
#     dp 2 x tp 2, sequence parallelism and ZeRO 2, likewise.
#     Dropout with tp 2: stopped and resumed (measuring the GEMM peak after the restore) gives the
#     straight run's losses exactly; it and dp 2 x tp 2 with sequence parallelism train as one
#     process with dropout does (other masks: the last 5 steps' mean loss within 1%).
#  5. One-line errors: tp not dividing n_head, sequence parallelism with a tp that does not divide
#     the sequence length.
source "$(dirname "$0")/lib.sh"
CHECK=$3
DUMP=$4
TOL=1e-5
run_on_ranks "$CHECK" 1 2 4
cd "$WORK"
make_dataset "$(real_corpus)" 512 0.02
COMMON=(-c /dev/null --set system.precision=fp32 --set data.dir=data "${TINY_MODEL[@]}"
        --set batch.batch_size=16 --set batch.micro_batch=4
        --set optim.lr=3e-3 --set schedule.warmup_steps=4 --set schedule.max_steps=20
        --set eval.every=10 --set eval.batches=2 --set log.every=10 --set parallel.bucket_mb=0.1)
"$SLM" train "${COMMON[@]}" --set run.dir=ref 2> ref.log || { cat ref.log; fail "single-process run"; }
for cfg in "2 0" "4 0" "4 2" "4 3"; do
  set -- $cfg
  "$SLM" launch -n "$1" -- "$SLM" train "${COMMON[@]}" --set parallel.tp=2 --set parallel.zero="$2" \
    --set run.dir="n$1z$2" > "n$1z$2.log" 2>&1 || { cat "n$1z$2.log"; fail "$1 ranks, tp 2, ZeRO $2"; }
  grep -q "data parallel x$(($1 / 2)), tensor parallel x2, ZeRO $2" "n$1z$2.log" || fail "layout line"
  same_losses ref "n$1z$2" "$TOL"
done
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" --set parallel.tp=2 --set run.dir=rs --stop-at 10 \
  > rs.log 2>&1 || { cat rs.log; fail "stop at 10"; }
cp -r rs rs1
"$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" --set parallel.tp=2 --set parallel.zero=1 --set run.dir=rs \
  --resume > rs4.log 2>&1 || { cat rs4.log; fail "resume as dp 2 x tp 2"; }
same_losses ref rs "$TOL"
"$SLM" train "${COMMON[@]}" --set run.dir=rs1 --resume 2> rs1.log || { cat rs1.log; fail "resume as one process"; }
same_losses ref rs1 "$TOL"
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" --set parallel.zero=2 --set run.dir=rs2 --stop-at 10 \
  > rs2.log 2>&1 || { cat rs2.log; fail "dp 2 stop at 10"; }
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" --set parallel.tp=2 --set run.dir=rs2 --resume \
  > rs2b.log 2>&1 || { cat rs2b.log; fail "resume dp 2 as tp 2"; }
same_losses ref rs2 "$TOL"
same_logits "$DUMP" ref n4z2 tp
Z3=(--set parallel.tp=2 --set parallel.zero=3)
"$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" "${Z3[@]}" --set run.dir=z3rs --stop-at 10 > z3rs.log 2>&1 \
  && "$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" "${Z3[@]}" --set run.dir=z3rs --resume >> z3rs.log 2>&1 \
  || { cat z3rs.log; fail "dp 2 x tp 2, ZeRO 3, stopped at 10 and resumed"; }
same_losses ref z3rs "$TOL"
same_logits "$DUMP" ref z3rs tp

SP=(--set parallel.sequence_parallel=true)
for cfg in "2 0" "4 2" "4 3"; do
  set -- $cfg
  "$SLM" launch -n "$1" -- "$SLM" train "${COMMON[@]}" "${SP[@]}" --set parallel.tp=2 --set parallel.zero="$2" \
    --set run.dir="sp$1z$2" > "sp$1z$2.log" 2>&1 || { cat "sp$1z$2.log"; fail "sequence parallel, $1 ranks, ZeRO $2"; }
  same_losses ref "sp$1z$2" "$TOL"
done
RC=(--set model.recompute=true)  # recomputation: each block reruns, its collectives too, in backward
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" "${RC[@]}" --set parallel.tp=2 --set run.dir=rc2 > rc2.log 2>&1 \
  || { cat rc2.log; fail "tp 2 with recomputation"; }
same_losses ref rc2 "$TOL"
"$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" "${RC[@]}" "${SP[@]}" --set parallel.tp=2 --set parallel.zero=2 \
  --set run.dir=rcsp4 > rcsp4.log 2>&1 || { cat rcsp4.log; fail "dp 2 x tp 2, sequence parallel, recomputation"; }
same_losses ref rcsp4 "$TOL"
DR=(--set model.dropout=0.1 --set parallel.tp=2)  # dropout: the same seed, the same steps, resumed too
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" "${DR[@]}" --set run.dir=dr > dr.log 2>&1 || { cat dr.log; fail "tp 2 with dropout"; }
# The resumed half with an empty cache: it measures the GEMM peak after restoring the generators,
# which must not move them (a busy machine caches no peak, so there every run measures).
mkdir -p fresh_home
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" "${DR[@]}" --set run.dir=drrs --stop-at 10 > drrs.log 2>&1 \
  && HOME=$WORK/fresh_home "$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" "${DR[@]}" --set run.dir=drrs --resume \
  >> drrs.log 2>&1 || { cat drrs.log; fail "tp 2 with dropout, stopped at 10 and resumed"; }
grep -q "peak .*(measured now" drrs.log || fail "the resumed run did not measure the peak"
same_losses dr drrs 1e-12
"$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" "${DR[@]}" "${SP[@]}" --set parallel.zero=2 --set run.dir=drsp4 \
  > drsp4.log 2>&1 || { cat drsp4.log; fail "dp 2 x tp 2, sequence parallel, dropout"; }
"$SLM" train "${COMMON[@]}" --set model.dropout=0.1 --set run.dir=dr1 2> dr1.log || { cat dr1.log; fail "one process, dropout"; }
python3 - <<'PY' || fail "dropout under tp does not train as one process's"
import json
for run in ("dr", "drsp4"):  # other masks, the same expected loss: the last steps' mean within 1% of one process's
    mean = lambda d: sum(r["loss"] for r in map(json.loads, open(d + "/metrics.jsonl")) if "loss" in r and r["step"] > 15) / 5
    print(f"{run}: mean loss of steps 16-20 {mean(run):.4f}, one process {mean('dr1'):.4f}")
    assert abs(mean(run) - mean("dr1")) < 0.01 * mean("dr1")
PY
python3 - <<'PY' || fail "sequence parallelism moved no all-gathers and reduce-scatters"
import json
rows = lambda d: [json.loads(l) for l in open(d + "/metrics.jsonl") if '"bytes_tp"' in l]
a, b = rows("n2z0")[-1]["bytes_tp"], rows("sp2z0")[-1]["bytes_tp"]
print(f"tp bytes per step: {a:.0f} plain, {b:.0f} sequence parallel")
assert b > 0 and a > 0 and b != a
PY
act() { "$SLM" plan make "${COMMON[@]}" --world 2 --tp 2 "$@" 2>&1 | grep "rank 0: ~"; }  # ~total (... + activations)
plain=$(act) split=$(act "${SP[@]}")
[ -n "$plain" ] && [ "$plain" != "$split" ] || fail "the memory estimate ignores sequence parallelism: '$plain' / '$split'"
mib() {  # rank 0's estimate, of a deeper model (with 2 blocks ZeRO 3's gathered units are most of it)
  "$SLM" plan make "${COMMON[@]}" --set model.n_layer=24 --set model.n_embd=256 --world 4 --tp 2 "$@" 2>&1 \
    | grep -o "rank 0: ~[0-9.]* [MG]iB"
}
z2=$(mib --zero 2) z3=$(mib --zero 3)
python3 -c "import sys; v = lambda s: float(s.split('~')[1].split()[0]) * (1024 if 'GiB' in s else 1); sys.exit(not v('$z3') < v('$z2'))" \
  || fail "the memory estimate of ZeRO 3 with tp is not below ZeRO 2's: '$z3' / '$z2'"
expect_error "parallel: sequence_parallel needs tp(2) to divide the sequence length 63" \
  "$SLM" train "${COMMON[@]}" "${SP[@]}" --set parallel.tp=2 --set batch.seq_len=63
expect_error "parallel: tp(4) must divide model.n_head(2)" "$SLM" train "${COMMON[@]}" --set parallel.tp=4
echo "tensor parallelism matches the single-process run"
