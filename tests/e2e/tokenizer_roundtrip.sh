# tests/e2e/tokenizer_roundtrip.sh: encode -> decode is the identity through the command line,
# for random bytes (invalid UTF-8 included) and real text; train is deterministic.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
corpus=${SHARED:+$SHARED/tinyshakespeare.txt}
[ -f "${corpus:-}" ] || { corpus=$WORK/gen.txt; for i in $(seq 300); do echo "line $i: the quick brown fox, café, 東京"; done > "$corpus"; }
"$SLM" tokenizer train "$corpus" --vocab-size 2000 --out tok -q >/dev/null
"$SLM" tokenizer train "$corpus" --vocab-size 2000 --out tok_again --threads 1 -q >/dev/null
cmp tok/merges.txt tok_again/merges.txt || fail "training is not deterministic across thread counts"
cmp tok/vocab.json tok_again/vocab.json || fail "vocab differs across runs"
head -c 200000 /dev/urandom > random.bin
for f in random.bin "$corpus"; do
  "$SLM" tokenizer encode -t tok "$f" > ids.txt
  "$SLM" tokenizer decode -t tok ids.txt > back.bin
  cmp "$f" back.bin || fail "round trip of $f"
  "$SLM" tokenizer encode -t tok --binary "$f" > ids.u32
  [ $(( $(stat -c %s ids.u32) / 4 )) -eq "$(wc -w < ids.txt)" ] || fail "--binary id count"
done
eot=$("$SLM" tokenizer info tok | awk '$1 == "special" && $3 == "<|endoftext|>" {print $2}')
[ -n "$eot" ] || fail "tokenizer info lists no <|endoftext|>"
printf 'a<|endoftext|>b' | "$SLM" tokenizer encode -t tok --allow-special - | grep -qw "$eot" \
  || fail "--allow-special should produce <|endoftext|> = $eot"
printf 'a<|endoftext|>b' | "$SLM" tokenizer encode -t tok - | grep -qw "$eot" \
  && fail "without --allow-special the special's text is ordinary text"
echo "tokenizer_roundtrip: all passed"
