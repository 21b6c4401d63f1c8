# tests/e2e/torchrun.sh: PyPI's torchrun (the venv of SLM_PYTHON; Debian's 1.13 torchrun fails in
# its own argument handling) starts `slm train` with --no-python on 2 and 4 ranks (DDP, and a
# 2-stage pipeline x 2 replicas on 4), and every step's loss equals that of the same job started by
# `slm launch` (same layout, so the same sums: tolerance 1e-6). Skipped without torchrun. With a
# LibTorch 1.x build (Debian's), which cannot use torchrun 2.x's agent store, the job must end
# with one clear line instead of hanging.
source "$(dirname "$0")/lib.sh"
PY=${SLM_PYTHON:-}
TORCHRUN=$(dirname "${PY:-/nonexistent/x}")/torchrun
[ -x "$TORCHRUN" ] || skip "no PyPI torchrun beside SLM_PYTHON (SLM_TORCH=pip scripts/setup.sh --venv makes one)"
cd "$WORK"
make_dataset "$(real_corpus)" 400 0.02
COMMON=(-c /dev/null --set system.precision=fp32 --set data.dir=data --set model.n_layer=2 --set model.n_head=2 --set model.n_embd=32
        --set model.block_size=32 --set batch.batch_size=8 --set batch.micro_batch=2 --set optim.lr=3e-3
        --set schedule.warmup_steps=2 --set schedule.max_steps=8 --set eval.every=0 --set log.every=4)
if "$SLM" --version | grep -q "LibTorch 1\."; then
  # A 1.x build cannot use the store torchrun 2.x's agent hosts: one line and an exit, not a hang.
  rc=0; timeout 300 "$TORCHRUN" --nproc-per-node 2 --master-port 29660 --no-python "$SLM" train "${COMMON[@]}" \
    --set run.dir=old > old.log 2>&1 || rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { cat old.log; fail "LibTorch 1.x under torchrun 2.x: exit $rc"; }
  grep -q "slm: error: rendezvous: torchrun's agent hosts the store (TORCHELASTIC_USE_AGENT_STORE=True), which this LibTorch 1" \
    old.log || { cat old.log; fail "LibTorch 1.x under torchrun 2.x: no one-line error"; }
  echo "torchrun 2.x with a LibTorch 1.x build: refused in one line (exit $rc)"
  exit 0
fi
for n in 2 4; do
  extra=(); [ $n = 4 ] && extra=(--set parallel.pp=2 --set parallel.dp=2 --set parallel.micro_batches=2)
  "$SLM" launch -n $n -- "$SLM" train "${COMMON[@]}" "${extra[@]}" --set run.dir=launch$n > launch$n.log 2>&1 ||
    { cat launch$n.log; fail "slm launch -n $n"; }
  "$TORCHRUN" --nproc-per-node $n --master-port $((29650 + n)) --no-python "$SLM" train "${COMMON[@]}" "${extra[@]}" \
    --set run.dir=torchrun$n > torchrun$n.log 2>&1 || { cat torchrun$n.log; fail "torchrun --nproc-per-node $n"; }
  grep -q "world $n\|x$n\|$n ranks" torchrun$n.log || { cat torchrun$n.log; fail "torchrun $n: not a $n-rank job"; }
  same_losses launch$n torchrun$n 1e-6
done
echo "torchrun: all passed"
