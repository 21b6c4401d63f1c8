# tests/e2e/cross_build.sh: a checkpoint written by one LibTorch build loads in the other (CI builds
# Debian's 1.13 and PyPI's 2.x; this test runs in the second with the first's slm as OTHER):
# OTHER trains 6 of 12 steps and stops, this build resumes to 12, and the reverse; both match the
# straight 12 steps of the build that wrote the first half within 1e-5 (two LibTorch versions may
# pick different kernels, so not bit for bit); eval/export of the other's run work.
source "$(dirname "$0")/lib.sh"
OTHER=${3:-}
[ -x "$OTHER" ] || skip "no other build's slm given (scripts/test.sh passes build/slm to build-pip's tests)"
cd "$WORK"
make_dataset "$(real_corpus)" 400 0.02
COMMON=(-c /dev/null --set system.precision=fp32 --set data.dir=data --set model.n_layer=2 --set model.n_head=2 --set model.n_embd=32
        --set model.block_size=32 --set batch.batch_size=8 --set batch.micro_batch=4 --set optim.lr=3e-3
        --set schedule.warmup_steps=2 --set schedule.max_steps=12 --set eval.every=0 --set system.threads=1)
echo "this: $("$SLM" --version); other: $("$OTHER" --version)"
for first in OTHER SLM; do
  second=$([ $first = OTHER ] && echo SLM || echo OTHER)
  "${!first}" train "${COMMON[@]}" --set run.dir=straight_$first 2>/dev/null
  "${!first}" train "${COMMON[@]}" --set run.dir=split_$first --stop-at 6 2>/dev/null
  "${!second}" train "${COMMON[@]}" --set run.dir=split_$first --resume 2> resume_$first.log ||
    { cat resume_$first.log; fail "$second cannot resume $first's checkpoint"; }
  grep -q "resumed from split_$first/checkpoints/step_00000006" resume_$first.log || fail "no resume message"
  same_losses straight_$first split_$first 1e-5
  "${!second}" eval straight_$first --batches 2 --micro-batch 2 | grep -q perplexity || fail "$second eval of $first's run"
  "${!second}" export straight_$first --out hf_$first >/dev/null || fail "$second export of $first's run"
done
echo "cross_build: all passed"
