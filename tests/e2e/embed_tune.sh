# tests/e2e/embed_tune.sh: contrastive tuning (`slm embed tune`) from the command line.
#  1. Data parallel = one process: 2 ranks (`slm launch`) with the same global batch give the
#     first step's loss within 5e-6 (float32 rounding of a loss of ~4) and later ones within 2e-4
#     (rounding, amplified by training: one process at another thread count differs as much),
#     and the same final vectors (1e-4).
#  2. --stop-at then --resume reproduces the uninterrupted run; SIGTERM saves the model and exits
#     143; a killed rank is named in one line and rank 0 saves; the saved model is what
#     `slm embed` reads.
#  3. It learns: on generated documents that each repeat a made-up word, tuning lifts held-out
#     recall@1 of mean pooling well above the pretrained model's (a broken gradient, a wrong
#     gather or a swapped pair would not).
#  4. Refusals in one line: an existing --out without --resume, --resume with other options or a
#     damaged optimizer state, a batch not divisible by the ranks, more pairs than documents, a
#     bad --window, a missing model; a --grad-clip of 1e308 is no limit, not an error.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
make_dataset "$(real_corpus)" 512 0.05
"$SLM" train -c /dev/null --set data.dir=data --set run.dir=run --set model.n_layer=2 --set model.n_head=2 \
  --set model.n_embd=64 --set model.block_size=64 --set batch.batch_size=8 --set batch.micro_batch=8 \
  --set optim.lr=3e-3 --set schedule.max_steps=40 --set schedule.warmup_steps=4 --set eval.every=0 \
  --set system.threads=2 2>/dev/null || fail "pretraining"
gen_topics 400 11 8 > topics.txt
T=(topics.txt --separator blank --val-fraction 0.25 --seed 3 --anchor-min 8 --anchor-max 24 --positive-min 8)
TUNE=(embed tune run "${T[@]}" --batch 8 --steps 8 --warmup 1 --lr 1e-3 --save-every 0)

# 1. One process against two ranks.
"$SLM" "${TUNE[@]}" --threads 2 --out ref 2> ref.log || { cat ref.log; fail "tune, one process"; }
grep -q "training documents" ref.log && grep -q "saved ref/model at step 8" ref.log || { cat ref.log; fail "tune log"; }
for f in model.safetensors config.json vocab.json merges.txt optimizer.pt tune_state.json; do
  [ -s ref/model/$f ] || fail "ref/model lacks $f"
done
"$SLM" launch -n 2 -- "$SLM" "${TUNE[@]}" --threads 1 --out n2 > n2.log 2>&1 || { cat n2.log; fail "tune, 2 ranks"; }
grep -q "batch 8 pairs on 2 rank(s)" n2.log || { cat n2.log; fail "2-rank header"; }
python3 - <<'PY' || fail "2 ranks: losses differ from one process"
import json
rows = lambda d: [json.loads(l) for l in open(d + "/metrics.jsonl")]
a, b = rows("ref"), rows("n2")
assert len(a) == len(b) == 8
dl = [abs(x["loss"] - y["loss"]) for x, y in zip(a, b)]
dg = [abs(x["grad_norm"] - y["grad_norm"]) / x["grad_norm"] for x, y in zip(a, b)]
print(f"n2: step 1 |loss diff| {dl[0]:.1e}, relative grad norm {dg[0]:.1e}; all steps {max(dl):.1e}, {max(dg):.1e}")
# Step 1 is rounding only; later steps amplify it (gradient norms grow to ~16 at lr 1e-3): one
# process at 1 and at 2 threads differs as much (measured on LibTorch 2.15: 2.5e-5 / 5e-5).
assert dl[0] < 5e-6 and dg[0] < 1e-5 and max(dl) < 2e-4 and max(dg) < 5e-4
PY
same_vectors() {  # same_vectors A B TOL: `slm embed` of the same text with A's and B's models
  "$SLM" embed "$1" topics.txt --separator blank -q --force --out "v_$1" > /dev/null || fail "slm embed $1"
  "$SLM" embed "$2" topics.txt --separator blank -q --force --out "v_$2" > /dev/null || fail "slm embed $2"
  python3 - "v_$1/embeddings.npy" "v_$2/embeddings.npy" "$3" <<'PY' || fail "$2: vectors differ from $1"
import array, ast, sys
def npy(path):  # little-endian float32 .npy (no numpy needed)
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[8:10], "little")
    head = ast.literal_eval(raw[10:10 + n].decode())
    assert head["descr"] == "<f4", head
    return head["shape"], array.array("f", raw[10 + n:])
(sa, a), (sb, b) = npy(sys.argv[1]), npy(sys.argv[2])
d = max(abs(x - y) for x, y in zip(a, b))
print(f"{sys.argv[2]}: {sa[0]} vectors, max diff {d:.2e}")
assert sa == sb and d < float(sys.argv[3])
PY
}
same_vectors ref n2 1e-4

# 2. Stop and resume; SIGTERM.
"$SLM" "${TUNE[@]}" --threads 2 --out rs --stop-at 4 2> /dev/null || fail "stop at 4"
grep -q '"step": *4\|"step":4' rs/model/tune_state.json || fail "stop-at did not save step 4"
"$SLM" "${TUNE[@]}" --threads 2 --out rs --resume 2> rs.log || { cat rs.log; fail "resume"; }
# A resumed run equals the uninterrupted one: bit for bit on LibTorch 1.13. On 2.x two runs of the
# same command differ in rounding that the steps amplify (in CI: losses 6e-7 and 5.5e-6 apart, grad
# norms of ~16 5.7e-6 and 2.5e-4), so there the resumed run is held to the 2-rank run's tolerances.
if "$SLM" --version | grep -q "LibTorch 1\."; then
  same_losses ref rs 1e-6
  same_vectors ref rs 1e-6
