#!/usr/bin/env bash
# bench/gpu/lent_gpu.sh: what a session lent a GPU for a few minutes runs, prepared beforehand.
#   bench/gpu/lent_gpu.sh prepare        here, before the first call (no GPU needed): the bundle of slm
#       and its CUDA tests against the GPU image's torch (scripts/bundle.sh --torch 2.11.0 --tests:
#       ~20 min on 2 cores with an empty ccache, ~1 min with a warm one) and runs/gpu_data (a
#       tokenizer with GPT-2's 50,257 tokens, trained with --min-frequency 1 on tinyshakespeare,
#       wikitext-2's valid.txt and 27 MB of Python sources, and a dataset of the text and 5 MB of them).
#   bench/gpu/lent_gpu.sh run PART OUT   there, each PART within one call; carry
#       dist/slm-2.11.0+cu130.tar.gz and runs/gpu_data. PART 1 (~6 min): the kernels' tests against
#       ATen, gpt2 bf16 beside eager PyTorch and torch.compile (CUDA graphs; ATen's ops), the tiny
#       preset with and without graphs (gpu_kernels.sh sections 2-4), the losses against the CPU
#       (gpu_check.sh 1). PART 2 (~6 min): gpt2-medium, batch 64, fp16 with and without graphs
#       (gpu_kernels.sh 5), resume and the layouts under Gloo with CUDA tensors (gpu_check.sh 2-3,
#       after section 1 again where part 1's runs are gone).
#       Each part stops its sections by a deadline (DEADLINE seconds, default 330: set it below the
#       call's limit where less device time is left, `status`'s budget_left_s) and packs its logs into
#       OUT/gpu_PART.tgz after every section (a call returns at most 8 files, and what is under OUT
#       when a call is cut off comes back: the sections finished by then); the summary goes to
#       stdout and to OUT/summary_PART.txt.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
TORCH=${TORCH:-2.11.0} TAG=${TAG:-2.11.0+cu130}
case "${1:-}" in
prepare)
  set -e
  bash scripts/bundle.sh --torch "$TORCH" --tests --out dist
  data=${SHARED_DATA:-../shared/data} d=runs/gpu_data py=$(mktemp)
  mkdir -p "$d"
  cat "$data/tinyshakespeare.txt" "$data/wikitext-2/valid.txt" > "$d/text.txt"
  find "$(python3 -c 'import os; print(os.path.dirname(os.__file__))')" -name '*.py' -size +8k | sort | xargs cat > "$py"
  truncate -s "$(( $(stat -c %s "$py") < 27000000 ? $(stat -c %s "$py") : 27000000 ))" "$py"
  build/slm tokenizer train "$d/text.txt" "$py" --vocab-size 50257 --min-frequency 1 -o "$d/tokenizer" --force -q
  head -c 5000000 "$py" > "$py.5"
  build/slm data prepare "$d/text.txt" "$py.5" -t "$d/tokenizer" -o "$d/data" --separator blank --force -q
  rm -f "$py" "$py.5"
  grep -q '"vocab_size": 50257' "$d/data/manifest.json" || { echo "lent_gpu: the tokenizer has not 50257 tokens" >&2; exit 1; }
  echo "carry: dist/slm-$TAG.tar.gz runs/gpu_data" ;;
run)
  part=${2:?part 1 or 2} out=${3:?OUT dir}
  start=$(date +%s) deadline=${DEADLINE:-330}
  left() { local s=$(($1 - $(date +%s) + start)); echo $((s > 1 ? s : 1)); }  # seconds until $1 s after the start
  B=/tmp/slm-$TAG G=/tmp/gpu_$part
  mkdir -p "$G" "$out"
  export SLM_TORCH_PYTHON=${PY:-python3} PYTHONUNBUFFERED=1
  tar xzf "dist/slm-$TAG.tar.gz" -C /tmp || exit 1
  say() { echo "$@" | tee -a "$out/summary_$part.txt"; }
  pack() {  # the logs so far into OUT/gpu_PART.tgz, replaced whole (a call cut off keeps the last one)
    tar czf "$G.tgz" --exclude='*.json' --exclude='*.pt' --exclude='*.bin' -C /tmp "gpu_$part" gpu_check \
      2>/dev/null; mv -f "$G.tgz" "$out/gpu_$part.tgz"
  }
  trap 'pack; exit 143' TERM
  kernels() {  # SECTIONS UNTIL
    SLM_BUNDLE=$B PY=${PY:-python3} TEST_TIMEOUT=90 RUN_TIMEOUT=150 SECTIONS="$1" timeout "$(left "$2")" \
      bash bench/gpu/gpu_kernels.sh runs/gpu_data/data "$G/kernels" > "$G/kernels.out" 2>&1
    local rc=$?
    grep -v '^ ' "$G/kernels/summary.txt" 2>/dev/null | tee -a "$out/summary_$part.txt"
    say "== gpu_kernels.sh $1: rc $rc at $(($(date +%s) - start)) s"
    pack
  }
  check() {  # SECTIONS UNTIL: into /tmp/gpu_check, shared by the parts (section 1: the references of 2 and 3)
    SECTIONS="$1" timeout "$(left "$2")" bash bench/gpu/gpu_check.sh "$B/bin/slm" runs/gpu_data/data /tmp/gpu_check \
      runs/gpu_data/text.txt > "$G/check.out" 2>&1
    local rc=$?
    tee -a "$out/summary_$part.txt" < "$G/check.out"
    say "== gpu_check.sh $1: rc $rc at $(($(date +%s) - start)) s"
    pack
  }
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$out/summary_$part.txt"
  "$B/bin/slm" --version | tee -a "$out/summary_$part.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || { ldd "$B/bin/slm.real" | grep "not found"; exit 1; }
  if [ "$part" = 1 ]; then kernels "2 3 4" $((deadline - 70)); check "1" "$deadline"
  else  # on a fresh machine (a call's machine goes back after 30 s idle) section 1 runs again first
    kernels "5" $((deadline - 100))
    if [ -f /tmp/gpu_check/cuda-fp32/metrics.jsonl ]; then check "2 3" "$deadline"; else check "1 2 3" "$deadline"; fi
  fi
  grep -h -B2 -A6 '^\[  FAILED' "$G/kernels/tests.log" 2>/dev/null | head -40 | tee -a "$out/summary_$part.txt" ;;
*)
  echo "usage: bench/gpu/lent_gpu.sh prepare | run PART OUT" >&2; exit 2 ;;
esac
