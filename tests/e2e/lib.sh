# tests/e2e/lib.sh: helpers for the end-to-end tests of the `slm` binary.
# Each test script is run by CTest as: bash SCRIPT PATH_TO_SLM PATH_TO_SHARED_DATA
# Exit 0 = pass, 77 = skipped (CTest SKIP_RETURN_CODE), anything else = fail.
set -euo pipefail
SLM=$1
SHARED=${2:-}
WORK=$(mktemp -d /tmp/slm_e2e_XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT

# The settings slm gives itself before OpenBLAS and libgomp start (host/runtime.cpp), set here so that
# each command starts once instead of re-executing itself (LibTorch's start costs ~0.7 s of CPU on
# 2 cores). e2e.planner checks the re-exec itself.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-10000} GLOG_minloglevel=${GLOG_minloglevel:-3}
if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}; fi

# The tests' small model (2 layers x 64 channels, 2 heads, T = 64): fast on 2 cores, big enough
# for every layout (tp 2, pp 2 stages of a layer each).
TINY_MODEL=(--set model.n_layer=2 --set model.n_head=2 --set model.n_embd=64 --set model.block_size=64)

# The 12-step fp32 run of a 1-layer model (32 channels, T = 32, one thread) on the dataset in data/:
# the tests that compare a step's arithmetic two ways (loss scaling, the update on the device).
SMALL_RUN=(-c /dev/null --set system.precision=fp32 --set data.dir=data --set model.n_layer=1 --set model.n_head=2
           --set model.n_embd=32 --set model.block_size=32 --set batch.batch_size=8 --set batch.micro_batch=4
           --set optim.lr=3e-3 --set schedule.warmup_steps=2 --set schedule.max_steps=12 --set eval.every=0
           --set system.threads=1)

# two_sites RANKS DELAY_MS [RATE_MBIT]: the tests' two-site cluster (the testbed TOML): sites a and
# b of RANKS ranks each, joined by one link of DELAY_MS one way (and RATE_MBIT, if given).
two_sites() {
  printf '[[site]]\nname = "a"\nranks = %s\n[[site]]\nname = "b"\nranks = %s\n[[link]]\nsites = ["a", "b"]\ndelay_ms = %s\n' \
    "$1" "$1" "$2"
  [ -z "${3:-}" ] || printf 'rate_mbit = %s\n' "$3"
}

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

# expect_error "substring" cmd...: the command must exit non-zero, print exactly one line on
# stderr, and that line must contain the substring.
expect_error() {
  local want=$1; shift
  local err rc=0
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" -ne 0 ] || fail "expected failure, got success: $*"
  [ "$rc" -lt 128 ] || fail "crashed (exit $rc): $*"
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "expected one line on stderr, got: $err"
  [[ "$err" == *"$want"* ]] || fail "stderr '$err' lacks '$want'"
  echo "ok (exit $rc): $err"
}

# No temporary or partial output in a directory.
expect_clean() {
  if ls -a "$1" | grep -q '\.tmp\.\|\.old\.'; then fail "leftover temporary files in $1: $(ls -a "$1")"; fi
}

