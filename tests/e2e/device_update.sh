# tests/e2e/device_update.sh: system.device_update = "on" (the GPU's default: gradient norm,
# clipping and the overflow skip on the device, one host read per step) trains the same model as
# the host path, here on CPU tensors with LibTorch's fused AdamW (2.4+: the PyPI build; with
# Debian's 1.13 "on" is a one-line error and the rest is skipped):
#  1. one process, clipping active: every step's loss and gradient norm within 1e-5 of "off", each
#     step loading the next one's batches while its kernels run (traced);
#  2. overflow (loss scale 1e39): the same steps skipped and the same scales as "off", the skips
#     said in the log, and stop + --resume reproduces the straight run exactly (the checkpoint
#     records the data position before the batches loaded ahead);
#  3. 2 ranks with ZeRO 1 (the norm summed over the shards as a device tensor) and DDP: within 1e-5
#     of the single-process host run;
#  4. pipeline parallelism (2 stages) and tensor parallelism (2 slices): within 1e-5 of the host
#     run of the same model;
#  5. so is system.cuda_graphs = "on" on a CPU (the graphs' host logic: tests/train/step_graph_test.cpp),
#     and a system.cuda_graphs or system.cuda_kernels value that is not one of theirs; "auto" on a
#     CPU trains as "off" does.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
gen_corpus 2000 > gen.txt
make_dataset gen.txt 300 0.05
COMMON=("${SMALL_RUN[@]}" --set optim.grad_clip=0.5 --set log.every=1)
ON=(--set system.device_update=on)
OFF=(--set system.device_update=off)

err=$("$SLM" train "${COMMON[@]}" "${ON[@]}" --set run.dir=probe 2>&1 >/dev/null) && rc=0 || rc=$?
if [ "$rc" -ne 0 ]; then
  [[ "$err" == *"device_update = \"on\" is not possible here: LibTorch"*"has no fused AdamW"* ]] || fail "$err"
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "expected one line: $err"
  skip "this LibTorch has no fused AdamW on the CPU ($err)"
fi
grep -q "^update: on the device" <<<"$err" || fail "no 'update: on the device' line: $err"

# 1. one process
"$SLM" train "${COMMON[@]}" "${OFF[@]}" --set run.dir=host 2> host.log || { cat host.log; fail "host run"; }
"$SLM" train "${COMMON[@]}" "${ON[@]}" --set run.dir=device --set log.trace_steps=3 2> device.log \
  || { cat device.log; fail "device run"; }
grep -q "^update: on the device" host.log && fail "device_update=off updated on the device"
python3 - <<'PY' || fail "the clip never acted: the test would not see a wrong factor"
import json
g = [json.loads(l)["grad_norm"] for l in open("host/metrics.jsonl") if '"grad_norm"' in l]
print(f"gradient norms {min(g):.2f}..{max(g):.2f}, clip 0.5")
assert max(g) > 0.5
PY
same_losses host device 1e-5
python3 - <<'PY' || fail "the next step's batches were not loaded while the step ran"
import json
ev = json.load(open("device/trace/rank_0.json"))["traceEvents"]
n = sum(e["ph"] == "X" and e["name"] == "data (next step)" for e in ev)
print(f"{n} traced steps loaded the next one's batches")
assert n >= 2
PY

# 2. overflow: skips decided on the device, the host's scaler and the optimizer's step count follow
SCALE=(--set system.loss_scaling=on --set system.loss_scale_init=1e39 --set system.loss_scale_growth_interval=3)
"$SLM" train "${COMMON[@]}" "${OFF[@]}" "${SCALE[@]}" --set run.dir=over_host 2>/dev/null || fail "overflow, host"
"$SLM" train "${COMMON[@]}" "${ON[@]}" "${SCALE[@]}" --set run.dir=over_dev 2> over_dev.log \
  || { cat over_dev.log; fail "overflow, device"; }
grep -q "step 1: gradients not finite, update skipped (loss scale 1e+39 -> 5e+38)" over_dev.log \
  || { cat over_dev.log; fail "no skipped-step line"; }
