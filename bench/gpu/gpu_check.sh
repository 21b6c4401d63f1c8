#!/usr/bin/env bash
# bench/gpu/gpu_check.sh: slm's CUDA paths on one GPU, end to end, for a session that is lent one
# (none of this runs in CI). Prints one line per check; logs and run folders go to OUT.
#  1. The tiny preset for 20 steps on the CPU in fp32 and on the GPU in fp32, auto precision (bf16
#     on compute capability >= 8), fp16 with dynamic loss scaling, and with activation recomputation:
#     per-step losses against the CPU run.
#  2. Stop at step 10 and --resume on the GPU: steps 11-20 against the straight run, without and
#     with dropout (the GPU generator's state is in the checkpoint: the same masks, the same losses).
#  3. Process groups: world 1 under NCCL; 2 ranks on one GPU refused in one line under NCCL, and
#     dp 2 / ZeRO 2 / pp 2 / tp 2 under Gloo with CUDA tensors, losses against the single GPU.
#  4. eval and generate of the GPU-trained run.
#  5. `slm profile` of gpt2 in bf16 (the planner's compute profile); 2 ranks sharing the GPU
#     under Gloo time a block split over tp 2.
#  6. `slm embed` on the GPU and on the CPU of the GPU-trained run (TEXT): the same vectors, and
#     windows/s each; `slm embed eval` on the GPU; `slm search` with the GPU embedding queries.
#  7. Throughput against PyTorch on the same GPU (bench/compare/train_compare.sh, DEVICE=cuda): the tiny
#     preset, gpt2 (124M) and gpt2-medium (350M) in bf16; torch.compile beside eager for gpt2
#     (COMPILE=0 leaves it out).
#  8. The planner on this GPU: `slm train --set parallel.plan=auto` of gpt2 (bf16, batch 64 x 1024):
#     the profile at start, the plan, its predicted step time against the measured steps; and
#     `slm plan auto` for one such GPU from the device table and from that profile (DEVICE_NAME, else
#     nvidia-smi's name).
# Usage: bench/gpu/gpu_check.sh SLM DATA_DIR OUT_DIR TEXT   (DATA_DIR: a prepared dataset, with the
# tokenizer folder its manifest names beside it (section 4 needs it); GPT-2's
# vocabulary size 50257 makes the gpt2 rows the real shapes: a tokenizer trained with
# --min-frequency 1 on a few MB of text has it; TEXT: a text file to embed).
#  9. Where slm's gpt2 step differs from eager PyTorch's: `slm profile` of one block and the head at
#     micro-batch 16 beside the same parts in PyTorch (bench/gpu/gpu_parts.py), and the medians of a
#     12-step `slm train`'s metrics (what the step's time is spent on besides the parts).
# 10. A traced run (log.trace_steps) on the GPU: gpt2 (bf16, batch 64 x 1024) and pp 2 on 2 ranks
#     sharing the GPU under Gloo; `slm report`'s per-rank table (each span waits for the device).
# SECTIONS="1 2 3 4 5 6 7 8 9 10" picks the checks that run.
set -uo pipefail
SLM=$(realpath "$1") DATA=$(realpath "$2") OUT=$3 TEXT=$(realpath "$4")
mkdir -p "$OUT"
BENCH=$(dirname "$(realpath "$0")")
export PYTHONUNBUFFERED=1
SECTIONS=" ${SECTIONS:-1 2 3 4 5 6 7 8 9 10} "
on() { [[ "$SECTIONS" == *" $1 "* ]]; }
T=(-c /dev/null --set data.dir="$DATA" --set model.n_layer=4 --set model.n_head=4 --set model.n_embd=256
   --set model.block_size=256 --set batch.batch_size=16 --set batch.micro_batch=8 --set schedule.max_steps=20
   --set schedule.warmup_steps=5 --set eval.every=0 --set log.every=5 --set checkpoint.every=0)
