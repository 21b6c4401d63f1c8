#!/usr/bin/env bash
# bench/gpu/gpu_kernels.sh: the own CUDA kernels and the attention chooser on a lent GPU, in one run
# that fits a 10-minute device call (an H100 or H200; none of this runs in CI):
#  1. builds slm against this machine's PyTorch with the CUDA kernels (build-gpu/, 16 jobs);
#  2. their tests against the ATen compositions they replace (slm_torch_tests CudaXentRows.* and
#     the fused head's; the chooser's host logic runs in CI);
#  3. gpt2 (124M), bf16, batch 32 x 1024 in one micro-batch: eager PyTorch, torch.compile and slm
#     with system.attention = auto (the measured fastest kernel) and = default (LibTorch's choice),
#     side by side (bench/compare/train_compare.sh), with each one's peak GPU memory; the rows go to
#     OUT/current.tsv, for docs/gpu/current.tsv.
# The build takes most of the time (~5 min on 16 cores with an empty ccache): where one call must
# stay short, run it once with SECTIONS=1, then SECTIONS="2 3" in the next call on the same machine.
# Usage: bench/gpu/gpu_kernels.sh DATA_DIR OUT_DIR
#   DATA_DIR: a prepared dataset whose tokenizer has GPT-2's 50257 tokens (the real head's shape);
#   PY: the Python with this machine's torch (default python3); STEPS (default 12).
set -uo pipefail
DATA=$(realpath "$1") OUT=$(realpath -m "$2")
PY=${PY:-python3} STEPS=${STEPS:-12}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT"
cd "$ROOT"
say() { echo "== $*" | tee -a "$OUT/summary.txt"; }
SECTIONS=" ${SECTIONS:-1 2 3} "
on() { [[ "$SECTIONS" == *" $1 "* ]]; }

if on 1; then
say "1. build against $("$PY" -c 'import torch; print(torch.__version__, torch.version.cuda)')"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLM_BENCH=OFF -DBUILD_TESTING=ON -DSLM_WERROR=ON \
  -DCMAKE_PREFIX_PATH="$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')" > "$OUT/cmake.log" 2>&1 \
  && cmake --build build-gpu -j 16 --target slm slm_torch_tests > "$OUT/build.log" 2>&1 \
  || { tail -30 "$OUT/build.log" "$OUT/cmake.log"; say "build FAILED"; exit 1; }
grep -h "CUDA kernels" "$OUT/cmake.log" | tee -a "$OUT/summary.txt"
fi

if on 2; then
say "2. kernel tests against ATen"
build-gpu/tests/slm_torch_tests --gtest_filter='CudaXentRows.*:FusedHead*:XentRows*' > "$OUT/tests.log" 2>&1
tail -3 "$OUT/tests.log" | tee -a "$OUT/summary.txt"
fi
on 3 || exit 0

say "3. gpt2 bf16 batch 32 x 1024: eager, torch.compile, slm (attention auto / default)"
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
for attention in auto default; do
  SLM_EXTRA="--set system.attention=$attention" PY=$PY DEVICE=cuda COMPILE=$([ $attention = auto ] && echo 1 || echo 0) \
    L=12 C=768 H=12 T=1024 B=32 MICRO=32 bash bench/compare/train_compare.sh build-gpu/slm "$DATA" bf16 "$STEPS" 1 \
    2>&1 | tee "$OUT/compare_$attention.log" | tee -a "$OUT/summary.txt"
done
grep -h "^attention:" "$OUT"/compare_*.log 2>/dev/null | sort -u | tee -a "$OUT/summary.txt"
"$PY" - "$OUT" "$gpu" <<'PY'
import re, sys
out, gpu = sys.argv[1], sys.argv[2]
rows = ["model\tgpu\tprecision\tbatch\tattention\teager_tok_s\tcompile_tok_s\tslm_tok_s\tslm_peak_gib\teager_peak_gib"]
for attention in ("auto", "default"):
    text = open(f"{out}/compare_{attention}.log").read()
    m = re.search(r"eager (\d+) tok/s(?:, torch.compile (\d+) tok/s)?.* (\d+) tok/s \(MFU [^)]*\), peak GPU ([\d.]+) GiB \(eager ([\d.-]+) GiB\)", text)
    if m:
        rows.append("\t".join(["gpt2", gpu, "bf16", "32x1024", attention] + [g or "" for g in m.groups()]))
open(f"{out}/current.tsv", "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
PY
