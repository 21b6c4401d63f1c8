#!/usr/bin/env bash
# bench/train_compare.sh: tokens/s of `slm train` vs the same model in Python PyTorch
# (bench/train_reference.py), same shape, batch, precision and thread count, runs alternating.
# Both get the same process settings slm applies to itself: OPENBLAS_CORETYPE, OMP_WAIT_POLICY,
# ATEN_CPU_CAPABILITY and the malloc thresholds (for Python through GLIBC_TUNABLES).
# Usage: bench/train_compare.sh SLM DATA_DIR [PRECISION=fp32] [STEPS=8] [ROUNDS=2]
set -euo pipefail
SLM=$1 DATA=$2 PREC=${3:-fp32} STEPS=${4:-8} ROUNDS=${5:-2}
L=4 C=256 H=4 T=256 B=16 MICRO=8 THREADS=$(nproc)
V=$(python3 -c "import json,sys; print(json.load(open('$DATA/manifest.json'))['tokenizer']['vocab_size'])")
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} ATEN_CPU_CAPABILITY=avx512
export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
for r in $(seq "$ROUNDS"); do
  py=$(/usr/bin/python3 "$(dirname "$0")/train_reference.py" $L $C $H $T $V $B $MICRO "$STEPS" "$PREC" "$THREADS")
  rm -rf "$W/run"
  "$SLM" train -c /dev/null --set data.dir="$DATA" --set run.dir="$W/run" --set model.n_layer=$L \
    --set model.n_embd=$C --set model.n_head=$H --set model.block_size=$T --set batch.batch_size=$B \
    --set batch.micro_batch=$MICRO --set schedule.max_steps=$((STEPS + 2)) --set eval.every=0 \
    --set checkpoint.every=0 --set system.precision="$PREC" --set system.threads="$THREADS" 2>/dev/null
  slm=$(python3 -c "
import json, statistics
r = [json.loads(l)['tokens_per_s'] for l in open('$W/run/metrics.jsonl') if 'tokens_per_s' in l][2:]
print(f'{statistics.median(r):.0f}')")
  echo "round $r ($PREC, L=$L C=$C T=$T V=$V, batch $B micro $MICRO, $THREADS threads): pytorch $py tok/s, slm $slm tok/s, ratio $(python3 -c "print(f'{$slm/$py:.2f}')")"
done
