#!/usr/bin/env bash
# bench/compare/train_compare.sh: tokens/s of `slm train` vs the same model in Python PyTorch
# (bench/compare/train_reference.py), same shape, batch, precision and thread count, runs alternating.
# Both get the same process settings slm applies to itself: OPENBLAS_CORETYPE, OMP_WAIT_POLICY,
# GOMP_SPINCOUNT, ATEN_CPU_CAPABILITY and the malloc thresholds (for Python through GLIBC_TUNABLES).
# Usage: bench/compare/train_compare.sh SLM DATA_DIR [PRECISION=fp32] [STEPS=8] [ROUNDS=2]
# PY=python with the PyTorch to compare with (default Debian's 1.13; the venv's for 2.x);
# COMPILE=1 adds torch.compile (2.x) to each round. SLM_EXTRA: more `slm train` arguments (e.g.
# "--set system.attention=default"). DEVICE=cuda compares on the GPU; the shape is
# the tiny preset's unless L, C, H, T, B, MICRO are set (e.g. gpt2: L=12 C=768 H=12 T=1024).
# SLM_METRICS=FILE keeps the last round's slm metrics.jsonl there (to compare the losses of variants).
# PROFILE_DIR=DIR: each side also profiles 2 steps (slm: log.profile_steps, steps 4-5, 2 steps more
# and those two left out of its median; PyTorch: torch.profiler, after its timed steps), the traces
# in DIR/slm.json, eager.json and compile.json, and `slm report` sets them side by side after the
# last round.
# Both models have the padded vocabulary slm trains (a multiple of 128, as nanoGPT's 50304).
set -euo pipefail
SLM=$1 DATA=$2 PREC=${3:-fp32} STEPS=${4:-8} ROUNDS=${5:-2}
L=${L:-4} C=${C:-256} H=${H:-4} T=${T:-256} B=${B:-16} MICRO=${MICRO:-8} THREADS=$(nproc) DEVICE=${DEVICE:-cpu}
V=$(python3 -c "import json,sys; v=json.load(open('$DATA/manifest.json'))['tokenizer']['vocab_size']; print((v+127)//128*128)")
export DEVICE
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-10000}
if grep -qw avx512f /proc/cpuinfo; then  # as slm does for itself (host/runtime.h)
  export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX} ATEN_CPU_CAPABILITY=avx512
fi
export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
profiled=0  # slm's profiled steps, left out of its median
[ -z "${PROFILE_DIR:-}" ] || { mkdir -p "$PROFILE_DIR"; profiled=2; }
for r in $(seq "$ROUNDS"); do
  PY=${PY:-/usr/bin/python3}
  prof() { [ -z "${PROFILE_DIR:-}" ] || echo "PROFILE=$PROFILE_DIR/$1.json"; }  # env for train_reference.py
  py=$(env $(prof eager) PEAK_OUT="$W/eager_peak" "$PY" "$(dirname "$0")/train_reference.py" $L $C $H $T $V $B $MICRO "$STEPS" "$PREC" "$THREADS" eager)
  compiled=""
  if [ "${COMPILE:-0}" = 1 ]; then
    c=$(env $(prof compile) "$PY" "$(dirname "$0")/train_reference.py" $L $C $H $T $V $B $MICRO "$STEPS" "$PREC" "$THREADS" compile 2>/dev/null || echo 0)
    compiled=", torch.compile $c tok/s"
  fi
  rm -rf "$W/run"
  "$SLM" train -c /dev/null --set data.dir="$DATA" --set run.dir="$W/run" --set model.n_layer=$L \
    --set model.n_embd=$C --set model.n_head=$H --set model.block_size=$T --set batch.batch_size=$B \
    --set batch.micro_batch=$MICRO --set schedule.max_steps=$((STEPS + 2 + profiled)) --set eval.every=0 \
    --set checkpoint.every=0 --set system.precision="$PREC" --set system.threads="$THREADS" --set system.device="$DEVICE" \
    ${SLM_EXTRA:-} ${PROFILE_DIR:+--set log.profile_steps=2} 2> "$W/slm.err" || { cat "$W/slm.err" >&2; exit 1; }
  [ -z "${PROFILE_DIR:-}" ] || cp "$W/run/profile/rank_0.json" "$PROFILE_DIR/slm.json"
  grep "^attention:\|^cuda graphs:\|^update:" "$W/slm.err" || true  # what slm chose on the GPU
  [ -z "${SLM_METRICS:-}" ] || cp "$W/run/metrics.jsonl" "$SLM_METRICS"
  slm=$(python3 -c "
import json, statistics
r = [x for x in (json.loads(l) for l in open('$W/run/metrics.jsonl') if 'tokens_per_s' in l) if x['step'] > 2]
r = [x for x in r if '${PROFILE_DIR:-}' == '' or x['step'] not in (4, 5)]  # the profiled steps
print(f\"{statistics.median(x['tokens_per_s'] for x in r):.0f}\")")
  mfu=$(python3 -c "
import json, statistics
r = [x for x in (json.loads(l) for l in open('$W/run/metrics.jsonl') if 'mfu' in l) if x['step'] > 2]
r = [x for x in r if '${PROFILE_DIR:-}' == '' or x['step'] not in (4, 5)]
print(f\"{100 * statistics.median(x['mfu'] for x in r):.1f}%\")")
  # Peak memory: on a GPU slm's and eager PyTorch's device peaks (max_memory_allocated), else their peak RSS.
  peak=$(python3 -c "
import json
r = [json.loads(l) for l in open('$W/run/metrics.jsonl') if 'peak_mem_bytes' in l]
gpu = max(x.get('gpu_peak_mem_bytes', 0) for x in r)
print(f\"GPU {gpu / 2**30:.2f} GiB (eager $(cat "$W/eager_peak" 2>/dev/null || echo -) GiB)\" if gpu else f\"RSS {max(x['peak_mem_bytes'] for x in r) / 2**30:.2f} GiB (eager $(cat "$W/eager_peak" 2>/dev/null || echo -) GiB)\")")
  echo "round $r ($DEVICE $PREC, L=$L C=$C T=$T V=$V, batch $B micro $MICRO, $THREADS threads): pytorch $("$PY" -c 'import torch; print(torch.__version__)') eager $py tok/s$compiled, slm ($("$SLM" --version)) $slm tok/s (MFU $mfu), peak $peak, ratio to eager $(python3 -c "print(f'{$slm/$py:.2f}')")"
done
if [ -n "${PROFILE_DIR:-}" ]; then  # side by side, then each one's table
  echo; "$SLM" report "$PROFILE_DIR/slm.json" "$PROFILE_DIR/eager.json" $(ls "$PROFILE_DIR/compile.json" 2>/dev/null)
fi
