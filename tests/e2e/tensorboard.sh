# tests/e2e/tensorboard.sh: `slm train` writes its curves as a TensorBoard event file in the run
# folder (log.tensorboard, on by default), read back here by TensorBoard's own reader (the
# `tensorboard` package of SLM_PYTHON, the venv scripts/setup.sh makes; skipped without it):
#  1. every metrics.jsonl number of every step is a scalar of that step (train and validation loss,
#     lr, grad norm, tokens/s, MFU, $ and tokens per $, communication bytes), values equal;
#  2. the file is flushed as the run goes: a run stopped at step 6 has steps 1..6 in it, and the
#     resumed run adds a second file with steps 7..12;
#  3. log.tensorboard = false writes none.
source "$(dirname "$0")/lib.sh"
PY=${SLM_PYTHON:-}
[ -n "$PY" ] && "$PY" -c 'import tensorboard' 2>/dev/null || skip "SLM_PYTHON has no tensorboard (scripts/setup.sh --venv makes one)"
cd "$WORK"
gen_corpus 1000 > gen.txt
make_dataset gen.txt 300 0.05
COMMON=(-c /dev/null --set system.precision=fp32 --set system.threads=2 --set data.dir=data --set model.n_layer=1
        --set model.n_head=2 --set model.n_embd=32 --set model.block_size=32 --set batch.batch_size=8
        --set batch.micro_batch=8 --set eval.every=4 --set eval.batches=2 --set schedule.max_steps=12
        --set schedule.warmup_steps=2 --set log.every=1 --set cost.price_per_hour=1.5)
"$SLM" train "${COMMON[@]}" --set run.dir=run --stop-at 6 > a.log 2>&1 || { cat a.log; fail "training to step 6"; }
"$PY" - run 6 <<'PY' || fail "event file after step 6"
import glob, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
files = glob.glob(sys.argv[1] + "/events.out.tfevents.*")
assert len(files) == 1, files
ea = EventAccumulator(files[0], size_guidance={"scalars": 0})
ea.Reload()
steps = [e.step for e in ea.Scalars("loss/train")]
assert steps == list(range(1, int(sys.argv[2]) + 1)), steps
PY
"$SLM" train "${COMMON[@]}" --set run.dir=run --resume > b.log 2>&1 || { cat b.log; fail "resuming"; }
"$PY" - run <<'PY' || fail "event files against metrics.jsonl"
import glob, json, math, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
run = sys.argv[1]
files = sorted(glob.glob(run + "/events.out.tfevents.*"))
assert len(files) == 2, files  # one per session
scalars = {}
for f in files:
    ea = EventAccumulator(f, size_guidance={"scalars": 0})
    ea.Reload()
    for tag in ea.Tags()["scalars"]:
        for e in ea.Scalars(tag):
            scalars[(tag, e.step)] = e.value
want = {"loss": "loss/train", "val_loss": "loss/val", "lr": "optim/lr", "grad_norm": "optim/grad_norm",
        "tokens_per_s": "speed/tokens_per_s", "mfu": "speed/mfu", "cost_usd": "cost/usd",
        "tokens_per_usd": "cost/tokens_per_usd", "bytes_dp": "comm/bytes_dp", "step_s": "speed/step_s"}
seen = set()
for line in open(run + "/metrics.jsonl"):
    r = json.loads(line)
    for field, tag in want.items():
        if field not in r or not isinstance(r[field], (int, float)):
            continue
        got = scalars[(tag, r["step"])]
        assert math.isclose(got, r[field], rel_tol=1e-6, abs_tol=1e-30), (tag, r["step"], got, r[field])
        seen.add(tag)
assert seen == set(want.values()), sorted(set(want.values()) - seen)
steps = sorted(s for (t, s) in scalars if t == "loss/train")
assert steps == list(range(1, 13)), steps
print(f"{len(scalars)} scalars in {len(files)} event files equal metrics.jsonl ({len(seen)} curves checked)")
PY
"$SLM" train "${COMMON[@]}" --set run.dir=off --set log.tensorboard=false --set schedule.max_steps=2 > c.log 2>&1 \
  || { cat c.log; fail "log.tensorboard = false"; }
[ -z "$(ls off | grep tfevents)" ] || fail "log.tensorboard = false wrote an event file"
echo "tensorboard: all passed"
