"""Corpus: data-parallel training on two GPUs (torchrun, NCCL), two bottlenecks.

  torchrun --standalone --nproc_per_node=2 ddp_train.py --mode exposed|straggler

--mode exposed: communication. A model with many parameters (8 Linear(4096, 4096), 537 MB of
  fp32 gradients) on a tiny batch (16): the backward pass takes well under a millisecond, so
  DistributedDataParallel's gradient all-reduce cannot hide behind it and most of the step is
  NCCL AllReduce. NVTX "step N" ranges. Advice that helps: larger batches per GPU, gradient
  accumulation with no_sync(), bf16 gradient compression.
--mode straggler: a late rank. Rank 1's input takes 30 ms longer to arrive each step (a sleep
  where its data loading would be); rank 0 then waits for it inside the all-reduce. No NVTX,
  loss read back every step. The finding must name rank 1, not rank 0's loss reads.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--mode", choices=["exposed", "straggler"], required=True)
p.add_argument("--steps", type=int, default=30)
args = p.parse_args()

rank = int(os.environ["RANK"])
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
torch.manual_seed(0)
if args.mode == "exposed":
    d, layers, batch = 4096, 8, 16
else:
    d, layers, batch = 2048, 8, 512
model = nn.Sequential(*[nn.Sequential(nn.Linear(d, d), nn.ReLU()) for _ in range(layers)]).cuda()
model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(batch, d, device="cuda")
for step in range(args.steps):
    if args.mode == "exposed":
        torch.cuda.nvtx.range_push(f"step {step}")
    if args.mode == "straggler" and rank == 1:
        time.sleep(0.03)  # this rank's input pipeline is slower
    loss = model(x).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if args.mode == "straggler":
        value = loss.item()
    if args.mode == "exposed":
        torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
if rank == 0:
    print("done", args.mode, args.steps, "steps")
dist.destroy_process_group()
