# tests/e2e/prepare_tinyshakespeare.sh: the whole pipeline on a real corpus:
# `slm tokenizer train` + `slm data prepare` + `slm data info`, then the shards decode back to the
# corpus's documents exactly.
source "$(dirname "$0")/lib.sh"
corpus=${SHARED:+$SHARED/tinyshakespeare.txt}
[ -f "${corpus:-}" ] || skip "../shared/data/tinyshakespeare.txt not present"
cd "$WORK"
"$SLM" tokenizer train "$corpus" --vocab-size 8192 --min-frequency 2 --out tok >/dev/null
"$SLM" data prepare "$corpus" -t tok --separator blank --val-fraction 0.1 --seed 7 \
  --shard-tokens 100000 --out ds > prep.txt
cat prep.txt
"$SLM" data info ds -t tok > info.txt
grep -q "all .* valid" info.txt || fail "data info"
python3 - "$corpus" ds <<'PY' || fail "shard contents"
import json, struct, sys
corpus, ds = sys.argv[1], sys.argv[2]
m = json.load(open(f"{ds}/manifest.json"))
vocab = json.load(open("tok/vocab.json"))
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs: bs.append(b); cs.append(256 + n); n += 1
dec = dict(zip(map(chr, cs), bs))
inv = {i: t for t, i in vocab.items()}
eot = m["tokenizer"]["eot_id"]
def docs(split):
    toks = []
    for s in m["splits"][split]["shards"]:
        raw = open(f"{ds}/{s['file']}", "rb").read()
        magic, ver, ntok = struct.unpack("<3i", raw[:12])
        assert (magic, ver) == (20240520, 1) and len(raw) == 1024 + 2 * ntok == 1024 + 2 * s["tokens"]
        toks += struct.unpack(f"<{ntok}H", raw[1024:])
    out, cur = [], []
    assert toks[0] == eot
    for t in toks[1:] + [eot]:
        if t == eot: out.append(bytes(cur)); cur = []
        else: cur += [dec[c] for c in inv[t]]
    return out
train, val = docs("train"), docs("val")
text = open(corpus, "rb").read().decode()
want = [p.strip("\n") for p in text.split("\n\n") if p.strip("\n")]
got = sorted(d.decode() for d in train + val)
assert len(val) == round(0.1 * len(want)), (len(val), len(want))
assert got == sorted(want), "documents differ"
print(f"ok: {len(train)} train + {len(val)} val documents decode exactly")
PY
echo "prepare_tinyshakespeare: all passed"
