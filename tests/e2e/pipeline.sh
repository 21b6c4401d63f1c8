# tests/e2e/pipeline.sh: pipeline parallelism and pipeshard train the same model as one process.
#  1. `slm plan make` / `slm plan check`: presets from flags, a hand-written heterogeneous plan
#     printed with per-rank memory, invalid plans rejected in one line.
#  2. `slm train` under: pp 2 with GPipe and 1F1B, uneven stages (1 + 3 layers), interleaved 1F1B
#     (2 ranks x 2 chunks), pp 2 x tp 2, pp 2 x tp 2 x dp 2 with ZeRO 1, and a heterogeneous plan
#     (3 stages, the middle one on tp 2, replicas with micro-batches of 3 and 1 sequences, ZeRO 2):
#     every step's loss within TOL and gradient norm within GTOL (relative) of the single-process
#     run (fp32, same global batch and seed). The metrics carry bubble and bytes per link type.
#     The heterogeneous and interleaved plans again with SLM_P2P_IN_ORDER (NCCL's message order).
#     ZeRO 3 inside the stages: pp 2 x dp 2, the heterogeneous plan with sequence parallelism,
#     interleaved in NCCL's order.
#  3. Checkpoints across plans: pp 2 stopped at step 6 and continued as one process and under the
#     heterogeneous plan; dp 2 / ZeRO 2 continued as pp 2 x tp 2; pp 2 x dp 2 / ZeRO 3 continued as
#     pp 4; a pipeline checkpoint read whole by the single-process tools gives the reference
#     logits (1e-4).
#  4. Memory cap: a model that does not fit parallel.memory_cap_gb under data parallelism is
#     refused in one line, and trains under a pipeshard plan.
#  5. One-line errors: bad plan files, batch mismatch, interleaved with M % pp != 0.
source "$(dirname "$0")/lib.sh"
DUMP=$3
TOL=1e-5
GTOL=1e-4
# launch_error "substring" N ARGS...: `slm train` on N ranks fails with exit 1, and every rank says
# so in one line containing the substring.
launch_error() {
  local want=$1 n=$2 rc=0; shift 2
  "$SLM" launch -n "$n" -- "$SLM" train "$@" > err.log 2>&1 || rc=$?
  [ "$rc" -eq 1 ] || { cat err.log; fail "expected exit 1 from $n ranks, got $rc"; }
  [ "$(grep -c "slm: error: .*$want" err.log)" -eq "$n" ] || { cat err.log; fail "not every rank said '$want'"; }
  echo "ok ($n ranks): $want"
}
cd "$WORK"
make_dataset "$(real_corpus)" 512 0.02
COMMON=(-c /dev/null --set system.precision=fp32 --set data.dir=data --set model.n_layer=4 --set model.n_head=2 --set model.n_embd=64
        --set model.block_size=64 --set batch.batch_size=16 --set batch.micro_batch=4
        --set optim.lr=3e-3 --set schedule.warmup_steps=4 --set schedule.max_steps=12
        --set eval.every=6 --set eval.batches=2 --set log.every=6 --set parallel.bucket_mb=0.1)

# 1. plans
"$SLM" plan make "${COMMON[@]}" --world 8 --pp 2 --tp 2 --schedule gpipe -o even.toml 2> even.txt
grep -q "plan: 8 ranks = 2 pipeline rank set(s) x 2 replica(s); schedule gpipe, 2 micro-batches" even.txt || fail "plan make"
grep -q "stage 1: layers 2-3 + head, tp 2, ranks per replica \[4,5\] \[6,7\]" even.txt || fail "plan make stages"
"$SLM" plan check even.toml "${COMMON[@]}" --world 8 > /dev/null 2>&1 || fail "plan check of plan make's output"
cat > het.toml <<'TOML'
# 3 stages; the middle one on two tensor-parallel ranks per replica; replica 1 is a smaller GPU
schedule = "1f1b"
micro_batches = 4
micro_batch = [3, 1]
zero = 2
[[stage]]
layers = [0, 1]
ranks = [0, 1]
[[stage]]
layers = [1, 3]
tp = 2
ranks = [2, 3, 4, 5]
[[stage]]
layers = [3, 4]
ranks = [6, 7]
TOML
"$SLM" plan check het.toml "${COMMON[@]}" --world 8 > check.out 2> check.txt || { cat check.txt; fail "plan check"; }
grep -q "valid for 8 ranks" check.out || fail "plan check output"
grep -q "rank 7: ~" check.txt || fail "per-rank memory"
sed 's/ranks = \[6, 7\]/ranks = [6, 6]/' het.toml > dup.toml
expect_error "plan: rank 6 is in stage 2 and stage 2" "$SLM" plan check dup.toml "${COMMON[@]}" --world 8
sed 's/layers = \[3, 4\]/layers = [3, 5]/' het.toml > long.toml
expect_error "plan: the stages cover 5 layers, the model has 4" "$SLM" plan check long.toml "${COMMON[@]}" --world 8
expect_error "plan: stage 2: rank 7 is outside 0..6" "$SLM" plan check het.toml "${COMMON[@]}" --world 7
expect_error "p.toml: no such file" "$SLM" plan check p.toml "${COMMON[@]}" --world 2

