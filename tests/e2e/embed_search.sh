# tests/e2e/embed_search.sh: corpus -> model -> index -> answers, from the command line:
#  1. `slm embed` of an exported model's documents; its vectors equal an independent Python
#     reference (Debian's python3-torch: GPT-2 forward from model.safetensors, final LayerNorm,
#     mean over the text positions, L2 norm) to 1e-4.
#  2. `slm search`: vector results equal a brute-force ranking of embeddings.npy; lexical (BM25)
#     finds a rare word; hybrid and --queries (with latency) and --json work; hnsw/fp16 indexes;
#     text cut inside characters and invalid UTF-8; -k beyond the index; a 100 KB query.
#  3. --append from the run folder (same weights as the export): the new documents are found.
#  4. Refusals in one line, nothing overwritten: another model's vectors, an existing --out,
#     a missing index, an empty query, a corrupt index file.
#  5. `slm embed eval`: the retrieval table on generated documents, where it must beat chance.
#  6. An index made from a run folder stays usable while the run trains on.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
$PY -c 'import torch, numpy' 2>/dev/null || skip "Debian's python3-torch is not installed"
cd "$WORK"
corpus=$(real_corpus)
make_dataset "$corpus" 512 0.05
"$SLM" train -c /dev/null --set data.dir=data --set run.dir=run --set model.n_layer=2 --set model.n_head=2 \
  --set model.n_embd=64 --set model.block_size=64 --set batch.batch_size=8 --set batch.micro_batch=8 \
  --set optim.lr=3e-3 --set schedule.max_steps=40 --set schedule.warmup_steps=4 --set eval.every=0 \
  --set checkpoint.every=20 --set system.threads=2 2>/dev/null || fail "training"
"$SLM" export run --out hf >/dev/null
# Two document sets cut from the corpus: paragraphs (blank-line separated) 1-400 and 401-500.
python3 - "$corpus" <<'PY'
import os, re, sys
p = sys.argv[1]
text = open(p, encoding="utf-8", errors="replace").read() if os.path.isfile(p) else \
       "\n\n".join(open(os.path.join(p, f), errors="replace").read() for f in sorted(os.listdir(p)) if not f.endswith(".dat"))
# blank lines as `--separator blank` reads them (only spaces, tabs, CRs): no document keeps one
docs = [d.strip() for d in re.split(r"\n[ \t\r]*\n", text) if len(d.strip()) > 40]
open("a.txt", "w").write("\n\n".join(docs[:400]) + "\n")
open("b.txt", "w").write("\n\n".join(docs[400:500]) + "\n")
PY

# 1. Embed, and check against the Python reference.
"$SLM" embed hf a.txt --separator blank -q --out ix > embed.txt || fail "slm embed"
cat embed.txt
grep -q "embed: [0-9]* windows of 400 documents" embed.txt || fail "embed summary"
for f in index.sqlite vectors.faiss embeddings.npy; do [ -s ix/$f ] || fail "index lacks $f"; done
python3 - <<'PY' > entries.txt || fail "reading index.sqlite"
import sqlite3
db = sqlite3.connect("ix/index.sqlite")
docs = db.execute("SELECT doc FROM entries GROUP BY doc HAVING count(*) = 1").fetchall()
kept = 0
for (d,) in docs:
    i, text = db.execute("SELECT id, text FROM entries WHERE doc = ?", (d,)).fetchone()
    if text != text.strip() or kept == 6: continue  # the shell passes it on as an argument
    open(f"entry{i}.txt", "w").write(text)
    print(i)
    kept += 1
PY
[ "$(wc -l < entries.txt)" -ge 3 ] || fail "too few single-window documents"
for i in $(cat entries.txt); do "$SLM" tokenizer encode -t hf "entry$i.txt" > "entry$i.ids"; done
$PY - hf "$HERE" <<'PY' || fail "embeddings differ from the Python reference"
import sys, torch, numpy as np
sys.path.insert(0, sys.argv[2])
from gpt2_ref import load, hidden
W, cfg = load(sys.argv[1])
eot = cfg["eos_token_id"]
def embed(ids):
    v = hidden(W, cfg, ids)[1:].mean(0)  # the leading end-of-text token is left out
    return v / v.norm()