python3 - <<'PY' || fail "the device path skipped other steps than the host path"
import json
rows = lambda d: [json.loads(l) for l in open(d + "/metrics.jsonl") if '"loss_scale"' in l]
a, b = rows("over_host"), rows("over_dev")
skips = lambda r: [x["step"] for x in r if x["skipped"]]
print(f"skipped {skips(a)} / {skips(b)}, scales {[x['loss_scale'] for x in b]}")
assert skips(a) and skips(a) == skips(b) and [x["loss_scale"] for x in a] == [x["loss_scale"] for x in b]
steps = lambda d: [json.loads(l) for l in open(d + "/metrics.jsonl") if '"loss"' in l]
a, b = steps("over_host"), steps("over_dev")  # a skipped step's norm is not finite: null
assert len(a) == len(b) == 12 and all(abs(x["loss"] - y["loss"]) < 1e-5 for x, y in zip(a, b))
assert all((x["grad_norm"] is None) == (y["grad_norm"] is None) for x, y in zip(a, b))
assert all(abs(x["grad_norm"] - y["grad_norm"]) < 1e-5 for x, y in zip(a, b) if x["grad_norm"] is not None)
PY
"$SLM" train "${COMMON[@]}" "${ON[@]}" "${SCALE[@]}" --set run.dir=stop --stop-at 6 2>/dev/null || fail "stop at 6"
"$SLM" train "${COMMON[@]}" "${ON[@]}" "${SCALE[@]}" --set run.dir=stop --resume 2>/dev/null || fail "resume"
python3 - <<'PY' || fail "stop + --resume differs from the straight run"
import json
rows = lambda d: [(r["step"], r["loss"], r["grad_norm"]) for r in map(json.loads, open(d + "/metrics.jsonl")) if "loss" in r]
assert len(rows("stop")) == 12 and rows("stop") == rows("over_dev"), (rows("stop"), rows("over_dev"))
PY

# 3. data parallelism: the norm as a device tensor, all-reduced over the ZeRO shards
for z in 0 1; do
  "$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" "${ON[@]}" --set parallel.zero=$z --set run.dir=dp$z \
    > dp$z.log 2>&1 || { cat dp$z.log; fail "2 ranks, ZeRO $z"; }
  same_losses host dp$z 1e-5
done

# 4. pipeline (2 stages) and tensor parallelism (2 slices): the norm's sums across the stages
#    (point to point) and the slices (all-reduce) as device tensors, the loss counted once
"$SLM" train "${COMMON[@]}" "${OFF[@]}" --set model.n_layer=2 --set run.dir=host2 2> host2.log \
  || { cat host2.log; fail "host run, 2 layers"; }
for layout in pp tp; do
  "$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" "${ON[@]}" --set parallel.$layout=2 --set model.n_layer=2 \
    --set run.dir=$layout > $layout.log 2>&1 || { cat $layout.log; fail "$layout 2 with the update on the device"; }
  grep -q "update: on the device" $layout.log || { cat $layout.log; fail "$layout: no 'update: on the device' line"; }
  same_losses host2 $layout 1e-5
done
# 5. CUDA graphs of the step (system.cuda_graphs): on a CPU "on" is a one-line error saying why, "auto" is off
expect_error 'cuda_graphs = "on" is not possible here: not a CUDA device' \
  "$SLM" train "${COMMON[@]}" --set system.cuda_graphs=on --set run.dir=graphs
"$SLM" train "${COMMON[@]}" "${OFF[@]}" --set system.cuda_graphs=auto --set run.dir=graphs_auto 2> auto.log \
  || { cat auto.log; fail "cuda_graphs = auto on a CPU"; }
! grep -q "^cuda graphs" auto.log || fail "a cuda graphs line on a CPU: $(grep "^cuda graphs" auto.log)"
same_losses host graphs_auto 1e-12  # the same arithmetic: equal
expect_error 'system: cuda_graphs "yes" is not one of on, off, auto' \
  "$SLM" train "${COMMON[@]}" --set system.cuda_graphs=yes --set run.dir=graphs
expect_error 'system: cuda_kernels "own" is not one of auto, off' \
  "$SLM" train "${COMMON[@]}" --set system.cuda_kernels=own --set run.dir=kernels
echo "device update ok"
