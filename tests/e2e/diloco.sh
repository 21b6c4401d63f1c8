# tests/e2e/diloco.sh: DiLoCo across sites ([sync] mode = "diloco", parallel/diloco.h) on CPU with
# Gloo over loopback, fp32, global batch 16, `slm launch`:
#  - exactness: with inner_steps 1, outer lr 1, momentum 0 and a linear inner optimizer (SGD,
#    no clipping), DiLoCo is data parallelism: 2 sites x 1 rank, 2 sites x 2 ranks, and sites
#    with pp 2, tp 2, ZeRO 3, dp 2 x tp 2 or pp 2 x dp 2 with ZeRO 3 inside each reproduce the
#    single-process losses (TOL) and final model (TOL_LOGITS); with clipping, pp 2 inside the
#    sites trains what plain sites do (each site clips by its own norm); one site with AdamW and inner_steps 3 is ordinary training, gradient norms too;
#  - compression: bf16 and int8 send 1/2 and ~1/4 of fp32's cross-site bytes, and end within
#    LOSS_TOL of the uncompressed run's loss; 2 fragments send half the bytes per sync, at
#    staggered steps;
#  - sync by time with fixed speeds: equal speeds are plain DiLoCo bit for bit; a site twice as
#    fast takes twice the inner steps (1.5x the tokens per step, 2 x 1 and 2 x 2 ranks) and
#    resumes exactly mid-round (measured speeds: e2e.testbed, with a slower site);
#  - the planner: `slm plan auto` on 2 sites joined by 10 Mbit/s picks DiLoCo only with
#    --allow-lossy, and training with its plan file runs DiLoCo;
#  - checkpoints: stopped at step 7 with a sync in flight (fragments 2, delay 2, int8), resumed:
#    bit-identical losses; SIGTERM stops every rank after the same step (the agreement is one
#    step late under DiLoCo), saves, exits 143; a DiLoCo checkpoint resumes as ordinary training and the reverse;
#    on another number of sites (2 -> 4 and 2 -> 1: exact DiLoCo still trains the single-process
#    model; 2 x 2 -> 1 x 2 with syncs in flight finishes), not with other ranks per site (one line);
#  - refusals in one line: inner_steps 0, fragments not dividing n_layer, no dist.ranks_per_site,
#    sites of unequal replica counts, a site larger than the job, parallel.plan = auto.
# Tolerances: sums in another order only (measured ~1e-7 on the loss).
source "$(dirname "$0")/lib.sh"
DUMP=$3
TOL=1e-5
TOL_LOGITS=1e-4
LOSS_TOL=0.02
cd "$WORK"
make_dataset "$(real_corpus)" 512 0.02
COMMON=(-c /dev/null --set system.precision=fp32 --set data.dir=data "${TINY_MODEL[@]}"
        --set batch.batch_size=16 --set batch.micro_batch=2
        --set schedule.warmup_steps=4 --set schedule.max_steps=12 --set eval.every=0 --set log.every=4
        --set system.threads=1)
SGD=(--set optim.name=sgd --set optim.lr=3e-2 --set optim.grad_clip=0)
EXACT=(--set sync.mode=diloco --set sync.inner_steps=1 --set sync.outer_lr=1 --set sync.outer_momentum=0)
train() {  # train RANKS RUN ARGS...: one run (its log in RUN.log)
  local n=$1 run=$2; shift 2
  "$SLM" launch -n "$n" -- "$SLM" train "${COMMON[@]}" --set run.dir="$run" "$@" > "$run.log" 2>&1 ||
    { cat "$run.log"; fail "$run"; }
}
same_loss_only() {  # REF RUN TOL: every step's loss (a site's gradient norm is its own)
  python3 - "$@" <<'PY' || fail "$2: losses differ from $1"
import json, sys
rows = lambda d: [json.loads(l) for l in open(d + "/metrics.jsonl") if '"loss"' in l]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
d = max(abs(x["loss"] - y["loss"]) for x, y in zip(a, b))
print(f"{sys.argv[2]}: {len(b)} steps, max |loss - {sys.argv[1]}| = {d:.2e}")
assert len(a) == len(b) and d < float(sys.argv[3])
PY
}