# 2. training under each plan against one process
"$SLM" train "${COMMON[@]}" --set run.dir=ref 2> ref.log || { cat ref.log; fail "single-process run"; }
close_to_ref() {  # RUN: same losses (TOL) and gradient norms (GTOL relative) as ref
  python3 - ref "$1" "$TOL" "$GTOL" <<'PY' || fail "$1: differs from the single-process run"
import json, sys
ref, run, tol, gtol = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
rows = lambda d: [json.loads(l) for l in open(d + "/metrics.jsonl") if '"loss"' in l]
a, b = rows(ref), rows(run)
d = max(abs(x["loss"] - y["loss"]) for x, y in zip(a, b))
g = max(abs(x["grad_norm"] - y["grad_norm"]) / x["grad_norm"] for x, y in zip(a, b))
last = b[-1]
print(f"{run}: {len(b)} steps, max |loss diff| {d:.1e}, max relative grad-norm diff {g:.1e}, bubble "
      f"{last['bubble']:.2f} (theory {last['bubble_theory']:.2f}), bytes/step pp {last['bytes_pp']:.0f} "
      f"tp {last['bytes_tp']:.0f} dp {last['bytes_dp']:.0f}")
assert len(a) == len(b) == 12 and d < tol and g < gtol
assert len(last["peak_mem_per_rank"]) >= 1 and min(last["peak_mem_per_rank"]) > 0
PY
}
train_as() {  # NAME RANKS ARGS...: train under a layout, then compare
  local name=$1 n=$2; shift 2
  "$SLM" launch -n "$n" -- "$SLM" train "${COMMON[@]}" --set run.dir="$name" "$@" > "$name.log" 2>&1 \
    || { cat "$name.log"; fail "$name"; }
  close_to_ref "$name"
}
train_as gpipe 2 --pp 2 --schedule gpipe
train_as 1f1b 2 --pp 2
python3 -c "
import json; r = [json.loads(l) for l in open('1f1b/metrics.jsonl') if '\"loss\"' in l][-1]
assert r['bytes_pp'] > 0 and r['bytes_tp'] == 0 and abs(r['bubble_theory'] - 0.2) < 1e-9, r" || fail "pp metrics"
printf 'micro_batch = [4]\nmicro_batches = 4\nschedule = "1f1b"\n[[stage]]\nlayers = [0, 1]\nranks = [0]\n[[stage]]\nlayers = [1, 4]\nranks = [1]\n' > uneven.toml
train_as uneven 2 --set parallel.plan=uneven.toml
train_as interleaved 2 --pp 2 --virtual-stages 2
grep -q "schedule interleaved" interleaved.log || fail "interleaved plan line"
train_as pp2tp2 4 --pp 2 --tp 2 --set log.trace_steps=3  # traced: the same losses
# log.trace_steps: each rank's timeline of steps 2-4 (4 micro-batches: 4 forwards and 4 backwards
# a step, tp all-reduces inside them), and `slm report`'s table and merged trace.
python3 - <<'PY' || fail "pp2tp2: trace files"
import json
for r in range(4):
    ev = json.load(open(f"pp2tp2/trace/rank_{r}.json"))["traceEvents"]
    x = [e for e in ev if e["ph"] == "X"]
    steps = sorted(e["args"]["step"] for e in x if e["tid"] == 2)
    assert steps == [2, 3, 4], steps
    assert sum(e["name"].startswith("F ") for e in x) == 12 and sum(e["name"].startswith("B ") for e in x) == 12, r
    assert any(e["name"] == "tp all-reduce" and e["tid"] == 3 for e in x), r
    assert any(e["name"] == "optimizer" for e in x) and all(e["dur"] >= 0 for e in x), r
    assert any(e["name"] == "process_name" and e["args"]["name"].startswith(f"rank {r}: pipeline rank {r // 2}") for e in ev)
PY
"$SLM" report pp2tp2 > report.txt || fail "slm report of a traced run"
[ "$(grep -c '^| rank [0-3]: pipeline rank' report.txt)" -eq 4 ] && grep -q "timeline of the traced steps" report.txt \
  || { cat report.txt; fail "slm report: trace table"; }
python3 -c "
import json; ev = json.load(open('pp2tp2/report/trace.json'))['traceEvents']
assert {e['pid'] for e in ev} == {0, 1, 2, 3}" || fail "report/trace.json"
# Without gnuplot: the tables, and why there are no plots.
PATH=/nonexistent "$SLM" report pp2tp2 > noplot.txt || fail "slm report without gnuplot"
grep -q "plots: none (gnuplot not found" noplot.txt && grep -q "timeline of the traced steps" noplot.txt \
  || { cat noplot.txt; fail "slm report without gnuplot: output"; }
