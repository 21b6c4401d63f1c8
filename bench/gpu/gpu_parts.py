# bench/gpu/gpu_parts.py: the parts of a GPT-2 training step timed one by one in Python PyTorch, the
# way `slm profile` times slm's (one block's forward and backward, the head + cross-entropy's
# forward and backward), to find which part makes slm slower or faster than eager PyTorch on a GPU
# (bench/gpu/gpu_check.sh section 9). Written for the benchmark, not part of the product.
# Usage: python3 bench/gpu/gpu_parts.py C H T V MICRO [DEVICE]   (bf16 autocast on cuda)
# Prints one line per part in ms: eager PyTorch, and "slm-like head" (slm's GPU head algorithm
# written with the same ATen calls: logits in bf16, fp32 log-softmax, its exp minus the one-hot as
# the gradient, both GEMMs in the forward pass, rows in chunks of 2^28 logits).
import statistics, sys, time
import torch
import torch.nn.functional as F

C, H, T, V, MICRO = map(int, sys.argv[1:6])
DEVICE = sys.argv[6] if len(sys.argv) > 6 else "cuda"
sync = torch.cuda.synchronize if DEVICE == "cuda" else (lambda: None)


def timed(fn, reps=20):
    for _ in range(3): fn()
    out = []
    for _ in range(reps):
        sync(); t0 = time.perf_counter(); fn(); sync()
        out.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(out)


class Block(torch.nn.Module):  # train_reference.py's block
    def __init__(s):
        super().__init__()
        s.ln_1, s.ln_2 = torch.nn.LayerNorm(C), torch.nn.LayerNorm(C)
        s.c_attn, s.c_proj = torch.nn.Linear(C, 3 * C), torch.nn.Linear(C, C)
        s.c_fc, s.mlp_proj = torch.nn.Linear(C, 4 * C), torch.nn.Linear(4 * C, C)
    def forward(s, x):
        Bb, Tt, _ = x.shape
        q, k, v = s.c_attn(s.ln_1(x)).split(C, 2)
        q, k, v = (t.view(Bb, Tt, H, C // H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + s.c_proj(y.transpose(1, 2).reshape(Bb, Tt, C))
        return x + s.mlp_proj(F.gelu(s.c_fc(s.ln_2(x)), approximate="tanh"))


ac = lambda: torch.autocast(DEVICE, dtype=torch.bfloat16)
blk = Block().to(DEVICE)
x = torch.randn(MICRO, T, C, device=DEVICE, requires_grad=True)
g = torch.randn(MICRO, T, C, device=DEVICE)
w = (0.02 * torch.randn(V, C, device=DEVICE)).requires_grad_()
ln = torch.nn.LayerNorm(C).to(DEVICE)
tgt = torch.randint(V - 47, (MICRO * T,), device=DEVICE)
state = {}

def block_f():
    with ac(): state["y"] = blk(x)
def block_fb():
    with ac(): y = blk(x)
    y.backward(g)
def head_fb():
    with ac(): loss = F.cross_entropy((ln(x) @ w.t()).view(-1, V), tgt)
    loss.backward()
def head_f():
    with torch.no_grad(), ac(): F.cross_entropy((ln(x) @ w.t()).view(-1, V), tgt)

def slm_head(new=False, rows=0):  # forward pass with both gradients, as model/fused_head.cpp on a GPU
    with torch.no_grad():
        with ac(): h = ln(x).reshape(-1, C)
        N = h.shape[0]; rows = rows or max(1, (1 << 28) // V)
        wv = w.to(torch.bfloat16); dw = torch.empty_like(w); dx = torch.empty_like(h)
        total = torch.zeros((), device=DEVICE)
        for r in range(0, N, rows):
            xc = h[r:r + rows].to(torch.bfloat16); t = tgt[r:r + rows].unsqueeze(1)
            gc = xc @ wv.t()
            gc[:, V - 47:].fill_(float("-inf"))
            logp = torch.log_softmax(gc, 1, dtype=torch.float32)
            lt = logp.gather(1, t)
            total -= lt.sum()
            if new:  # softmax rounded once into the logits' storage, then the targets' p - 1
                torch.exp(logp, out=gc); gc.scatter_(1, t, lt.exp().sub_(1).to(torch.bfloat16))
            else:  # exp in fp32, - 1 at the targets, a cast
                gsm = logp.exp_(); gsm.scatter_add_(1, t, torch.full((t.shape[0], 1), -1.0, device=DEVICE))
                gc = gsm.to(torch.bfloat16)
            dx[r:r + rows].copy_(gc @ wv)
            d = gc.t() @ xc
            dw.copy_(d) if r == 0 else dw.add_(d)
        return total

print(f"parts (eager PyTorch {torch.__version__}, {DEVICE}, bf16, micro-batch {MICRO} x {T}, C {C}, V {V}):")
bf, bfb = timed(block_f), timed(block_fb)
print(f"  block fwd {bf:.2f} ms, fwd+bwd {bfb:.2f} ms")
hf, hfb = timed(head_f), timed(head_fb)
print(f"  head + cross-entropy fwd {hf:.2f} ms, fwd+bwd {hfb:.2f} ms")
one = MICRO * T
print(f"  slm-like head (fwd with both gradients): exp in fp32 + cast, chunks of 2^28 logits {timed(slm_head):.2f} ms, "
      f"one chunk {timed(lambda: slm_head(False, one)):.2f} ms; exp into the logits, chunks "
      f"{timed(lambda: slm_head(True)):.2f} ms, one chunk {timed(lambda: slm_head(True, one)):.2f} ms")
