#!/usr/bin/env bash
# bench/studies/embed_tune.sh: retrieval quality before and after contrastive tuning (docs/embeddings.md).
# Needs the pretrained models of bench/studies/embed_eval.sh in WORK_DIR (it runs that first when they
# are missing). For each corpus: `slm embed tune` (STEPS steps of BATCH pairs, on the training
# documents only), then `slm embed eval` of the pretrained and the tuned model on the same
# held-out documents (10%, seed 7): mean pooling, BM25, hybrid, chance.
# Usage: bench/studies/embed_tune.sh SLM SHARED_DATA_DIR WORK_DIR [STEPS=150] [BATCH=32] [LR=3e-4] [RANKS=1] [WINDOW=128]
# CORPORA (environment) picks corpora: "tinyshakespeare wikitext-2" by default; THREADS per rank
# (default: cores / ranks; give 1 while another job shares the cores: OpenMP oversubscribed is ~8x slower).
set -euo pipefail
SLM=$(realpath "$1") DATA=$(realpath "$2") WORK=$3 STEPS=${4:-150} BATCH=${5:-32} LR=${6:-3e-4} RANKS=${7:-1} WINDOW=${8:-128}
HERE=$(dirname "$(realpath "$0")")
[ -d "$WORK/wikitext-2/run/checkpoints" ] || [ -n "${CORPORA:-}" ] || bash "$HERE/embed_eval.sh" "$SLM" "$DATA" "$WORK" > /dev/null
cd "$WORK"
for name in ${CORPORA:-tinyshakespeare wikitext-2}; do
  corpus=$DATA/tinyshakespeare.txt sep=blank
  [ $name = wikitext-2 ] && corpus=$DATA/wikitext-2/valid.txt sep=line
  out=$name/tuned-s$STEPS-b$BATCH-lr$LR-w$WINDOW-r$RANKS
  launch=()
  [ "$RANKS" -gt 1 ] && launch=("$SLM" launch -n "$RANKS" --)
  start=$(date +%s.%N)
  "${launch[@]}" "$SLM" embed tune $name/run "$corpus" --separator $sep --val-fraction 0.1 --seed 7 \
    --steps "$STEPS" --batch "$BATCH" --lr "$LR" --window "$WINDOW" --threads "${THREADS:-0}" --warmup $((STEPS / 10)) --save-every 0 --out "$out" 2> "$out.log" \
    || { cat "$out.log"; exit 1; }
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  echo "== $name: tuned $STEPS steps x $BATCH pairs in ${secs}s on $RANKS rank(s); $(grep 'tune step' "$out.log" | tail -1)"
  for m in $name/run "$out"; do
    echo "-- $m"
    "$SLM" embed eval "$m" "$corpus" --separator $sep --val-fraction 0.1 --seed 7 --query-tokens 32 --max-docs 1000 \
      --pooling mean | tail -n +2
  done
done
