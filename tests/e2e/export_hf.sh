# tests/e2e/export_hf.sh: `slm export --format hf` writes what transformers' GPT2LMHeadModel loads:
# an independent GPT-2 forward pass in Python (Debian's python3-torch; HF semantics: Conv1D
# x @ W + b, gelu_new, tied LM head), reading model.safetensors with its own parser, gives the same
# logits as slm (tests/tools/dump_logits) to 1e-4.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
DUMP=$3
PY=/usr/bin/python3
$PY -c 'import torch' 2>/dev/null || skip "Debian's python3-torch is not installed"
cd "$WORK"
corpus=/usr/share/games/fortunes
[ -e "$corpus" ] || { corpus=$WORK/gen.txt; for i in $(seq 2000); do echo "Line $i: the fox $((i % 7)) jumps."; echo; done > "$corpus"; }
"$SLM" tokenizer train "$corpus" --vocab-size 300 --out tok -q >/dev/null
"$SLM" data prepare "$corpus" -t tok --separator blank --out data -q >/dev/null
"$SLM" train -c /dev/null --set data.dir=data --set run.dir=run --set model.n_layer=2 --set model.n_head=2 \
  --set model.n_embd=32 --set model.block_size=32 --set batch.batch_size=4 --set batch.micro_batch=4 \
  --set optim.lr=1e-2 --set schedule.max_steps=5 --set schedule.warmup_steps=1 --set eval.every=0 2>/dev/null
"$SLM" export run --out hf >/dev/null
for f in model.safetensors config.json vocab.json merges.txt tokenizer_config.json; do
  [ -f hf/$f ] || fail "export lacks $f"
done
expect_error "hf: already exists (pass --force" "$SLM" export run --out hf
# transformers truncates at tokenizer_config.json's model_max_length: the model's block size.
$PY -c "import json; c = json.load(open('hf/tokenizer_config.json')); assert c['model_max_length'] == 32, c" \
  || fail "model_max_length is not the block size"
# A tokenizer in OpenAI's names (encoder.json + vocab.bpe) or as one tokenizer.json exports the same
# GPT2Tokenizer files.
mkdir -p tok_openai tok_json
cp tok/vocab.json tok_openai/encoder.json && cp tok/merges.txt tok_openai/vocab.bpe
$PY - <<'PY'
import json
vocab = json.load(open("tok/vocab.json"))
merges = [l for l in open("tok/merges.txt", encoding="utf-8").read().split("\n")[1:] if l]
eot = vocab.pop("<|endoftext|>")
json.dump({"normalizer": None, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "vocab": vocab, "merges": [m.split(" ") for m in merges]},
           "added_tokens": [{"id": eot, "content": "<|endoftext|>", "special": True}]}, open("tok_json/tokenizer.json", "w"))
PY
for t in tok_openai tok_json; do
  "$SLM" export run -t $t --out hf_$t >/dev/null || fail "export with the tokenizer in $t"
  for f in vocab.json merges.txt tokenizer_config.json special_tokens_map.json; do
    cmp -s hf/$f hf_$t/$f || fail "export with $t: $f differs"
  done
done
echo "ok: tokenizer files (model_max_length = block size; from encoder.json/vocab.bpe and tokenizer.json)"
ids="5 17 200 42 299 0 7 7 7 100 250 3"
"$DUMP" run $ids > slm_logits.json
$PY - hf "$ids" slm_logits.json "$HERE" <<'PY' || fail "logits differ"
import json, sys, torch
sys.path.insert(0, sys.argv[4])
from gpt2_ref import load, hidden
d, ids, ref = sys.argv[1], [int(x) for x in sys.argv[2].split()], sys.argv[3]
W, cfg = load(d)
assert cfg["model_type"] == "gpt2" and cfg["activation_function"] == "gelu_new" and cfg["tie_word_embeddings"]
assert W["transformer.wte.weight"].shape[0] == cfg["vocab_size"]
logits = hidden(W, cfg, ids) @ W["transformer.wte.weight"].t()
mine = torch.tensor(json.load(open(ref)), dtype=torch.float64)
diff = (logits - mine).abs().max().item()
print(f"max |logit difference| = {diff:.2e} over {logits.numel()} logits (scale {logits.abs().max().item():.2f})")
assert logits.shape == mine.shape and diff < 1e-4
PY
echo "export_hf: all passed"
