# tests/e2e/hf_transformers.sh: the real ecosystem round trips, with PyPI's transformers (the
# Python of SLM_PYTHON, the venv scripts/setup.sh makes; skipped without it).
#  export: GPT2LMHeadModel.from_pretrained loads what `slm export` writes, its logits equal slm's
#    (tests/tools/dump_logits) to 1e-4; GPT2TokenizerFast and GPT2Tokenizer give the ids of
#    `slm tokenizer encode` on held-out texts; greedy model.generate = `slm generate --temperature 0`.
#  import: a GPT2LMHeadModel made by transformers (random weights, tiny config, saved with
#    save_pretrained beside slm's tokenizer) is read by `slm eval`/dump_logits (same logits), and
#    training starts from it (init.from): at lr 1e-12 the trained model still equals it, on one
#    process and as a 2-stage pipeline; with a real lr the loss starts at its loss and falls.
#  bad input: a truncated model.safetensors, another tokenizer, a non-GPT-2 config.
source "$(dirname "$0")/lib.sh"
DUMP=$3
PY=${SLM_PYTHON:-}
[ -n "$PY" ] && "$PY" -c 'import transformers, torch' 2>/dev/null || skip "SLM_PYTHON has no transformers (SLM_TORCH=pip scripts/setup.sh --venv makes one)"
cd "$WORK"
corpus=$(real_corpus)
make_dataset "$corpus" 400 0.05
# Held-out texts: wikitext-2's test split and the corpus's last 20 kB (or generated text).
if [ -n "$SHARED" ] && [ -f "$SHARED/wikitext-2/wiki.test.tokens" ]; then head -c 60000 "$SHARED/wikitext-2/wiki.test.tokens" > held1.txt
else gen_corpus 300 > held1.txt; fi
tail -c 20000 "$corpus" > held2.txt
printf 'Tabs\tand  double  spaces, émigrés 123 4567 — “quotes” and\nnewlines\n\n\n' > held3.txt
COMMON=(-c /dev/null --set system.precision=fp32 --set data.dir=data --set model.n_layer=2 --set model.n_head=2 --set model.n_embd=32
        --set model.block_size=32 --set batch.batch_size=4 --set batch.micro_batch=4 --set eval.every=0
        --set schedule.warmup_steps=1)
"$SLM" train "${COMMON[@]}" --set run.dir=run --set optim.lr=1e-2 --set schedule.max_steps=10 2>/dev/null
"$SLM" export run --out hf >/dev/null

# same_greedy DIR: greedy `slm generate` from DIR (an exported or imported folder) = model.generate.
same_greedy() {
  "$SLM" generate "$1" -p "The fox" -n 20 --temperature 0 > "$1.gen" || fail "slm generate $1"
  "$PY" - "$1" <<'PY' || fail "$1: greedy generation differs"
import sys, torch, transformers as tf
d = sys.argv[1]
m, tok = tf.GPT2LMHeadModel.from_pretrained(d).eval(), tf.GPT2TokenizerFast.from_pretrained(d)
eot = m.config.eos_token_id
prompt = [eot] + tok.encode("The fox")
out = m.generate(torch.tensor([prompt]), max_new_tokens=20, do_sample=False, eos_token_id=eot, pad_token_id=eot)
new = out[0][len(prompt):].tolist()
if eot in new: new = new[:new.index(eot)]
theirs = "The fox" + tok.decode(new)
# slm writes the raw bytes (a random model ends tokens mid-character); decode them as transformers does
mine = open(d + ".gen", "rb").read()[:-1].decode("utf-8", errors="replace")  # slm adds a final newline
print(f"generate {d}: greedy {len(new)} tokens, {len(set(new))} distinct, equal: {theirs == mine}")
assert theirs == mine, f"slm {mine!r} vs transformers {theirs!r}"
PY
}

# --- export: model, tokenizers, generation -----------------------------------------------------
ids="5 17 200 42 399 0 7 7 7 100 250 3"
"$DUMP" run $ids > slm_logits.json
for f in held1.txt held2.txt held3.txt; do "$SLM" tokenizer encode -t tok "$f" > "$f.ids"; done
"$PY" - hf "$ids" <<'PY' || fail "export round trip"
import json, sys, torch, transformers as tf
d, ids = sys.argv[1], [int(x) for x in sys.argv[2].split()]
m = tf.GPT2LMHeadModel.from_pretrained(d).eval()
with torch.no_grad(): logits = m(torch.tensor([ids])).logits[0].double()
mine = torch.tensor(json.load(open("slm_logits.json")), dtype=torch.float64)
diff = (logits - mine).abs().max().item()
print(f"export: transformers {tf.__version__} logits max |diff| {diff:.2e} (scale {logits.abs().max().item():.1f})")
assert logits.shape == mine.shape and diff < 1e-4
for cls in (tf.GPT2TokenizerFast, tf.GPT2Tokenizer):
    tok = cls.from_pretrained(d)
    for f in ("held1.txt", "held2.txt", "held3.txt"):
        text = open(f, encoding="utf-8").read()
        want = [int(x) for x in open(f + ".ids").read().split()]
        got = tok.encode(text)
        assert got == want, f"{cls.__name__} on {f}: first difference at {next(i for i, (a, b) in enumerate(zip(got + [-1], want + [-2])) if a != b)}"
    print(f"export: {cls.__name__} ({type(tok).__name__}) ids = slm tokenizer encode on 3 held-out texts ({sum(len(open(f + '.ids').read().split()) for f in ('held1.txt', 'held2.txt', 'held3.txt'))} tokens)")
