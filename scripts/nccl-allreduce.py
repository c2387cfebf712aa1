"""NCCL all_reduce through torch.distributed (run by scripts/nccl-gpu-run.sh,
one process per rank; RANK, WORLD_SIZE, MASTER_ADDR/PORT from the
environment).  Every size is checked once (the sum of rank+1), then timed;
rank 0 prints algbw and busbw (2(n-1)/n x algbw, as nccl-tests)."""
import os
import sys
import time

import torch
import torch.distributed as dist

rank, ws = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(0)
dist.init_process_group("nccl", rank=rank, world_size=ws)
want = ws * (ws + 1) / 2
for nbytes in [1 << 12, 1 << 16, 1 << 20, 1 << 22, 1 << 24, 1 << 26]:
    x = torch.full((nbytes // 4,), float(rank + 1), device="cuda")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    if not bool(torch.all(x == want)):
        print(f"FAIL: allreduce of {nbytes} bytes: got {x[0].item()} want {want}", flush=True)
        sys.exit(1)
    iters = 20 if nbytes <= 1 << 22 else 5
    x.fill_(1.0)
    dist.barrier()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t) / iters
    algbw = nbytes / dt / 1e9
    if rank == 0:
        print(f"allreduce {nbytes} bytes: {dt * 1e6:.1f} us, algbw {algbw:.3f} GB/s, "
              f"busbw {algbw * 2 * (ws - 1) / ws:.3f} GB/s (checked)", flush=True)
dist.destroy_process_group()
