# tests/e2e/profile.sh: log.profile_steps (train/profiler.h, report/profile.h) on the CPU:
#  1. a profiled run trains the same model (the same losses, bit for bit) as an unprofiled one, and
#     says in one log line what steps 4-5 spent their time on; RUN/profile/rank_0.json is a Chrome
#     trace of the operators; `slm report RUN` and `slm report TRACE` print its table; the
#     profiler's own log lines (Kineto's, 2.x) stay quiet;
#  2. a session shorter than the window profiles what it has (steps 1-2), and a resumed session
#     profiles its own steps (the three after its first left out);
#  3. 2 ranks (data parallel): one trace per rank, side by side in `slm report`;
#  4. PyTorch's trace of the same step (bench/compare/train_reference.py, PROFILE=, with SLM_PYTHON)
#     is summed up by `slm report` the same way, and set beside slm's;
#  5. a negative profile_steps, a file that is not a trace, two run folders: one-line errors.
source "$(dirname "$0")/lib.sh"
REFERENCE=$(cd "$(dirname "$0")/../../bench/compare" && pwd)/train_reference.py
cd "$WORK"
gen_corpus 2000 > gen.txt
make_dataset gen.txt 300 0.05
losses() { python3 -c 'import json,sys; print([json.loads(l)["loss"] for l in open(sys.argv[1]) if "\"loss\"" in l])' "$1"; }

# 1. the same losses; the log line, the trace and the tables
"$SLM" train "${SMALL_RUN[@]}" --set run.dir=plain 2> plain.log || { cat plain.log; fail "plain run"; }
"$SLM" train "${SMALL_RUN[@]}" --set run.dir=prof --set log.profile_steps=2 2> prof.log || { cat prof.log; fail "profiled run"; }
[ "$(losses plain/metrics.jsonl)" = "$(losses prof/metrics.jsonl)" ] || fail "profiling changed the losses"
# The line names the three largest operators by self time; which one leads is the scheduler's to say
# (a preempted autograd node, e.g. AddmmBackward0, can), so the test asks for an ATen operator among them.
grep -q "^profile: slm rank 0, steps 4-5: 2 steps, [0-9.]* ms per step (no GPU kernels recorded.*); [^ ]* [0-9.]*%" \
  prof.log && grep "^profile: " prof.log | grep -q "[;,] aten::[a-z_]* [0-9.]*%" || fail "no profile line: $(cat prof.log)"
! grep -q "^USDT:\|^STAGE:\|^ERROR:" prof.log || fail "the profiler's own log lines: $(grep -m3 "^[A-Z]*:" prof.log)"
python3 - <<'PY' || fail "the trace"
import json
t = json.load(open("prof/profile/rank_0.json"))
ops = [e for e in t["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
names = {e["name"] for e in ops}
assert t["slm_profile"] == {"source": "slm rank 0, steps 4-5", "steps": 2}, t["slm_profile"]
assert {"aten::mm", "aten::native_layer_norm"} <= names, sorted(names)[:20]
assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in ops)
print(len(ops), "operators, e.g.", sorted(names)[:5])
PY
"$SLM" report prof > report.txt || fail "slm report RUN"
grep -q "^profile prof/profile/rank_0.json" report.txt && grep -q "^| operator (self time) | ms per step |" report.txt \
  || fail "no profile table in slm report: $(cat report.txt)"
"$SLM" report prof/profile/rank_0.json > trace.txt || fail "slm report TRACE"
grep -q "^slm rank 0, steps 4-5: 2 steps" trace.txt && grep -q "^| aten::mm | " trace.txt || fail "$(cat trace.txt)"

# 2. short and resumed sessions
"$SLM" train "${SMALL_RUN[@]}" --set run.dir=short --set log.profile_steps=5 --stop-at 2 2> short.log || fail "short"
grep -q "^profile: slm rank 0, steps 1-2: 2 steps" short.log || fail "short session: $(grep profile short.log)"
"$SLM" train "${SMALL_RUN[@]}" --set run.dir=short --set log.profile_steps=2 --resume 2> resumed.log || fail "resumed"
grep -q "^profile: slm rank 0, steps 6-7: 2 steps" resumed.log || fail "resumed session: $(grep profile resumed.log)"

# 3. a trace per rank
"$SLM" launch -n 2 -- "$SLM" train "${SMALL_RUN[@]}" --set run.dir=dp --set log.profile_steps=1 2> dp.log \
  || { cat dp.log; fail "2 ranks"; }
[ -s dp/profile/rank_0.json ] && [ -s dp/profile/rank_1.json ] || fail "a trace per rank: $(ls dp/profile)"
"$SLM" report dp > dp.txt || fail "slm report of 2 ranks"
grep -q "^| operator (self time), ms per step | slm rank 0, steps 4-4 | slm rank 1, steps 4-4 |" dp.txt \
  || fail "slm report: not both ranks side by side: $(cat dp.txt)"

# 4. PyTorch's trace
PY=${SLM_PYTHON:-}
if [ -n "$PY" ] && "$PY" -c 'import torch.profiler' 2>/dev/null; then
  PROFILE=$WORK/torch.json "$PY" "$REFERENCE" 1 32 2 32 300 8 4 2 fp32 1 \
    > /dev/null 2> torch.log || { cat torch.log; fail "train_reference.py PROFILE="; }
  "$SLM" report torch.json > torch.txt || fail "slm report of PyTorch's trace"
  grep -q "^PyTorch eager: 2 steps" torch.txt && grep -q "^| aten::mm | " torch.txt || fail "$(cat torch.txt)"
  "$SLM" report prof/profile/rank_0.json torch.json > both.txt || fail "slm report TRACE TRACE"
  grep -q "^| operator (self time), ms per step | slm rank 0, steps 4-5 | PyTorch eager |" both.txt \
    && grep -q "^| step (wall) | [0-9.]* | [0-9.]* |" both.txt || fail "side by side: $(cat both.txt)"
else
  echo "no SLM_PYTHON with torch: PyTorch's trace not read"
fi

# 5. bad input
expect_error "profile_steps" "$SLM" train "${SMALL_RUN[@]}" --set run.dir=bad --set log.profile_steps=-1
echo '{"traceEvents": 5}' > bad.json
expect_error "bad.json: not a profiler trace" "$SLM" report bad.json
expect_error "one run directory at a time" "$SLM" report prof plain
echo "profile: ok"