echo "== exactness"
"$SLM" train "${COMMON[@]}" "${SGD[@]}" --set run.dir=ref 2> ref.log || { cat ref.log; fail "single process"; }
train 2 s2x1 "${SGD[@]}" "${EXACT[@]}" --set dist.ranks_per_site=1
grep -q "sync: DiLoCo across 2 site(s) of 1 data-parallel rank(s)" s2x1.log || fail "no DiLoCo line"
train 4 s2x2 "${SGD[@]}" "${EXACT[@]}" --set dist.ranks_per_site=2
grep -q "DiLoCo across 2 site(s) of 2 data-parallel rank(s)" s2x2.log || fail "2 x 2 layout"
train 4 s2pp "${SGD[@]}" "${EXACT[@]}" --set dist.ranks_per_site=2 --set parallel.pp=2
train 4 s2tp "${SGD[@]}" "${EXACT[@]}" --set dist.ranks_per_site=2 --set parallel.tp=2
train 4 s2z3 "${SGD[@]}" "${EXACT[@]}" --set dist.ranks_per_site=2 --set parallel.zero=3
train 8 s2tpz3 "${SGD[@]}" "${EXACT[@]}" --set dist.ranks_per_site=4 --set parallel.tp=2 --set parallel.zero=3
train 8 s2ppz3 "${SGD[@]}" "${EXACT[@]}" --set dist.ranks_per_site=4 --set parallel.pp=2 --set parallel.zero=3
for r in s2x1 s2x2 s2pp s2tp s2z3 s2tpz3 s2ppz3; do
  same_loss_only ref $r $TOL
  same_logits "$DUMP" ref $r "final model"
done
# Each site clips by its own gradient norm, also when its replica is a pipeline (the norm sums
# the site's stages only): pp 2 inside 2 sites trains what 2 one-rank sites do (same data per site).
CLIP=(--set optim.name=sgd --set optim.lr=3e-2 --set optim.grad_clip=0.2)
train 2 c2x1 "${CLIP[@]}" "${EXACT[@]}" --set dist.ranks_per_site=1
train 4 c2pp "${CLIP[@]}" "${EXACT[@]}" --set dist.ranks_per_site=2 --set parallel.pp=2
same_losses c2x1 c2pp $TOL
python3 -c "
import json
g = [json.loads(l)['grad_norm'] for l in open('c2x1/metrics.jsonl') if '\"loss\"' in l]
assert min(g) > 0.2, g" || fail "clipping was not exercised"
train 2 dp2 --set optim.lr=3e-3
train 2 one_site --set optim.lr=3e-3 --set sync.mode=diloco --set dist.ranks_per_site=2 --set sync.inner_steps=3 \
  --set sync.outer_lr=1 --set sync.outer_momentum=0
same_losses dp2 one_site $TOL

# ZeRO 3 inside the sites (each rank syncs its own shard; no all-gather after a merge) trains what
# ZeRO 0 does, with AdamW, outer momentum and 2 fragments in flight; with int8 it resumes bit-identically.
Z=(--set optim.lr=3e-3 --set sync.mode=diloco --set dist.ranks_per_site=2 --set sync.inner_steps=4
   --set sync.fragments=2 --set sync.delay=1)
train 4 z0 "${Z[@]}"
train 4 z3 "${Z[@]}" --set parallel.zero=3
same_loss_only z0 z3 $TOL
same_logits "$DUMP" z0 z3 "ZeRO 3 inside DiLoCo sites"
train 4 z3int8 "${Z[@]}" --set parallel.zero=3 --set sync.compress=int8
train 4 z3parts "${Z[@]}" --set parallel.zero=3 --set sync.compress=int8 --stop-at 7
train 4 z3parts "${Z[@]}" --set parallel.zero=3 --set sync.compress=int8 --resume
python3 - <<'PY' || fail "ZeRO 3 inside the sites: resume is not exact"
import json
rows = lambda d: [json.loads(l)["loss"] for l in open(d + "/metrics.jsonl") if '"loss"' in l]
assert rows("z3int8") == rows("z3parts") and len(rows("z3int8")) == 12, (rows("z3int8"), rows("z3parts"))
print("ZeRO 3 inside the sites, int8: resumed at step 7, identical losses")
PY

echo "== compression and fragments"
DL=(--set optim.lr=3e-3 --set sync.mode=diloco --set dist.ranks_per_site=1 --set sync.inner_steps=4)
train 2 fp32 "${DL[@]}"
train 2 bf16 "${DL[@]}" --set sync.compress=bf16
train 2 int8 "${DL[@]}" --set sync.compress=int8
train 2 frag2 "${DL[@]}" --set sync.fragments=2
# pp 2 with 2 fragments: each stage holds one fragment's layers only (the other is empty there).
train 4 frag2pp --set optim.lr=3e-3 --set sync.mode=diloco --set dist.ranks_per_site=2 --set sync.inner_steps=4 \
  --set parallel.pp=2 --set sync.fragments=2 --set sync.compress=int8
