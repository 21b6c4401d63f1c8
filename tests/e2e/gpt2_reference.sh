# tests/e2e/gpt2_reference.sh: `slm tokenizer encode` gives exactly the ids of OpenAI's original
# GPT-2 encoder algorithm (encoder.py: the `regex` pattern, bytes_to_unicode, bpe ranks),
# re-implemented here in Python, on the same vocab.json/merges.txt.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import regex' 2>/dev/null || skip "Debian's python3-regex is not installed"
cd "$WORK"
corpus=${SHARED:+$SHARED/tinyshakespeare.txt}
if [ ! -f "${corpus:-}" ]; then
  corpus=$WORK/gen.txt
  for i in $(seq 500); do echo "Line $i: it's the quick brown fox's café, 東京 — naïve ${i}9.5%  x"; done > "$corpus"
fi
extra=$WORK/extra.txt
printf "Tricky: don't  stop\n\n\n   spaces\t\ttabs 1234567 🙂🙂 ÀÉÎ 'll 've '' end   " > "$extra"
"$SLM" tokenizer train "$corpus" --vocab-size 3000 --out tok -q >/dev/null
for f in "$corpus" "$extra"; do
  "$SLM" tokenizer encode -t tok "$f" > slm_ids.txt
  $PY - tok "$f" > ref_ids.txt <<'PY'
import json, sys, regex as re
tok, path = sys.argv[1], sys.argv[2]
def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~")+1)) + list(range(ord("¡"), ord("¬")+1)) + list(range(ord("®"), ord("ÿ")+1))
    cs, n = bs[:], 0
    for b in range(2**8):
        if b not in bs: bs.append(b); cs.append(2**8+n); n += 1
    return dict(zip(bs, map(chr, cs)))
encoder = json.load(open(f"{tok}/vocab.json", encoding="utf-8"))
merges = open(f"{tok}/merges.txt", encoding="utf-8").read().split("\n")[1:-1]
ranks = {tuple(m.split()): i for i, m in enumerate(merges)}
byte_encoder = bytes_to_unicode()
pat = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
cache = {}
def bpe(token):
    if token in cache: return cache[token]
    word = tuple(token)
    while len(word) > 1:
        pairs = set(zip(word, word[1:]))
        bigram = min(pairs, key=lambda p: ranks.get(p, float("inf")))
        if bigram not in ranks: break
        first, second = bigram
        new, i = [], 0
        while i < len(word):
            try: j = word.index(first, i)
            except ValueError: new.extend(word[i:]); break
            new.extend(word[i:j]); i = j
            if word[i] == first and i < len(word)-1 and word[i+1] == second: new.append(first+second); i += 2
            else: new.append(word[i]); i += 1
        word = tuple(new)
    cache[token] = word
    return word
text = open(path, encoding="utf-8").read()
ids = []
for t in re.findall(pat, text):
    ids.extend(encoder[b] for b in bpe("".join(byte_encoder[b] for b in t.encode("utf-8"))))
print(" ".join(map(str, ids)))
PY
  cmp slm_ids.txt ref_ids.txt || fail "ids differ from the GPT-2 reference on $f"
  echo "ok: $(wc -w < slm_ids.txt) ids identical on $(basename "$f")"
done
echo "gpt2_reference: all passed"
