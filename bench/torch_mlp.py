"""A launch-bound PyTorch MLP training loop (dim 256, 32 layers, batch 64), one NVTX range a step.

  --sync every-step   calls loss.item() each step: the CPU waits for the GPU every step
  --sync end          reads the loss once, after the loop: the CPU runs ahead of the GPU
  --profile torch     runs the loop under torch.profiler (CPU + CUDA) and writes its Chrome JSON

Prints "step_ms=<mean ms per step over the timed steps>" (and the profiler's JSON size).
Used for Warpline's real PyTorch traces (tests/data) and its overhead benchmark (bench/).
"""
import argparse
import os
import time

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=300)
p.add_argument("--warmup", type=int, default=30)
p.add_argument("--sync", choices=["every-step", "end"], default="every-step")
p.add_argument("--profile", choices=["none", "torch", "torch-stack"], default="none")
p.add_argument("--profile-out", default="/tmp/torch_mlp_profile.json")
args = p.parse_args()

torch.manual_seed(0)
dim, layers, batch = 256, 32, 64
model = nn.Sequential(*[nn.Sequential(nn.Linear(dim, dim), nn.ReLU()) for _ in range(layers)]).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(batch, dim, device="cuda")
y = torch.randn(batch, dim, device="cuda")


def step(i):
    torch.cuda.nvtx.range_push(f"step {i}")
    opt.zero_grad(set_to_none=True)
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    if args.sync == "every-step":
        loss.item()  # copies the scalar to the host: waits for the whole step
    torch.cuda.nvtx.range_pop()
    return loss


def loop(first, count):
    loss = None
    for i in range(first, first + count):
        loss = step(i)
    return loss


loop(0, args.warmup)
torch.cuda.synchronize()

if args.profile in ("torch", "torch-stack"):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 with_stack=args.profile == "torch-stack") as prof:
        t0 = time.perf_counter()
        loss = loop(args.warmup, args.steps)
        final = loss.item()
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - t0
    prof.export_chrome_trace(args.profile_out)
else:
    t0 = time.perf_counter()
    loss = loop(args.warmup, args.steps)
    final = loss.item()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0

assert final == final, "loss is NaN"
print(f"step_ms={elapsed / args.steps * 1e3:.4f} loss={final:.5f} sync={args.sync} profile={args.profile}")
