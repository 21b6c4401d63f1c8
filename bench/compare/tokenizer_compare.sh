#!/usr/bin/env bash
# bench/compare/tokenizer_compare.sh: side-by-side encode speed, one core, same file, same vocab.json +
# merges.txt: `slm tokenizer encode` against OpenAI's GPT-2 encoder algorithm in Python (the
# reference used by tests/e2e/gpt2_reference.sh; Debian's python3-regex). Also checks that the
# ids are identical. Usage: bench/compare/tokenizer_compare.sh SLM_BINARY CORPUS [VOCAB]
set -euo pipefail
SLM=$1 CORPUS=$2 VOCAB=${3:-32768}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
"$SLM" tokenizer train "$CORPUS" --vocab-size "$VOCAB" --out "$W/tok" -q
t0=$(date +%s.%N); taskset -c 0 "$SLM" tokenizer encode -t "$W/tok" "$CORPUS" > "$W/slm.txt"; t1=$(date +%s.%N)
# The reference script is the heredoc inside tests/e2e/gpt2_reference.sh.
sed -n "/<<'PY'$/,/^PY$/p" "$(dirname "$0")/../../tests/e2e/gpt2_reference.sh" | sed '1d;$d' > "$W/ref.py"
t2=$(date +%s.%N); taskset -c 0 /usr/bin/python3 "$W/ref.py" "$W/tok" "$CORPUS" > "$W/ref.txt"; t3=$(date +%s.%N)
cmp -s "$W/slm.txt" "$W/ref.txt" && same=identical || same=DIFFERENT
mb=$(stat -c %s "$CORPUS")
awk -v mb="$mb" -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v same="$same" 'BEGIN {
  s = b - a; p = d - c;
  printf "slm encode (incl. load + output): %.2f s = %.2f MB/s\n", s, mb / 1e6 / s;
  printf "python GPT-2 reference:           %.2f s = %.2f MB/s\n", p, mb / 1e6 / p;
  printf "ratio %.1fx; ids %s\n", p / s, same }'