E = np.load("ix/embeddings.npy")
worst = 0
for i in map(int, open("entries.txt").read().split()):
    ids = [eot] + [int(t) for t in open(f"entry{i}.ids").read().split()]
    assert len(ids) <= cfg["n_positions"], "a single-window document is longer than the window"
    worst = max(worst, (embed(ids) - torch.from_numpy(E[i]).double()).abs().max().item())
print(f"max |embedding - Python reference| = {worst:.2e} over {len(open('entries.txt').read().split())} entries")
assert worst < 1e-4
PY

# 2. Search.
# A single-window entry's whole text as the query: its vector is that entry's row of
# embeddings.npy, so brute force over the file must give the same ranking and scores.
qid=$(head -1 entries.txt)
q=$(cat "entry$qid.txt")
"$SLM" search ix "$q" --mode vector -k 5 --json > vec.json || fail "slm search --mode vector"
$PY - "$qid" <<'PY' || fail "vector search differs from brute force"
import json, sys, numpy as np
r = json.loads(open("vec.json").read())["results"]
E = np.load("ix/embeddings.npy").astype(np.float64)
s = E @ E[int(sys.argv[1])]
brute = [int(i) for i in np.argsort(-s, kind="stable")[:5]]
got = [x["id"] for x in r]
print("vector search", got, "brute force", brute)
assert got == brute and all(abs(x["score"] - s[x["id"]]) < 1e-4 for x in r)
PY
rare=$(python3 - <<'PY'
import re, collections
words = re.findall(r"[A-Za-z]{6,}", open("a.txt").read())
c = collections.Counter(w.lower() for w in words)
print(next(w for w, n in sorted(c.items()) if n == 1))
PY
)
"$SLM" search ix "$rare" --mode lexical -k 3 --json > lex.json || fail "lexical search"
python3 -c "
import json, sys; r = json.load(open('lex.json'))['results']
assert r and '$rare' in r[0]['text'].lower(), r" || fail "BM25 did not find the rare word $rare"
"$SLM" search ix "$q" -k 3 > hybrid.txt || fail "hybrid search"
grep -q "^  1\. " hybrid.txt || { cat hybrid.txt; fail "hybrid output"; }
head -c 2000 a.txt | tr '\n' ' ' | fold -w 60 | head -12 > queries.txt
"$SLM" search ix --queries queries.txt --mode vector -k 2 > /dev/null 2> lat.txt || fail "--queries"
grep -q "search: 12 queries, vector mode, [0-9]* entries (flat): latency p50 .* ms, p99 .* ms" lat.txt || { cat lat.txt; fail "latency line"; }
"$SLM" embed hf a.txt --separator blank -q --out ix16 --index hnsw --dtype fp16 > /dev/null || fail "hnsw fp16 index"
# A 40-step model embeds some documents nearly alike (cosine 0.99994 here): fp16 may reorder those.
"$SLM" search ix16 "$q" --mode vector -k 3 --json | python3 -c "
import json, sys; r = json.load(sys.stdin)['results']
assert $qid in [x['id'] for x in r] and r[0]['score'] > 0.999, r" || fail "hnsw/fp16 does not find the entry near the top"
echo "ok: search (vector = brute force, BM25, hybrid, latency, hnsw fp16)"

# 2b. Text that byte-level BPE cuts inside characters (accents, CJK, emoji) and a document with
# invalid UTF-8: with 16-token windows some windows begin or end inside a character. Every
# entry's range falls on character boundaries, --json never fails (invalid bytes come out as
# U+FFFD), and a 100 KB query is answered at once in lexical and hybrid mode.
python3 - <<'PY'
cjk = "東京は日本の首都であり、大阪は商業の中心です。Café naïve Žluťoučký kůň 🙂 emoji 😀 über straße. "
open("mb.txt", "w", encoding="utf-8").write("\n\n".join(cjk * (i % 3 + 1) for i in range(12)) + "\n\n")
open("mb.txt", "ab").write(b"broken \xff\xfe bytes caf\xc3 and \xe6\x9d here, then more text to cut " * 4 + b"\n")
PY
"$SLM" embed hf mb.txt --separator blank --window 16 --stride 7 -q --out ixmb > /dev/null || fail "embed multi-byte text"
for mode in vector lexical hybrid; do
  "$SLM" search ixmb "東京 café bytes" --mode $mode -k 1000000000 --json > mb_$mode.json || fail "search --json ($mode)"
