#!/usr/bin/env bash
# bench/studies/embed_eval.sh: retrieval quality of models trained by slmtrain (docs/embeddings.md).
# For each corpus (tinyshakespeare and wikitext-2 from ../shared/data): a 4096-token tokenizer,
# a dataset with 10% of the documents held out, the tiny preset trained for STEPS steps, then
# `slm embed eval` on the held-out documents: mean, last and weighted-mean pooling, BM25
# (SQLite FTS5), hybrid (RRF) and chance; recall@1, recall@10, MRR@10.
# Usage: bench/studies/embed_eval.sh SLM SHARED_DATA_DIR WORK_DIR [STEPS=600]
set -euo pipefail
SLM=$(realpath "$1") DATA=$(realpath "$2") WORK=$3 STEPS=${4:-600}
TINY=$(dirname "$(realpath "$0")")/../configs/tiny.toml
mkdir -p "$WORK" && cd "$WORK"
for name in tinyshakespeare wikitext-2; do
  corpus=$DATA/tinyshakespeare.txt sep=blank  # documents: speeches; wikitext's paragraphs are lines
  [ $name = wikitext-2 ] && corpus=$DATA/wikitext-2/valid.txt sep=line
  if [ ! -d $name/run/checkpoints ]; then
    mkdir -p $name
    "$SLM" tokenizer train "$corpus" --vocab-size 4096 --out $name/tok -q > /dev/null
    "$SLM" data prepare "$corpus" -t $name/tok --separator $sep --val-fraction 0.1 --seed 7 --out $name/data -q > /dev/null
    "$SLM" train -c "$TINY" --set data.dir=$name/data --set run.dir=$name/run \
      --set schedule.max_steps="$STEPS" --set eval.every=0 --set log.every=100 2> $name/train.log
  fi
  echo "== $name: $(grep -o 'loss [0-9.]*' $name/train.log | tail -1) after $STEPS steps"
  "$SLM" embed eval $name/run "$corpus" --separator $sep --val-fraction 0.1 --seed 7 --query-tokens 32 \
    --max-docs 1000
done
