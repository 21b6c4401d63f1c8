# tests/e2e/loss_scaling.sh: dynamic loss scaling (for fp16 on GPUs) on the CPU, in fp32:
#  1. with a power-of-two scale and no overflow, the losses equal the unscaled run (1e-6);
#  2. a scale so large that the gradients overflow: those steps are skipped (said in the log and
#     in metrics.jsonl), the scale halves until the gradients are finite, then training goes on
#     and the loss goes down;
#  3. the scale is part of the checkpoint: stop + --resume reproduces the straight run exactly;
#  4. fp16 on a CPU is a one-line error.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
gen_corpus 2000 > gen.txt
make_dataset gen.txt 300 0.05
COMMON=("${SMALL_RUN[@]}")
losses() { python3 -c "
import json, sys
print(' '.join(repr(json.loads(l)['loss']) for l in open(sys.argv[1]) if '\"loss\"' in l))" "$1"; }

"$SLM" train "${COMMON[@]}" --set run.dir=plain 2>/dev/null
"$SLM" train "${COMMON[@]}" --set run.dir=scaled --set system.loss_scaling=on --set system.loss_scale_init=1024 \
  2>/dev/null
python3 - <<'PY' || fail "loss scaling changed the fp32 trajectory"
import json
L = lambda d: [json.loads(l)["loss"] for l in open(d + "/metrics.jsonl") if '"loss"' in l]
a, b = L("plain"), L("scaled")
d = max(abs(x - y) for x, y in zip(a, b))
print(f"scaled vs plain: max loss difference {d:.1e}")
assert len(a) == len(b) == 12 and d < 1e-6
PY

"$SLM" train "${COMMON[@]}" --set run.dir=over --set system.loss_scaling=on --set system.loss_scale_init=1e39 \
  --set log.every=1 2> over.log || { cat over.log; fail "overflow run"; }
grep -q "step 1: gradients not finite, update skipped (loss scale 1e+39 -> 5e+38)" over.log \
  || { cat over.log; fail "no skipped-step line"; }
python3 - <<'PY' || fail "overflow handling"
import json
rows = [json.loads(l) for l in open("over/metrics.jsonl")]
scales = [r for r in rows if "loss_scale" in r]
skipped = [r["step"] for r in scales if r["skipped"]]
losses = [r["loss"] for r in rows if "loss" in r]
print(f"skipped steps {skipped}, scale {scales[0]['loss_scale']:.0e} -> {scales[-1]['loss_scale']:.0e}, "
      f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
assert skipped and skipped == list(range(1, len(skipped) + 1)) and len(skipped) < 12
assert scales[-1]["loss_scale"] < 1e39 and losses[-1] < losses[0] - 0.3
PY

"$SLM" train "${COMMON[@]}" --set run.dir=stop --set system.loss_scaling=on --set system.loss_scale_init=1e39 \
  --set system.loss_scale_growth_interval=3 --stop-at 6 2>/dev/null
"$SLM" train "${COMMON[@]}" --set run.dir=stop --set system.loss_scaling=on --set system.loss_scale_init=1e39 \
  --set system.loss_scale_growth_interval=3 --resume 2>/dev/null
"$SLM" train "${COMMON[@]}" --set run.dir=straight --set system.loss_scaling=on --set system.loss_scale_init=1e39 \
  --set system.loss_scale_growth_interval=3 2>/dev/null
[ "$(losses stop/metrics.jsonl)" = "$(losses straight/metrics.jsonl)" ] || fail "resume with loss scaling differs"

expect_error "precision fp16 needs a CUDA device" "$SLM" train "${COMMON[@]}" --set system.precision=fp16
echo "loss scaling ok"