done
python3 - <<'PY' || fail "multi-byte windows"
import json, sqlite3
db = sqlite3.connect("ixmb/index.sqlite")
db.text_factory = bytes
rows = db.execute("SELECT doc, text FROM entries").fetchall()
broken = max(d for d, _ in rows)  # the last document holds the invalid bytes
for d, t in rows:
    assert t and not 0x80 <= t[0] < 0xC0, t[:8]  # never begins inside a character
    if d != broken: t.decode("utf-8")  # strict: whole characters only
n = len(rows)
for mode in ("vector", "lexical", "hybrid"):
    r = json.loads(open(f"mb_{mode}.json", encoding="utf-8").read())["results"]
    assert r and all(x["text"] for x in r), mode
    assert mode == "lexical" or len(r) == n, (mode, len(r), n)  # -k 1e9: every entry
lex = json.loads(open("mb_lexical.json").read())["results"]
assert any("\ufffd" in x["text"] for x in lex), "the invalid bytes should come out as U+FFFD"
print(f"{n} entries on character boundaries; -k 1e9 gives all of them")
PY
python3 -c "import random; random.seed(1); print(' '.join('w%d' % random.randrange(10**6) for _ in range(13000)))" > long.txt
[ "$(wc -c < long.txt)" -gt 100000 ] || fail "long query too short"
for mode in lexical hybrid; do
  timeout 60 "$SLM" search ix --queries long.txt --mode $mode -k 3 > /dev/null 2>&1 || fail "a 100 KB $mode query: not answered within 60 s"
done
# SIGTERM stops a long run of queries like any command (exit 143, one line); it was ignored.
for i in $(seq 20000); do echo "query number $i about the sea"; done > many.txt
"$SLM" search ix --queries many.txt --mode vector -k 1 > answers.txt 2> term.txt &
searcher=$!
for i in $(seq 300); do [ -s answers.txt ] && break; sleep 0.2; done  # answering (a slow start aside)
[ -s answers.txt ] || fail "the search of many queries did not start answering within 60 s"
kill -TERM $searcher
rc=0; wait $searcher || rc=$?
[ $rc -eq 143 ] && grep -q "slm: search: stopped by signal 15" term.txt || { cat term.txt; fail "SIGTERM during a search: exit $rc"; }
echo "ok: multi-byte and invalid UTF-8 (character boundaries, --json), -k beyond the index, a 100 KB query, SIGTERM"

# 3. Append from the run folder (same weights as its export).
before=$($PY -c "import numpy; print(numpy.load('ix/embeddings.npy').shape[0])")
"$SLM" embed run b.txt --separator blank -q --append ix > append.txt || fail "append"
grep -q "ix ($before + [0-9]* entries)" append.txt || { cat append.txt; fail "append summary"; }
line=$(sed -n 3p b.txt)
"$SLM" search ix "$line" --mode lexical -k 1 --json | python3 -c "
import json, sys; r = json.load(sys.stdin)['results'][0]; assert r['source'].endswith('b.txt') and r['id'] >= $before, r" \
  || fail "appended document not found"
echo "ok: append"