else
  python3 - <<'PY' || fail "rs: losses differ from ref"
import json
rows = lambda d: [json.loads(l) for l in open(d + "/metrics.jsonl")]
a, b = rows("ref"), rows("rs")
dl = [abs(x["loss"] - y["loss"]) for x, y in zip(a, b)]
dg = [abs(x["grad_norm"] - y["grad_norm"]) / x["grad_norm"] for x, y in zip(a, b)]
print(f"rs: {len(b)} steps, max |loss diff| {max(dl):.1e}, max relative grad norm diff {max(dg):.1e}")
assert len(a) == len(b) == 8 and max(dl) < 2e-4 and max(dg) < 5e-4
PY
  same_vectors ref rs 1e-4
fi
"$SLM" embed tune run "${T[@]}" --batch 8 --steps 100000 --lr 1e-4 --threads 2 --out sig 2> sig.log &
pid=$!
for _ in $(seq 300); do [ -s sig/metrics.jsonl ] && break; sleep 0.1; done
kill -TERM $pid
rc=0; wait $pid || rc=$?
[ $rc -eq 143 ] || { cat sig.log; fail "SIGTERM: exit $rc, expected 143"; }
grep -q "stopped by signal" sig.log || { cat sig.log; fail "no stop message"; }
[ -s sig/model/model.safetensors ] && expect_clean sig || fail "SIGTERM: model not saved"

# A rank killed mid-run: rank 0 names it in one line and keeps the finished steps.
"$SLM" launch -n 2 -- "$SLM" embed tune run "${T[@]}" --batch 8 --steps 100000 --lr 1e-4 --threads 1 --timeout 10 \
  --out dead > dead.log 2>&1 &
launcher=$!
for _ in $(seq 300); do grep -q "tune step 1/" dead.log 2>/dev/null && break; sleep 0.1; done
rank1=$(for p in $(pgrep -P $launcher); do tr '\0' '\n' < /proc/$p/environ | grep -qx RANK=1 && echo $p; done)
[ -n "$rank1" ] || { cat dead.log; fail "rank 1 not found"; }
kill -9 "$rank1"
rc=0; wait $launcher || rc=$?
[ $rc -ne 0 ] || fail "launcher exited 0 after a rank was killed"
grep -q "\[0\] slm: error: .*lost rank 1" dead.log || { cat dead.log; fail "rank 0 did not name the lost rank"; }
grep -q "rank 0 alone, after losing a peer" dead.log || { cat dead.log; fail "rank 0 did not save"; }
[ -s dead/model/tune_state.json ] && expect_clean dead || fail "dead peer: model not saved"

# 3. It learns.
"$SLM" embed tune run "${T[@]}" --batch 32 --steps 60 --warmup 5 --lr 1e-3 --threads 2 --out tuned 2> tuned.log \
  || { cat tuned.log; fail "tune, 60 steps"; }
for m in run tuned; do
  "$SLM" embed eval $m topics.txt --separator blank --val-fraction 0.25 --seed 3 --query-tokens 16 --pooling mean \
    --json > $m.eval.json || fail "embed eval $m"
done
python3 - <<'PY' || fail "tuning did not improve retrieval"
import json
get = lambda m: {r["method"]: r for r in json.load(open(f"{m}.eval.json"))}
before, after = get("run"), get("tuned")
m = "vector, mean pooling"
b, a = before[m]["recall_at_1"], after[m]["recall_at_1"]
chance = before["random (expected)"]["recall_at_1"]
print(f"held-out recall@1 of {before[m]['queries']} queries: pretrained {b:.3f}, tuned {a:.3f}, chance {chance:.3f}")
assert a > 2 * b and a > b + 0.15, (a, b)  # measured: 0.11 -> 0.35 (LibTorch 2.15)
PY
"$SLM" embed tuned topics.txt --separator blank -q --out ixt > /dev/null || fail "embed with the tuned folder"
"$SLM" search ixt "the kazumor of the market" -k 3 > /dev/null || fail "search the tuned index"

# 4. Refusals.
expect_error "pass --resume" "$SLM" "${TUNE[@]}" --out ref
expect_error "other options" "$SLM" embed tune run "${T[@]}" --batch 8 --steps 8 --warmup 1 --lr 5e-4 --out rs --resume
out=$("$SLM" launch -n 2 -- "$SLM" embed tune run "${T[@]}" --batch 7 --out odd 2>&1) && fail "odd batch on 2 ranks accepted"
[[ "$out" == *"multiple of the 2 ranks"* ]] || { echo "$out"; fail "odd batch: message"; }
cp -r rs damaged && echo "not a torch archive" > damaged/model/optimizer.pt
expect_error "unreadable" "$SLM" "${TUNE[@]}" --out damaged --resume
expect_error "lower --batch" "$SLM" embed tune run "${T[@]}" --batch 5000 --out big
expect_error "--window 500 must be in" "$SLM" embed tune run "${T[@]}" --window 500 --out w
expect_error "no valid checkpoint" "$SLM" embed tune nowhere topics.txt --out x
# A clip limit beyond float's range is no limit (it was an internal error: LibTorch would not
# convert 1e308 to the gradients' float).
"$SLM" embed tune run "${T[@]}" --batch 8 --steps 1 --warmup 0 --grad-clip 1e308 --out noclip 2> noclip.log ||
  { cat noclip.log; fail "--grad-clip 1e308"; }
echo "embed_tune: all passed"