# need_testbed: skips the test unless the testbed can run here (root, slm-delayer, iptables-legacy,
# network namespaces).
need_testbed() {
  [ "$(id -u)" -eq 0 ] || skip "not root"
  [ -x "$(dirname "$SLM")/slm-delayer" ] || skip "slm-delayer not built (libnetfilter-queue-dev missing)"
  command -v iptables-legacy >/dev/null || skip "iptables-legacy missing"
  ip netns add slmprobe$$ 2>/dev/null || skip "network namespaces unavailable"
  ip netns delete slmprobe$$
}
# real_corpus: tinyshakespeare when ../shared is there, else the fortunes corpus (a file, or the
# folder Debian's fortune packages install), else generated text; prints the path.
real_corpus() {
  local c=${SHARED:+$SHARED/tinyshakespeare.txt}
  [ -f "${c:-}" ] || c=/usr/share/games/fortunes
  if [ -d "$c" ]; then  # fortune's packages: a folder of text files with .dat indexes beside them
    find "$c" -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' -exec cat {} + > "$WORK/fortunes.txt"
    c=$WORK/fortunes.txt
  fi
  [ -s "$c" ] || { c=$WORK/gen.txt; gen_corpus 3000 > "$c"; }
  echo "$c"
}
# gen_corpus N: N small generated documents separated by blank lines.
gen_corpus() { for i in $(seq "$1"); do echo "Line $i: the fox $((i % 7)) jumps over the dog."; echo; done; }
# gen_topics N SEED REPEATS > FILE: N documents (blank-line separated), each repeating a made-up
# word of its own in REPEATS short sentences: text whose documents a retrieval model can tell apart.
gen_topics() {
  python3 - "$1" "$2" "$3" <<'PY'
import random, sys
n, seed, repeats = map(int, sys.argv[1:])
r = random.Random(seed)
syl = ["ka", "zu", "mor", "tel", "vin", "op", "rax", "lu", "pem", "dos", "quil", "bex"]
words = set()
while len(words) < n: words.add("".join(r.choice(syl) for _ in range(3)))
fill = ["the market", "a river", "the old road", "every morning", "the hills", "a quiet song"]
for w in sorted(words):
    print(" ".join(f"{w} {w}, the {w} of {r.choice(fill)}." for _ in range(repeats)) + "\n")
PY
}
# make_dataset CORPUS VOCAB VAL_FRACTION: tokenizer in ./tok, dataset in ./data.
make_dataset() {
  "$SLM" tokenizer train "$1" --vocab-size "$2" --out tok -q >/dev/null
  "$SLM" data prepare "$1" -t tok --separator blank --val-fraction "$3" --out data -q >/dev/null
}
# run_on_ranks TOOL N...: runs TOOL under `slm launch -n N` for each N; every rank must print "ok".
run_on_ranks() {
  local tool=$1 n out; shift
  for n in "$@"; do
    out=$("$SLM" launch -n "$n" -- "$tool" 2>&1) || { echo "$out"; fail "$(basename "$tool") on $n ranks"; }
    [ "$(echo "$out" | grep -c "rank .* ok")" -eq "$n" ] || { echo "$out"; fail "not every rank reported ok"; }
    echo "$n ranks ok"
  done
}
# same_losses REF RUN TOL: both runs' metrics.jsonl have the same number of steps and every
# step's loss (and gradient norm) differs by less than TOL.
same_losses() {
  python3 - "$1" "$2" "$3" <<'PY' || fail "$2: losses differ from $1"
import json, sys
ref, run, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
rows = lambda d: [json.loads(l) for l in open(d + "/metrics.jsonl") if '"loss"' in l]
a, b = rows(ref), rows(run)
d = max(abs(x["loss"] - y["loss"]) for x, y in zip(a, b))
g = max(abs(x["grad_norm"] - y["grad_norm"]) for x, y in zip(a, b))
print(f"{run}: {len(b)} steps, max |loss - {ref}| = {d:.2e}, max |grad norm - {ref}| = {g:.2e}")
assert len(a) == len(b) and d < tol and g < tol
PY
}
# same_logits DUMP REF RUN WHAT: the final model of RUN, read whole by the single-process tool DUMP
# (tests/tools/dump_logits.cpp), gives REF's logits on 5 fixed inputs within 1e-4. REF's logits are
# read again only when REF has trained since (its metrics are newer).
same_logits() {
  [ "$2.logits" -nt "$2/metrics.jsonl" ] || "$1" "$2" 1 2 3 4 5 > "$2.logits" || fail "cannot read $2"
  "$1" "$3" 1 2 3 4 5 > "$3.logits" || fail "the single-process tools cannot read a $4 checkpoint"
  python3 - "$2.logits" "$3.logits" "$4" <<'PY' || fail "$4 checkpoint: final logits differ"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
d = max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
print(f"{sys.argv[3]} checkpoint read whole: final logits max diff {d:.2e}")
assert len(a) == len(b) == 5 and d < 1e-4
PY
}
