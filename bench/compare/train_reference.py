# bench/compare/train_reference.py: the same GPT-2 training step in Python PyTorch, for side-by-side
# speed comparison with `slm train` (bench/compare/train_compare.sh). Written for the benchmark, not part
# of the product. Prints the median tokens/s over the timed steps. MODE: eager (default) or
# compile (torch.compile of the model, 2.x: Inductor's C++/OpenMP kernels on the CPU). On 2.x the
# attention is scaled_dot_product_attention, as in slm's 2.x build. DEVICE=cuda runs it on the GPU
# (bf16 autocast there, fused AdamW as nanoGPT and torchtitan use, timed after a synchronize;
# PREC=fp16: fp16 autocast with GradScaler's dynamic loss scaling, as eager users run it).
# PROFILE=FILE: then PROFILE_STEPS (2) more steps under torch.profiler, its Chrome trace in FILE
# (`slm report FILE` sums it up as it does slm's log.profile_steps).
import json, math, os, statistics, sys, time
os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # the profiler's stage lines, as slm quiets them
import torch
import torch.nn as nn
import torch.nn.functional as F

L, C, H, T, V, B, MICRO, STEPS, PREC, THREADS = sys.argv[1:11]
MODE = sys.argv[11] if len(sys.argv) > 11 else "eager"
DEVICE = os.environ.get("DEVICE", "cpu")
SDPA = hasattr(F, "scaled_dot_product_attention")
L, C, H, T, V, B, MICRO, STEPS, THREADS = map(int, (L, C, H, T, V, B, MICRO, STEPS, THREADS))
torch.set_num_threads(THREADS)
torch.manual_seed(0)

class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln_1, s.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        s.c_attn, s.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        s.c_fc, s.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        s.register_buffer("mask", torch.ones(T, T, dtype=torch.bool).triu(1))
    def forward(s, x):
        Bb, Tt, _ = x.shape
        q, k, v = s.c_attn(s.ln_1(x)).split(C, 2)
        q, k, v = (t.view(Bb, Tt, H, C // H).transpose(1, 2) for t in (q, k, v))
        if SDPA:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(C // H)
            y = att.masked_fill(s.mask[:Tt, :Tt], float("-inf")).softmax(-1) @ v
        x = x + s.c_proj(y.transpose(1, 2).reshape(Bb, Tt, C))
        return x + s.mlp_proj(F.gelu(s.c_fc(s.ln_2(x)), approximate="tanh"))

class GPT(nn.Module):
    def __init__(s):
        super().__init__()
        s.wte, s.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        s.h = nn.ModuleList(Block() for _ in range(L))
        s.ln_f = nn.LayerNorm(C)
    def forward(s, idx, tgt):
        x = s.wte(idx) + s.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in s.h: x = b(x)
        logits = s.ln_f(x) @ s.wte.weight.t()
        return F.cross_entropy(logits.view(-1, V), tgt.view(-1))

m = GPT().to(DEVICE)
step_model = torch.compile(m) if MODE == "compile" else m
opt = torch.optim.AdamW(m.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1,
                        **({"fused": True} if DEVICE == "cuda" else {}))
AMP = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(PREC)
scaler = None
if PREC == "fp16":
    scaler = torch.amp.GradScaler(DEVICE) if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()
sync = torch.cuda.synchronize if DEVICE == "cuda" else (lambda: None)

def step():
    opt.zero_grad()
    for _ in range(B // MICRO):
        idx = torch.randint(V, (MICRO, T), device=DEVICE); tgt = torch.randint(V, (MICRO, T), device=DEVICE)
        with torch.autocast(DEVICE, dtype=AMP or torch.bfloat16, enabled=AMP is not None):
            loss = step_model(idx, tgt) / (B // MICRO)
        (scaler.scale(loss) if scaler else loss).backward()
    if scaler: scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    if scaler:
        scaler.step(opt); scaler.update()
    else:
        opt.step()

rates = []
WARM = 3 if MODE == "compile" else 2  # compilation happens in the first steps
for i in range(STEPS + WARM):
    sync(); t0 = time.time()
    step()
    sync()
    if i >= WARM: rates.append(B * T / (time.time() - t0))
print(f"{statistics.median(rates):.0f}")
if os.environ.get("PEAK_OUT"):  # the GPU's peak beside slm's gpu_peak_mem_bytes, else the peak RSS beside slm's
    import resource
    peak = torch.cuda.max_memory_allocated() if DEVICE == "cuda" else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    open(os.environ["PEAK_OUT"], "w").write(f"{peak / 2**30:.2f}\n")
if os.environ.get("PROFILE"):  # PROFILE_STEPS more steps under torch.profiler, as slm's log.profile_steps
    n = int(os.environ.get("PROFILE_STEPS", "2"))
    acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if DEVICE == "cuda" else [])
    sync()
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(n): step()
        sync()
    prof.export_chrome_trace(os.environ["PROFILE"])
    trace = json.load(open(os.environ["PROFILE"]))  # what `slm report TRACE` reads for the step count
    trace["slm_profile"] = {"source": f"PyTorch {MODE}", "steps": n}
    json.dump(trace, open(os.environ["PROFILE"], "w"))