echo "not json" > pp2tp2/trace/rank_9.json
expect_error "rank_9.json: not a trace written by \`slm train\`" "$SLM" report pp2tp2
train_as pp2tp2dp2 8 --pp 2 --tp 2 --zero 1
train_as het 8 --set parallel.plan=het.toml
# Sequence parallelism inside the tp stages (the activations between stages stay whole)
train_as pp2tp2sp 4 --pp 2 --tp 2 --set parallel.sequence_parallel=true
train_as het_sp 8 --set parallel.plan=het.toml --set parallel.sequence_parallel=true
# NCCL pairs messages by the order both sides post them, not by tag: the same plans in that order
# (the head's gradient received when needed, the gradient norm exchanged after the schedule).
SLM_P2P_IN_ORDER=1 train_as het_in_order 8 --set parallel.plan=het.toml
SLM_P2P_IN_ORDER=1 train_as interleaved_in_order 2 --pp 2 --virtual-stages 2
# ZeRO 3 inside the stages: each stage's dp group shards the stage's blocks, embeddings and final
# LayerNorm (the last stage's tied head stays whole).
train_as pp2dp2z3 4 --pp 2 --zero 3
sed 's/^zero = 2/zero = 3/' het.toml > het_z3.toml
train_as het_z3 8 --set parallel.plan=het_z3.toml --set parallel.sequence_parallel=true
grep -q "ZeRO 3" het_z3.log || fail "het_z3: not under ZeRO 3"
SLM_P2P_IN_ORDER=1 train_as interleaved_z3_in_order 4 --pp 2 --virtual-stages 2 --zero 3
python3 -c "
import json; r = [json.loads(l) for l in open('het/metrics.jsonl') if '\"loss\"' in l][-1]
assert r['bytes_pp'] > 0 and r['bytes_tp'] > 0 and r['bytes_dp'] > 0 and len(r['peak_mem_per_rank']) == 8, r" \
  || fail "pipeshard metrics"

# 3. checkpoints across plans
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" --pp 2 --set run.dir=rs --stop-at 6 > rs.log 2>&1 \
  || { cat rs.log; fail "pp 2 stop at 6"; }
cp -r rs rs1
"$SLM" train "${COMMON[@]}" --set run.dir=rs --resume 2> rs_b.log || { cat rs_b.log; fail "resume as one process"; }
close_to_ref rs
"$SLM" launch -n 8 -- "$SLM" train "${COMMON[@]}" --set parallel.plan=het.toml --set run.dir=rs1 --resume \
  > rs1_b.log 2>&1 || { cat rs1_b.log; fail "resume pp 2 under the heterogeneous plan"; }
close_to_ref rs1
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" --zero 2 --set run.dir=rs2 --stop-at 6 > rs2.log 2>&1 \
  || { cat rs2.log; fail "dp 2 stop at 6"; }
"$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" --pp 2 --tp 2 --set run.dir=rs2 --resume > rs2_b.log 2>&1 \
  || { cat rs2_b.log; fail "resume dp 2 as pp 2 x tp 2"; }
close_to_ref rs2
"$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" --pp 2 --zero 3 --set run.dir=rs3 --stop-at 6 > rs3.log 2>&1 \
  || { cat rs3.log; fail "pp 2 x dp 2 ZeRO 3 stop at 6"; }
"$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" --pp 4 --set run.dir=rs3 --resume > rs3_b.log 2>&1 \
  || { cat rs3_b.log; fail "resume pp 2 x dp 2 ZeRO 3 as pp 4"; }
close_to_ref rs3
same_logits "$DUMP" ref het pipeline

# 4. memory cap: 8 layers x 256 channels need ~0.11 GiB per rank under DP; pp 4 needs ~0.04
BIG=(--set model.n_layer=8 --set model.n_embd=256 --set model.n_head=4 --set parallel.memory_cap_gb=0.07
     --set schedule.max_steps=2 --set eval.every=0)
launch_error "> its 0.07 GiB (parallel.memory_cap_gb); use more pipeline stages" 4 "${COMMON[@]}" "${BIG[@]}" --set run.dir=capdp
"$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" "${BIG[@]}" --pp 4 --set run.dir=cappp > cappp.log 2>&1 \
  || { cat cappp.log; fail "pipeshard under the memory cap"; }
grep -q "checkpoint cappp/checkpoints/step_00000002" cappp.log || fail "pipeshard under the memory cap did not train"

# 5. errors
launch_error "plan: micro_batches(4) x sum of micro_batch \[3, 1\] = 16 sequences per step, but batch.batch_size is 32" \
  2 "${COMMON[@]}" --set parallel.plan=het.toml --set batch.batch_size=32
launch_error "parallel: interleaved needs micro_batches (3) to be a multiple of pp (2)" \
  2 "${COMMON[@]}" --pp 2 --virtual-stages 2 --micro-batches 3 --set batch.batch_size=12
expect_error "parallel: give either a plan file (parallel.plan) or dp/tp/pp" \
  "$SLM" train "${COMMON[@]}" --pp 2 --set parallel.plan=het.toml
echo "pipeline parallelism and pipeshard match the single-process run"