cd "$BENCH/.."
train() {  # NAME ARGS...: one run; prints its precision line or its error
  local name=$1; shift
  timeout 300 "$SLM" train "${T[@]}" --set run.dir="$OUT/$name" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: rc $rc; $(grep -m1 -o -E '(cpu|cuda) (fp32|bf16|fp16) \([^)]*\)|error.*' "$OUT/$name.log")"
}
launch() {  # NAME N ARGS...: N ranks on this host
  local name=$1 n=$2; shift 2
  timeout 300 "$SLM" launch -n "$n" -- "$SLM" train "${T[@]}" --set run.dir="$OUT/$name" --set dist.timeout_s=60 "$@" \
    > "$OUT/$name.log" 2>&1
  echo "$name: rc $?; $(grep -m1 -E 'error|refus' "$OUT/$name.log")"
}
compare() {  # REF RUN [FROM_STEP]: max per-step loss difference
  python3 - "$OUT/$1" "$OUT/$2" "${3:-0}" <<'PY'
import json, sys
rows = lambda d: {r["step"]: r["loss"] for r in map(json.loads, open(d + "/metrics.jsonl")) if "loss" in r}
try:
    a, b = rows(sys.argv[1]), rows(sys.argv[2])
except OSError as e:
    sys.exit(print(f"  {sys.argv[2]}: no metrics ({e.strerror})"))
steps = [s for s in b if s > int(sys.argv[3]) and s in a]
d = max(abs(a[s] - b[s]) for s in steps)
print(f"  {sys.argv[2].split('/')[-1]} vs {sys.argv[1].split('/')[-1]}: {len(steps)} steps, "
      f"max |loss diff| {d:.2e}; last loss {b[max(b)]:.4f} vs {a[max(a)]:.4f}")
PY
}
echo "== device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader); slm $("$SLM" --version)"
# The CPU's BLAS first: section 1's CPU reference run ran 30x slow on a lent machine whose carried
# libblas.so.3 was the reference BLAS and took LibTorch's products (2026-11-27).
timeout 60 "$SLM" doctor 2>&1 | grep -E "^(ok|warn|fail) +blas"
if on 1; then
echo "== 1. precisions"
train cpu-fp32 --set system.device=cpu --set system.precision=fp32
train cuda-fp32 --set system.device=cuda --set system.precision=fp32
train cuda-auto --set system.device=auto
train cuda-fp16 --set system.device=cuda --set system.precision=fp16
train cuda-recompute --set system.device=cuda --set system.precision=bf16 --set model.recompute=true
for r in cuda-fp32 cuda-auto cuda-fp16; do compare cpu-fp32 $r; done
compare cuda-auto cuda-recompute
fi
if on 2; then
echo "== 2. resume"
train cuda-split --set system.device=cuda --set system.precision=fp32 --stop-at 10
train cuda-split --set system.device=cuda --set system.precision=fp32 --resume
grep -m1 resumed "$OUT/cuda-split.log"
compare cuda-fp32 cuda-split 10
D=(--set system.device=cuda --set system.precision=fp32 --set model.dropout=0.1)
train cuda-dropout "${D[@]}"
train cuda-dropout-split "${D[@]}" --stop-at 10
train cuda-dropout-split "${D[@]}" --resume
compare cuda-dropout cuda-dropout-split 10
fi
if on 3; then
echo "== 3. process groups"
launch nccl-1 1 --set system.device=cuda --set system.precision=fp32
compare cuda-fp32 nccl-1
launch nccl-2 2 --set system.device=cuda --set system.precision=fp32
for p in "dp2 parallel.dp=2" "zero2 parallel.zero=2" "pp2 parallel.pp=2" "tp2 parallel.tp=2"; do
  set -- $p
  launch gloo-$1 2 --set system.device=cuda --set system.precision=fp32 --set dist.backend=gloo --set "$2"
  compare cuda-fp32 gloo-$1
done
fi
if on 4; then
echo "== 4. eval / generate"
timeout 120 "$SLM" eval "$OUT/cuda-auto" --batches 4 2>&1 | tail -1
timeout 120 "$SLM" generate "$OUT/cuda-auto" -p "The" -n 12 --seed 3 2>&1 | tail -1
fi
if on 5; then
echo "== 5. compute profile of gpt2 on this GPU (what the planner reads)"
timeout 300 "$SLM" profile -c configs/gpt2.toml --set data.dir="$DATA" --set system.precision=bf16 --micro-batches 4,8,16 \
  -o "$OUT/profile-gpt2.json" 2>&1 | tail -3