python3 - "$LOSS_TOL" <<'PY' || fail "compression or fragments"
import json, sys
rows = lambda d: [json.loads(l) for l in open(d + "/metrics.jsonl") if '"loss"' in l]
syncs = lambda d: {r["step"]: r["bytes_outer"] for r in rows(d) if r["bytes_outer"] > 0}
f, b, i, g = syncs("fp32"), syncs("bf16"), syncs("int8"), syncs("frag2")
print("bytes per sync: fp32", f, "bf16", b, "int8", i, "2 fragments", g)
assert sorted(f) == [4, 8, 12] and sorted(b) == sorted(f) and sorted(i) == sorted(f)
inner = [s for s in f if s < 12]  # step 12, the last, also carries the final sync's 32-byte checksum
assert all(b[s] == f[s] / 2 for s in inner)
assert all(0.25 < i[s] / f[s] < 0.26 for s in inner)            # 1 byte + a 4-byte scale per 1024
assert sorted(g) == [4, 6, 8, 10, 12] and max(g[s] for s in g if s < 12) < 0.8 * max(f.values())
assert g[12] == f[12]  # the final outer sync takes both fragments at the last step
for run in ("bf16", "int8", "frag2"):
    d = abs(rows(run)[-1]["loss"] - rows("fp32")[-1]["loss"])
    print(f"{run}: final loss {rows(run)[-1]['loss']:.4f} vs fp32 {rows('fp32')[-1]['loss']:.4f}")
    assert d < float(sys.argv[1]) or run == "frag2", run
PY

echo "== sync by time"
# Fixed relative speeds make it deterministic: equal speeds are plain DiLoCo, bit for bit; site 1
# twice as fast takes 8 inner steps per 4 (2 per step: 1.5x the tokens per step), on 2 x 1 and on
# 2 sites x 2 ranks, and resumes exactly mid-round.
train 2 t11 "${DL[@]}" --set sync.by=time --set sync.site_speeds=1,1
train 2 t12 "${DL[@]}" --set sync.by=time --set sync.site_speeds=1,2
train 2 t12p "${DL[@]}" --set sync.by=time --set sync.site_speeds=1,2 --stop-at 6
train 2 t12p "${DL[@]}" --set sync.by=time --set sync.site_speeds=1,2 --resume
train 4 t12x2 --set optim.lr=3e-3 --set sync.mode=diloco --set dist.ranks_per_site=2 --set sync.inner_steps=4 \
  --set sync.by=time --set sync.site_speeds=1,2
grep -q "by time: faster sites take more inner steps per sync (relative speeds 1,2, at most 4x), weighted by tokens" t12.log \
  || { cat t12.log; fail "no by-time line"; }
python3 - <<'PY' || fail "sync by time"
import json
rows = lambda d: [json.loads(l) for l in open(d + "/metrics.jsonl") if '"loss"' in l]
f, a, b, p, x = rows("fp32"), rows("t11"), rows("t12"), rows("t12p"), rows("t12x2")
assert [r["loss"] for r in f] == [r["loss"] for r in a], "equal speeds differ from plain DiLoCo"
assert all(r["tokens"] * 3 == s["tokens"] * 2 for r, s in zip(f, b)), "site 1 did not take twice the steps"
assert all(r["tokens"] == s["tokens"] for r, s in zip(b, x))
assert [r["loss"] for r in b] == [r["loss"] for r in p] and len(p) == 12, "resume mid-round is not exact"
print(f"by time: tokens per step {f[0]['tokens']} -> {b[0]['tokens']}; final loss {f[-1]['loss']:.4f} -> "
      f"{b[-1]['loss']:.4f} (2 x 2 ranks: {x[-1]['loss']:.4f}); resumed at step 6: identical")
PY
# Whether the extra tokens lower the loss depends on the text: after these 12 steps the validation
# loss fell on tinyshakespeare and rose on the fortunes corpus (5.39 -> 5.61), so it is printed,
# not asserted; bench/studies/diloco_by_time.sh measures it over 100 steps (docs/benchmarks.md).
val() { "$SLM" eval "$1" --batches 8 --micro-batch 4 | sed -n 's/.*loss \([0-9.]*\),.*/\1/p'; }
echo "by time: validation loss $(val fp32) -> $(val t12)"