PY
same_greedy hf

# --- import: a model transformers made ----------------------------------------------------------
"$PY" - imported tok <<'PY' || fail "making the transformers model"
import shutil, sys, torch, transformers as tf
out, tokdir = sys.argv[1], sys.argv[2]
tok = tf.GPT2TokenizerFast.from_pretrained(tokdir)
torch.manual_seed(0)
cfg = tf.GPT2Config(vocab_size=len(tok), n_positions=32, n_embd=32, n_layer=2, n_head=2,
                    bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
m = tf.GPT2LMHeadModel(cfg)
m.save_pretrained(out)  # model.safetensors + config.json
tok.save_pretrained(out)
PY
"$DUMP" imported $ids > imp_slm.json
"$PY" - imported "$ids" imp_slm.json <<'PY' || fail "imported logits"
import json, sys, torch, transformers as tf
m = tf.GPT2LMHeadModel.from_pretrained(sys.argv[1]).eval()
ids = [int(x) for x in sys.argv[2].split()]
with torch.no_grad(): logits = m(torch.tensor([ids])).logits[0].double()
d = (logits - torch.tensor(json.load(open(sys.argv[3])), dtype=torch.float64)).abs().max().item()
print(f"import: slm's logits of the transformers-made model max |diff| {d:.2e}")
assert d < 1e-4
PY
same_greedy imported
"$SLM" eval imported --text held2.txt --batches 4 --micro-batch 2 | grep -q "perplexity" || fail "slm eval of an imported model"
# Training from it: lr 1e-12 (slm refuses 0; Adam moves each weight by ~lr) keeps it (one process, and a 2-stage pipeline).
for layout in "" "pp2"; do
  extra=(); [ "$layout" = pp2 ] && extra=(--set parallel.pp=2 --set parallel.micro_batches=2 --set batch.micro_batch=2)
  launcher=(); [ "$layout" = pp2 ] && launcher=("$SLM" launch -n 2 --)
  "${launcher[@]}" "$SLM" train "${COMMON[@]}" "${extra[@]}" --set init.from=imported --set run.dir=keep$layout \
    --set optim.lr=1e-12 --set optim.weight_decay=0 --set schedule.max_steps=2 > keep$layout.log 2>&1 || { cat keep$layout.log; fail "init.from $layout"; }
  "$DUMP" keep$layout $ids > keep$layout.json
  python3 - keep$layout.json imp_slm.json <<'PY' || fail "init.from $layout: not the imported weights"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
d = max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
print(f"init.from: after 2 steps at lr 1e-12 logits max diff {d:.2e}"); assert d < 1e-5
PY
done
"$SLM" train "${COMMON[@]}" --set init.from=imported --set run.dir=ft --set optim.lr=1e-2 --set schedule.max_steps=20 2>/dev/null
python3 - ft/metrics.jsonl <<'PY' || fail "fine-tuning from the imported model does not learn"
import json, sys
l = [json.loads(x)["loss"] for x in open(sys.argv[1]) if '"loss"' in x]
print(f"init.from: loss {l[0]:.3f} -> {l[-1]:.3f} over {len(l)} steps"); assert l[-1] < l[0] - 0.5
PY

# --- bad input ----------------------------------------------------------------------------------
cp -r imported bad && head -c 1000 imported/model.safetensors > bad/model.safetensors
expect_error "bad/model.safetensors: " "$SLM" eval bad --text held2.txt
cp -r imported notgpt2 && sed -i 's/"model_type": "gpt2"/"model_type": "llama"/' notgpt2/config.json
expect_error 'model_type "llama" is not gpt2' "$SLM" train "${COMMON[@]}" --set init.from=notgpt2 --set run.dir=x
"$SLM" tokenizer train "$corpus" --vocab-size 300 --out tok2 -q >/dev/null
cp -r imported othertok && cp tok2/vocab.json tok2/merges.txt othertok/
expect_error "tokenizer is not the one" "$SLM" train "${COMMON[@]}" --set init.from=othertok --set run.dir=y
echo "hf_transformers: all passed"