# 4. Refusals: one line each, the index unchanged.
sum_before=$(cat ix/* | sha256sum)
expect_error "ix: built with another model" "$SLM" embed run/checkpoints/step_00000020 b.txt --separator blank -q --append ix
expect_error "ix: built with another pooling" "$SLM" embed run b.txt --separator blank -q --append ix --pooling last
expect_error "ix: already exists" "$SLM" embed run b.txt -q --out ix
expect_error "embed: --index chooses a new index's kind (--out); --append ix keeps the kind it was made with" \
  "$SLM" embed run b.txt --separator blank -q --append ix --index hnsw
# (faiss's k-means stopped with an internal error; 2^63 - 1 lists overflowed its factory's stoi)
expect_error "--ivf-lists 100000: ivf needs at least one entry per cluster" \
  "$SLM" embed run b.txt --separator blank -q --out ivfbig --index ivf --ivf-lists 100000
expect_error "--ivf-lists 9223372036854775807: ivf needs at least one entry per cluster" \
  "$SLM" embed run b.txt --separator blank -q --out ivfbig --index ivf --ivf-lists 9223372036854775807
expect_error "nowhere: no such index folder" "$SLM" search nowhere "query"
expect_error "search: empty query" "$SLM" search ix "  "
[ "$(cat ix/* | sha256sum)" = "$sum_before" ] || fail "a refused command changed the index"
cp -r ix broken && printf 'garbage' > broken/vectors.faiss
expect_error "broken/vectors.faiss: not a FAISS index" "$SLM" search broken "query"
echo "ok: refusals"

# 5. Retrieval quality table, on generated documents that each repeat a made-up word: even an
# untrained model's mean-pooled states carry it, so a wrong pairing of vectors and entries (or
# a broken ranking) falls to chance, which the test would catch. Quality on real text is
# measured in bench/studies/embed_eval.sh (docs/embeddings.md).
gen_topics 150 5 6 > topics.txt
"$SLM" embed eval run topics.txt --separator blank --all-docs --query-tokens 16 --json > eval.json || fail "embed eval"
case "$corpus" in */tinyshakespeare.txt) export VECTOR_BAR=3 ;; *) export VECTOR_BAR=0 ;; esac
$PY - <<'PY' || fail "embed eval results"
import json, os
rows = {r["method"]: r for r in json.load(open("eval.json"))}
for name, r in rows.items(): print(f"{name:30s} R@1 {r['recall_at_1']:.3f} R@10 {r['recall_at_10']:.3f} MRR@10 {r['mrr_at_10']:.3f}")
n = rows["random (expected)"]["queries"]
chance = rows["random (expected)"]
assert n == 150 and abs(chance["recall_at_10"] - 10 / n) < 1e-9 and abs(chance["recall_at_1"] - 1 / n) < 1e-9
best = max(rows[f"vector, {p} pooling"]["recall_at_10"] for p in ("mean", "last", "weighted-mean"))
# 4.4x chance after 40 steps on tinyshakespeare (a broken pairing of vectors and entries gives ~1x);
# a model trained on the fallback corpus (fortunes, without ../shared) reaches only 1.6-2.0x, so
# there the wiring is checked above (vectors = brute force, = the Python reference) and here by BM25
bar = float(os.environ["VECTOR_BAR"])
if bar: assert best > bar * chance["recall_at_10"], best
else: print(f"vector recall not checked on this corpus (best R@10 {best:.3f}, chance {chance['recall_at_10']:.3f})")
assert rows["hybrid (mean + BM25, RRF)"]["recall_at_10"] > best  # fusion adds the words' evidence
assert rows["BM25 (SQLite FTS5)"]["recall_at_1"] > 0.9  # the made-up word is in query and target
for r in rows.values(): assert 0 <= r["recall_at_1"] <= r["recall_at_10"] <= 1 and r["mrr_at_10"] <= r["recall_at_10"]
PY
# 6. An index made from a run folder records the run's newest checkpoint, not the folder: it stays
# usable after the run trains on (it was refused as "no longer the model" once it had).
"$SLM" embed run b.txt --separator blank -q --out ixrun > /dev/null || fail "embed from the run folder"
"$SLM" train -c /dev/null --set data.dir=data --set run.dir=run --set model.n_layer=2 --set model.n_head=2 \
  --set model.n_embd=64 --set model.block_size=64 --set batch.batch_size=8 --set batch.micro_batch=8 \
  --set optim.lr=3e-3 --set schedule.max_steps=60 --set schedule.warmup_steps=4 --set eval.every=0 \
  --set checkpoint.every=20 --set system.threads=2 --resume 2>/dev/null || fail "training on"
[ -d run/checkpoints/step_00000060 ] || fail "the run did not train on"
"$SLM" search ixrun "$line" --mode vector -k 1 > /dev/null || fail "the index of a run that trained on was refused"
echo "ok: an index made from a run folder after the run trained on"
echo "embed_search: all passed"