echo "== checkpoints"
ST=(--set optim.lr=3e-3 --set sync.mode=diloco --set dist.ranks_per_site=2 --set sync.inner_steps=6
    --set sync.fragments=2 --set sync.delay=2 --set sync.compress=int8 --set schedule.max_steps=16)
train 4 whole "${ST[@]}"
grep -q "\[0\] sync: final outer sync at step 16: the 2 sites hold one model" whole.log ||
  { cat whole.log; fail "no final outer sync (the sites would end with different models)"; }
train 4 parts "${ST[@]}" --stop-at 7
cp -r parts resite && cp -r parts relayout
ls parts/checkpoints/step_00000007 | grep -q "^site1_shard_00000.pt" || fail "site 1's model not saved"
[ "$(ls parts/checkpoints/step_00000007 | grep -c '^outer_')" -eq 4 ] || fail "4 outer state files expected"
train 4 parts "${ST[@]}" --resume
grep -q "resumed from parts/checkpoints/step_00000007" parts.log || fail "did not resume"
python3 - <<'PY' || fail "resume is not exact"
import json
rows = lambda d: [json.loads(l)["loss"] for l in open(d + "/metrics.jsonl") if '"loss"' in l]
a, b = rows("whole"), rows("parts")
print("resumed:", len(a), "steps, identical:", a == b)
assert len(a) == len(b) == 16 and a == b
PY
# SIGTERM: the stop request is agreed one step late under DiLoCo; every rank still stops after the
# same step, saves and exits 143, with every step's metrics written.
"$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" "${ST[@]}" --set schedule.max_steps=400 --set log.every=1 \
  --set run.dir=term > term.log 2>&1 &
launcher=$!
for _ in $(seq 150); do grep -q "step 3/" term.log 2>/dev/null && break; sleep 0.2; done
kill -TERM $launcher
rc=0; wait $launcher || rc=$?
[ "$rc" -eq 143 ] || { cat term.log; fail "exit $rc after SIGTERM, want 143"; }
stopped=$(grep -o "\[0\] stopped by signal at step [0-9]*" term.log | grep -o "[0-9]*$")
[ -n "$stopped" ] && [ -d "term/checkpoints/step_$(printf %08d "$stopped")" ] || { cat term.log; fail "no checkpoint at the stop"; }
[ "$(grep -c '"loss"' term/metrics.jsonl)" -eq "$stopped" ] || fail "metrics lack the last steps before the stop"
cp -r parts as_step
train 4 as_step --set optim.lr=3e-3 --set schedule.max_steps=20 --resume
grep -q "resumed from as_step/checkpoints/step_00000016 at step 16" as_step.log || fail "DiLoCo -> ordinary"
cp -r dp2 as_diloco
train 2 as_diloco --set optim.lr=3e-3 --set schedule.max_steps=16 --set sync.mode=diloco \
  --set dist.ranks_per_site=1 --set sync.inner_steps=2 --resume
grep -q "resumed from as_diloco/checkpoints/step_00000012 at step 12" as_diloco.log || fail "ordinary -> DiLoCo"
# Another number of sites (an elastic job that lost or regained a site): exact DiLoCo stopped at
# step 5 on 2 sites x 1 rank goes on on 4 sites (the new ones start from site 0's model and outer
# state) and on 1: both still train the single-process model.
train 2 regrow "${SGD[@]}" "${EXACT[@]}" --set dist.ranks_per_site=1 --stop-at 5
cp -r regrow reshrink
train 4 regrow "${SGD[@]}" "${EXACT[@]}" --set dist.ranks_per_site=1 --resume
grep -q "sync: the checkpoint has 2 site(s), this run 4: sites 2-3 start from site 0's model" regrow.log \
  || { cat regrow.log; fail "2 -> 4 sites"; }
train 1 reshrink "${SGD[@]}" "${EXACT[@]}" --set dist.ranks_per_site=1 --resume
grep -q "sync: the checkpoint has 2 site(s), this run 1: the models of site 1 are left out" reshrink.log \
  || { cat reshrink.log; fail "2 -> 1 site"; }
for r in regrow reshrink; do
  same_loss_only ref $r $TOL
  same_logits "$DUMP" ref $r "final model after another number of sites"
done
# ... with syncs in flight and int8 error feedback (the step-7 checkpoint of 2 sites x 2): on 1
# site of 2 ranks the run finishes; another layout inside the sites is refused in one line.
train 2 resite "${ST[@]}" --resume
grep -q "resumed from resite/checkpoints/step_00000007" resite.log && grep -q "this run 1: the models of site 1" resite.log \
  && [ "$(grep -c '"loss"' resite/metrics.jsonl)" -eq 16 ] || { cat resite.log; fail "2 sites -> 1 with syncs in flight"; }
