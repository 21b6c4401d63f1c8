# tests/e2e/gpt2_ref.py: an independent GPT-2 forward pass for the e2e tests (Debian's
# python3-torch, float64): reads model.safetensors with its own parser and computes with Hugging
# Face's semantics (Conv1D x @ W + b, gelu_new). load(d) -> (weights, config); hidden(...) -> the
# final LayerNorm's output (T, C) for a list of token ids.
import json, math, struct, torch

def load(d):
    raw = open(f"{d}/model.safetensors", "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header, base, W = json.loads(raw[8:8 + n]), 8 + n, {}
    for name, info in header.items():
        if name == "__metadata__": continue
        assert info["dtype"] == "F32"
        b, e = info["data_offsets"]
        W[name] = torch.frombuffer(bytearray(raw[base + b:base + e]), dtype=torch.float32).view(info["shape"]).double()
    return W, json.load(open(f"{d}/config.json"))

def hidden(W, cfg, ids):
    C, H, eps = cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
    def ln(x, p): return torch.nn.functional.layer_norm(x, (C,), W[p + ".weight"], W[p + ".bias"], eps)
    def conv1d(x, p): return x @ W[p + ".weight"] + W[p + ".bias"]
    def gelu_new(x): return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    T = len(ids)
    x = W["transformer.wte.weight"][ids] + W["transformer.wpe.weight"][:T]
    for l in range(cfg["n_layer"]):
        p = f"transformer.h.{l}"
        q, k, v = conv1d(ln(x, p + ".ln_1"), p + ".attn.c_attn").split(C, -1)
        q, k, v = (t.view(T, H, C // H).transpose(0, 1) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(C // H)
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        x = x + conv1d((att @ v).transpose(0, 1).reshape(T, C), p + ".attn.c_proj")
        x = x + conv1d(gelu_new(conv1d(ln(x, p + ".ln_2"), p + ".mlp.c_fc")), p + ".mlp.c_proj")
    return ln(x, "transformer.ln_f")