echo "  2 ranks on this GPU under Gloo: the pair's block split over tp 2 (RankProfile::tp2_*)"
timeout 300 "$SLM" launch -n 2 -- "$SLM" profile "${T[@]}" --set system.device=cuda --set system.precision=bf16 \
  --set dist.backend=gloo --micro-batches 2,8 -o "$OUT/profile-tp2.json" > "$OUT/profile-tp2.log" 2>&1
echo "  rc $?; $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["ranks"]; print("tp2 fwd+bwd ms:", [[round((f+b)*1e3,2) for f,b in zip(q["tp2_fwd_s"],q["tp2_bwd_s"])] for q in r], "block:", [[round((f+b)*1e3,2) for f,b in zip(q["block_fwd_s"],q["block_bwd_s"])] for q in r], "alone:", [q["tp2_alone_s"] for q in r])' "$OUT/profile-tp2.json" 2>&1 | tail -1)"
fi
if on 6; then
echo "== 6. embeddings on the GPU"
for d in cuda cpu; do
  timeout 300 "$SLM" embed "$OUT/cuda-auto" "$TEXT" --separator blank --window 128 --device $d -q --out "$OUT/ix-$d" 2>&1 | tail -1
done
python3 -c "
import numpy as np
a, b = np.load('$OUT/ix-cuda/embeddings.npy'), np.load('$OUT/ix-cpu/embeddings.npy')
print(f'  {a.shape[0]} vectors; max |cuda - cpu| = {np.abs(a - b).max():.2e}')"
timeout 300 "$SLM" embed eval "$OUT/cuda-auto" "$TEXT" --separator blank --val-fraction 0.05 --seed 7 --device cuda 2>&1 | tail -8
head -c 3000 "$TEXT" | tr '\n' ' ' | fold -w 60 | head -40 > "$OUT/queries.txt"
timeout 300 "$SLM" search "$OUT/ix-cuda" --queries "$OUT/queries.txt" --mode vector --device cuda -k 5 2>&1 >/dev/null | tail -1
timeout 300 "$SLM" search "$OUT/ix-cuda" --queries "$OUT/queries.txt" --mode hybrid --device cuda -k 5 2>&1 >/dev/null | tail -1
fi
if on 7; then
echo "== 7. throughput against PyTorch on this GPU"
export PY=python3 DEVICE=cuda
bash bench/compare/train_compare.sh "$SLM" "$DATA" bf16 10 1
L=12 C=768 H=12 T=1024 B=64 MICRO=16 COMPILE=${COMPILE:-1} bash bench/compare/train_compare.sh "$SLM" "$DATA" bf16 10 1
L=24 C=1024 H=16 T=1024 B=64 MICRO=16 bash bench/compare/train_compare.sh "$SLM" "$DATA" bf16 6 1
L=12 C=768 H=12 T=1024 B=32 MICRO=16 bash bench/compare/train_compare.sh "$SLM" "$DATA" fp32 6 1
fi
if on 8; then
echo "== 8. the planner on this GPU: gpt2, bf16, batch 64 x 1024"
G=(-c configs/gpt2.toml --set data.dir="$DATA" --set batch.batch_size=64
   --set batch.micro_batch=16 --set schedule.max_steps=12 --set schedule.warmup_steps=2 --set eval.every=0
   --set log.every=1 --set checkpoint.every=0 --set system.precision=bf16 --set system.device=cuda)