"$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" "${ST[@]}" --set dist.ranks_per_site=1 --set run.dir=relayout --resume \
  > relayout.log 2>&1 && fail "2 ranks per site -> 1 was not refused"
grep -q "slm: error: sync: the checkpoint's outer state has [0-9]* values, this rank holds [0-9]* (resume a DiLoCo run with the same ranks per site" relayout.log \
  || { cat relayout.log; fail "2 ranks per site -> 1: no one-line refusal"; }

echo "== the planner weighs DiLoCo (only with --allow-lossy)"
two_sites 1 50 10 > slow.toml
"$SLM" launch -n 2 -- "$SLM" profile "${COMMON[@]}" -o profile.json > prof.log 2>&1 || { cat prof.log; fail "profile"; }
"$SLM" plan auto "${COMMON[@]}" --set sync.inner_steps=4 --cluster slow.toml --profile profile.json --all-ranks \
  -o step.toml > step.txt 2>&1 || { cat step.txt; fail "plan auto"; }
! grep -q "DiLoCo" step.txt || { cat step.txt; fail "DiLoCo considered without --allow-lossy"; }
"$SLM" plan auto "${COMMON[@]}" --set sync.inner_steps=4 --cluster slow.toml --profile profile.json --all-ranks \
  --allow-lossy -o dl.toml > dl.txt 2>&1 || { cat dl.txt; fail "plan auto --allow-lossy"; }
grep -q "^chosen: .*DiLoCo across sites every 4 steps (int8)" dl.txt || { cat dl.txt; fail "DiLoCo not chosen"; }
grep -q '^mode = "diloco"' dl.toml || fail "the plan file does not set sync.mode"
train 2 planned --set optim.lr=3e-3 --set parallel.plan=dl.toml
grep -q "sync: DiLoCo across 2 site(s) of 1 data-parallel rank(s): outer sync every 4 steps.*int8" planned.log ||
  { cat planned.log; fail "the planned DiLoCo run"; }

echo "== refusals"
expect_error "sync: inner_steps 0 must be >= 1" "$SLM" train "${COMMON[@]}" --set sync.inner_steps=0
expect_error "sync: fragments 3 must divide model.n_layer 2" "$SLM" train "${COMMON[@]}" --set sync.mode=diloco \
  --set dist.ranks_per_site=1 --set sync.fragments=3 --set sync.inner_steps=6
expect_error "needs dist.ranks_per_site" "$SLM" train "${COMMON[@]}" --set sync.mode=diloco
expect_error "sync: compress \"fp8\" is not one of none, bf16, int8" "$SLM" train "${COMMON[@]}" --set sync.compress=fp8
expect_error "sync: by = \"time\" needs fragments = 1 (not 2)" "$SLM" train "${COMMON[@]}" --set sync.mode=diloco \
  --set dist.ranks_per_site=1 --set sync.by=time --set sync.fragments=2
expect_error "sync: by = \"time\" needs mode = \"diloco\"" "$SLM" train "${COMMON[@]}" --set sync.by=time
expect_error "sync: site_speeds \"1,x\" must be numbers > 0" "$SLM" train "${COMMON[@]}" --set sync.site_speeds=1,x
expect_error "the planner chooses DiLoCo itself" "$SLM" train "${COMMON[@]}" --set sync.mode=diloco --set dist.ranks_per_site=1 \
  --set parallel.plan=auto
for case in "3 --set dist.ranks_per_site=2 --set batch.batch_size=12|same number of replicas in every site" \
            "2 --set dist.ranks_per_site=1 --set sync.by=time --set sync.site_speeds=1,2,3|site_speeds has 3 value(s) for 2 sites" \
            "2 --set dist.ranks_per_site=3|dist.ranks_per_site = 3 is more than the job's 2 ranks"; do
  args=${case%%|*} want=${case#*|}
  # shellcheck disable=SC2086
  rc=0; "$SLM" launch -n ${args%% *} -- "$SLM" train "${COMMON[@]}" --set sync.mode=diloco --set run.dir=bad \
    ${args#* } > bad.log 2>&1 || rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || { cat bad.log; fail "accepted or crashed: $args"; }
  grep -q "$want" bad.log || { cat bad.log; fail "no clear error for: $args"; }
  echo "ok (exit $rc): $want"
done
echo "DiLoCo: exact where it must be, compressed, resumable"
