"""A small data-parallel PyTorch training loop for torchrun (one process per GPU, NCCL).

  torchrun --standalone --nproc_per_node=2 tests/gpu/torch_ddp.py [--steps 20] [--slow-rank R]

Each step is an NVTX range "step <i>"; DistributedDataParallel all-reduces the gradients with
NCCL during backward, and loss.item() reads the loss every step. With --slow-rank R, rank R runs
extra matrix products before its backward, so it reaches the all-reduce late every step.
Used to check that `warpline-record -o run_%q{RANK}.warpline -- torchrun ...` gives one trace
per rank that Warpline opens as one session.
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--slow-rank", type=int, default=-1)
args = p.parse_args()

rank = int(os.environ["RANK"])
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
torch.manual_seed(0)
dim, layers, batch = 2048, 8, 256
model = nn.Sequential(*[nn.Sequential(nn.Linear(dim, dim), nn.ReLU()) for _ in range(layers)]).cuda()
model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(batch, dim, device="cuda")
y = torch.randn(batch, dim, device="cuda")
extra = torch.randn(4096, 4096, device="cuda")

for i in range(args.steps):
    torch.cuda.nvtx.range_push(f"step {i}")
    opt.zero_grad(set_to_none=True)
    loss = ((model(x) - y) ** 2).mean()
    if rank == args.slow_rank:
        torch.cuda.nvtx.range_push("slowed on purpose")
        for _ in range(20):
            extra = torch.tanh(extra @ extra * 1e-3)
        torch.cuda.nvtx.range_pop()
    loss.backward()
    opt.step()
    value = loss.item()
    torch.cuda.nvtx.range_pop()
if rank == 0:
    print(f"done: {args.steps} steps, last loss {value:.4f}")
dist.destroy_process_group()