timeout 300 "$SLM" train "${G[@]}" --set parallel.plan=auto --set run.dir="$OUT/plan-auto" > "$OUT/plan-auto.log" 2>&1
echo "plan-auto: rc $?"; grep -E '^(plan auto|  predicted|warning)' "$OUT/plan-auto.log"
python3 - "$OUT/plan-auto/metrics.jsonl" <<'PY'
import json, statistics, sys
r = [json.loads(l) for l in open(sys.argv[1]) if '"step_s"' in l][2:]
m, p = statistics.median(x["step_s"] for x in r), r[-1]["predicted_step_s"]
print(f"  measured {m:.4f} s/step (median of {len(r)} after 2), predicted {p:.4f} s: {100 * (p / m - 1):+.1f}%")
PY
DEVICE_NAME=${DEVICE_NAME:-$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -m1 -o -E 'H100|H200|A100|A30|A40|L4|T4' || echo H100)}
printf '[[site]]\nname = "gpu"\nranks = 1\ndevice = "%s"\n' "$DEVICE_NAME" > "$OUT/one-gpu.toml"
timeout 300 "$SLM" profile "${G[@]}" --micro-batches 1,2,4,8,16,32,64 -o "$OUT/profile-plan.json" 2>&1 | grep 'rank 0'
echo "  slm plan auto, $DEVICE_NAME from the device table:"
timeout 120 "$SLM" plan auto "${G[@]}" --cluster "$OUT/one-gpu.toml" --top 3 2>&1 | head -8
echo "  slm plan auto, $DEVICE_NAME from the profile:"
timeout 120 "$SLM" plan auto "${G[@]}" --cluster "$OUT/one-gpu.toml" --profile "$OUT/profile-plan.json" --top 3 2>&1 | head -8
fi
if on 9; then
echo "== 9. gpt2's parts in slm and in eager PyTorch (bf16, micro-batch 16 x 1024)"
timeout 300 "$SLM" profile -c configs/gpt2.toml --set data.dir="$DATA" --set system.precision=bf16 --micro-batches 16 \
  -o "$OUT/profile-parts.json" 2>&1 | grep 'rank 0'
V=$(python3 -c "import json; v=json.load(open('$DATA/manifest.json'))['tokenizer']['vocab_size']; print((v+127)//128*128)")
timeout 300 python3 bench/gpu/gpu_parts.py 768 12 1024 "$V" 16 cuda
timeout 300 "$SLM" train -c configs/gpt2.toml --set data.dir="$DATA" --set batch.batch_size=64 --set batch.micro_batch=16 \
  --set schedule.max_steps=12 --set schedule.warmup_steps=2 --set eval.every=0 --set log.every=1 --set checkpoint.every=0 \
  --set system.precision=bf16 --set system.device=cuda --set run.dir="$OUT/parts-train" > "$OUT/parts-train.log" 2>&1
python3 - "$OUT/parts-train/metrics.jsonl" <<'PY'
import json, statistics, sys
r = [json.loads(l) for l in open(sys.argv[1]) if '"step_s"' in l][2:]
keys = [k for k in r[0] if k.endswith("_s") or k == "tokens_per_s"]
print("  slm train medians: " + ", ".join(f"{k} {statistics.median(x[k] for x in r if k in x):.4g}" for k in keys))
PY
fi
if on 10; then
echo "== 10. a traced step on the GPU (log.trace_steps = 3): gpt2 in bf16, then pp 2 on 2 ranks under Gloo"
timeout 300 "$SLM" train -c configs/gpt2.toml --set data.dir="$DATA" --set batch.batch_size=64 --set batch.micro_batch=16 \
  --set schedule.max_steps=6 --set schedule.warmup_steps=2 --set eval.every=0 --set log.every=1 --set checkpoint.every=0 \
  --set system.precision=bf16 --set system.device=cuda --set log.trace_steps=3 --set run.dir="$OUT/trace-gpt2" \
  > "$OUT/trace-gpt2.log" 2>&1
echo "trace-gpt2: rc $?; $(python3 -c "import json; s=[json.loads(l)['step_s'] for l in open('$OUT/trace-gpt2/metrics.jsonl') if 'step_s' in l]; print('step_s', [round(x, 4) for x in s])")"
"$SLM" report "$OUT/trace-gpt2" | grep -A4 '^| rank | steps'
launch trace-pp2 2 --set system.device=cuda --set dist.backend=gloo --pp 2 --set log.trace_steps=3
"$SLM" report "$OUT/trace-pp2" | grep -A4 '^| rank | steps'
fi
