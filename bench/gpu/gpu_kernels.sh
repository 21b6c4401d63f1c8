#!/usr/bin/env bash
# bench/gpu/gpu_kernels.sh: the own CUDA kernels, the step's end on the device, CUDA graphs and the
# attention chooser on a lent GPU (an H100 or H200; none of this runs in CI):
#  1. builds slm against this machine's PyTorch with the CUDA kernels (build-gpu/, 16 jobs);
#  2. their tests against the ATen compositions they replace (slm_torch_tests Cuda*: the softmax
#     cross-entropy, the residual add + LayerNorm, bias + GELU; the fused head's; the update on the
#     device; the model's; the batches' copies on a side stream; the profiler's kernels (CUPTI); the
#     chooser's and the graphs' host logic run in CI too);
#  3. gpt2 (124M), bf16, batch 32 x 1024 in one micro-batch: eager PyTorch, torch.compile and slm
#     (system.attention = auto: the measured fastest kernel; ATTENTION_DEFAULT=1 adds a run with
#     LibTorch's own choice) side by side (bench/compare/train_compare.sh) with each one's peak GPU
#     memory, each side's 2 profiled steps summed up (GPU busy time, kernels by kind, the largest
#     kernels: `slm report TRACE`; slm's log.profile_steps, torch.profiler; traces in OUT/profile),
#     then slm with system.cuda_graphs = on and with system.cuda_kernels = off (ATen's ops
#     instead of the own kernels: what they buy), their losses against the first run's;
#  4. the tiny preset (launch-bound) without and with CUDA graphs;
#  5. the issue's other rows: gpt2-medium (350M) bf16, gpt2 bf16 at batch 64 x 1024, gpt2 fp16
#     (dynamic loss scaling, growing every 4 steps) beside eager fp16, and slm's fp16 with CUDA
#     graphs (the loss scale read from the device: no capture per scale; its losses against the
#     eager fp16 run's) (not in the
#     default SECTIONS: about 6 minutes, a second call). The rows of 3 to 5 go to OUT/current.tsv,
#     for docs/gpu/current.tsv.
# All of it takes about 11 minutes on a fresh machine, the build about 4 of them (16 cores, empty
# ccache): within 10-minute calls, run SECTIONS="1 2" and then SECTIONS="3 4" on the same machine.
# Or build here beforehand: `scripts/bundle.sh --torch 2.11.0 --tests` (the device's torch) packs
# slm and the tests; carry its .tar.gz, unpack it there and set SLM_BUNDLE=slm-2.11.0: section 1
# is skipped and the rest runs in about 8 minutes.
# Usage: bench/gpu/gpu_kernels.sh DATA_DIR OUT_DIR
#   DATA_DIR: a prepared dataset whose tokenizer has GPT-2's 50257 tokens (the real head's shape);
#   PY: the Python with this machine's torch (default python3); STEPS (default 12).
# Each test run and each side-by-side run has a time limit (TEST_TIMEOUT, default 240 s; RUN_TIMEOUT,
# default 360 s: torch.compile's first compile is in it), so that a hang costs one row, not the session.
set -uo pipefail
DATA=$(realpath "$1") OUT=$(realpath -m "$2")
PY=${PY:-python3} STEPS=${STEPS:-12}
SLM_BIN=build-gpu/slm TESTS_BIN=build-gpu/tests/slm_torch_tests
if [ -n "${SLM_BUNDLE:-}" ]; then
  SLM_BIN=$(realpath "$SLM_BUNDLE")/bin/slm TESTS_BIN=$(realpath "$SLM_BUNDLE")/bin/slm_torch_tests
  export SLM_TORCH_PYTHON=$PY
fi
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT"
cd "$ROOT"
say() { echo "== $*" | tee -a "$OUT/summary.txt"; }
SECTIONS=" ${SECTIONS:-1 2 3 4} "
on() { [[ "$SECTIONS" == *" $1 "* ]]; }

if on 1 && [ -z "${SLM_BUNDLE:-}" ]; then
say "1. build against $("$PY" -c 'import torch; print(torch.__version__, torch.version.cuda)')"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLM_BENCH=OFF -DBUILD_TESTING=ON -DSLM_WERROR=ON \
  -DCMAKE_PREFIX_PATH="$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')" > "$OUT/cmake.log" 2>&1 \
  && cmake --build build-gpu -j 16 --target slm slm_torch_tests > "$OUT/build.log" 2>&1 \
  || { tail -30 "$OUT/build.log" "$OUT/cmake.log"; say "build FAILED"; exit 1; }
grep -h "CUDA kernels" "$OUT/cmake.log" | tee -a "$OUT/summary.txt"
fi

if on 2; then
say "2. kernel tests against ATen"
timeout "${TEST_TIMEOUT:-240}" "$TESTS_BIN" \
  --gtest_filter='Cuda*:FusedHead*:XentRows*:DeviceUpdate.*:GPT2.*:BatchTensor.*:Profiler.*' > "$OUT/tests.log" 2>&1
[ $? != 124 ] || { say "tests TIMED OUT after ${TEST_TIMEOUT:-240} s; the last lines:"; tail -5 "$OUT/tests.log"; }
grep -E "tests? from .* ran|^\[  (PASSED|FAILED) |^\[  SKIPPED \] [0-9]" "$OUT/tests.log" | tee -a "$OUT/summary.txt"
fi
on 3 || on 4 || on 5 || exit 0

gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
compare() {  # compare NAME COMPILE VAR=VALUE...: one side-by-side run (shape, SLM_EXTRA, PREC), slm's losses kept
  local name=$1 compile=$2 prec=bf16 a; shift 2
  for a in "$@"; do [[ "$a" != PREC=* ]] || prec=${a#PREC=}; done
  timeout "${RUN_TIMEOUT:-360}" env "$@" SLM_METRICS="$OUT/metrics_$name.jsonl" PY=$PY DEVICE=cuda COMPILE=$compile \
    bash bench/compare/train_compare.sh "$SLM_BIN" "$DATA" "$prec" "$STEPS" 1 \
    2>&1 | tee "$OUT/compare_$name.log" | tee -a "$OUT/summary.txt"
  [ "${PIPESTATUS[0]}" != 124 ] || say "$name TIMED OUT after ${RUN_TIMEOUT:-360} s"
}
GPT2=(L=12 C=768 H=12 T=1024 B=32 MICRO=32)
if on 3; then
  say "3. gpt2 bf16 batch 32 x 1024: eager, torch.compile, slm (attention auto / default; CUDA graphs); profiles"
  compare auto 1 "${GPT2[@]}" SLM_EXTRA="--set system.attention=auto" PROFILE_DIR="$OUT/profile"
  [ "${ATTENTION_DEFAULT:-0}" = 0 ] || compare default 0 "${GPT2[@]}" SLM_EXTRA="--set system.attention=default"
  compare graphs 0 "${GPT2[@]}" SLM_EXTRA="--set system.cuda_graphs=on"
  compare aten 0 "${GPT2[@]}" SLM_EXTRA="--set system.cuda_kernels=off"
fi
if on 4; then
  say "4. the tiny preset (launch-bound: the graphs' case), bf16: eager, torch.compile, slm without and with CUDA graphs"
  compare tiny 1 SLM_EXTRA="--set system.cuda_graphs=off"
  compare tiny_graphs 0 SLM_EXTRA="--set system.cuda_graphs=on"
fi
if on 5; then
  say "5. gpt2-medium bf16, gpt2 bf16 at batch 64, gpt2 fp16 (loss scaling): eager, torch.compile (bf16), slm"
  compare medium 1 L=24 C=1024 H=16 T=1024 B=32 MICRO=32
  compare batch64 1 L=12 C=768 H=12 T=1024 B=64 MICRO=64
  SCALE="--set system.loss_scale_growth_interval=4"  # the scale changes within the run: graphs must follow it
  compare fp16 0 "${GPT2[@]}" PREC=fp16 SLM_EXTRA="$SCALE"
  compare fp16_graphs 0 "${GPT2[@]}" PREC=fp16 SLM_EXTRA="$SCALE --set system.cuda_graphs=on"
fi
grep -h "^attention:\|^cuda graphs:\|^update:" "$OUT"/compare_*.log 2>/dev/null | sort -u | tee -a "$OUT/summary.txt"
"$PY" - "$OUT" "$gpu" <<'PY' | tee -a "$OUT/summary.txt"
import json, re, sys
out, gpu = sys.argv[1], sys.argv[2]
rows = ["model\tgpu\tprecision\tbatch\tvariant\teager_tok_s\tcompile_tok_s\tslm_tok_s\tslm_peak_gib\teager_peak_gib"]
for name, model, batch, prec in (("auto", "gpt2", "32x1024", "bf16"), ("default", "gpt2", "32x1024", "bf16"),
                                 ("graphs", "gpt2", "32x1024", "bf16"), ("aten", "gpt2", "32x1024", "bf16"),
                                 ("tiny", "tiny", "16x256", "bf16"), ("tiny_graphs", "tiny", "16x256", "bf16"),
                                 ("medium", "gpt2-medium", "32x1024", "bf16"), ("batch64", "gpt2", "64x1024", "bf16"),
                                 ("fp16", "gpt2", "32x1024", "fp16"), ("fp16_graphs", "gpt2", "32x1024", "fp16")):
    try:
        text = open(f"{out}/compare_{name}.log").read()
    except OSError:
        continue
    m = re.search(r"eager (\d+) tok/s(?:, torch.compile (\d+) tok/s)?.* (\d+) tok/s \(MFU [^)]*\), peak GPU ([\d.]+) GiB \(eager ([\d.-]+) GiB\)", text)
    if m:
        rows.append("\t".join([model, gpu, prec, batch, name] + [g or "" for g in m.groups()]))
open(f"{out}/current.tsv", "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
# CUDA graphs replay the same kernels: the same losses as the eager run of the same shape.
losses = lambda n: [json.loads(l)["loss"] for l in open(f"{out}/metrics_{n}.jsonl") if '"loss"' in l]
for a, b in (("auto", "graphs"), ("auto", "aten"), ("tiny", "tiny_graphs"), ("fp16", "fp16_graphs")):
    try:
        x, y = losses(a), losses(b)
    except OSError:
        continue
    n = min(len(x), len(y))  # "auto" has 2 steps more (its profiled ones)
    d = max((abs(p - q) for p, q in zip(x, y)), default=float("inf"))
    print(f"losses {a} vs {b}: {len(x)} / {len(y)} steps, max difference {d:.2e} over the first {n}",
          "ok" if n > 0 and d < 2e-2 else "DIFFER")
PY
