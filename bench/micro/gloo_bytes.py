# bench/micro/gloo_bytes.py: bytes on the wire of Gloo's collectives in the installed PyTorch (run it with
# the venv of scripts/setup.sh --venv, or Debian's python3-torch for 1.13). Counts loopback bytes
# (/proc/net/dev) around each collective of a 32 MiB fp32 tensor on N local ranks and prints them
# as multiples of the tensor, for all ranks together: a ring all-reduce is 2(N-1), a reduce-scatter
# or all-gather (N-1). Decides what comm/compat.h and comm/collectives.cpp use on each version.
#   python bench/micro/gloo_bytes.py [N]
import os, sys
import torch, torch.distributed as dist, torch.multiprocessing as mp

def lo_bytes():
    for line in open("/proc/net/dev"):
        if line.strip().startswith("lo:"):
            return int(line.split()[1])

def run(rank, n):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29611")
    dist.init_process_group("gloo", rank=rank, world_size=n)
    N = 8 << 20
    x, out = torch.ones(N), torch.empty(N // n)
    ops = [("all_reduce fp32", lambda: dist.all_reduce(x)),
           ("reduce_scatter_tensor fp32", lambda: dist.reduce_scatter_tensor(out, x)),
           ("all_gather_into_tensor fp32", lambda: dist.all_gather_into_tensor(x, out)),
           ("all_reduce bf16", lambda: dist.all_reduce(x.bfloat16()))]
    for name, f in ops:
        dist.barrier()
        before = lo_bytes()
        try:
            f()
            dist.barrier()
        except Exception as e:  # not supported in this version (the group is then unusable)
            if rank == 0:
                print(f"{name:30s} fails: {str(e).splitlines()[0][:60]}")
            os._exit(0)
        if rank == 0:
            print(f"{name:30s} {(lo_bytes() - before) / (N * 4):5.2f} x the fp32 tensor, all ranks")
    dist.destroy_process_group()

if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    print(f"torch {torch.__version__}, {n} ranks (ring all-reduce {2 * (n - 1)}, reduce-scatter {n - 1})")
    mp.spawn(run, args=(n,), nprocs=n)
