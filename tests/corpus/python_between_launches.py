"""Corpus: ~15 ms of pure Python per step between launches (not launch cost), NVTX steps.

Planted: CPU work outside CUDA calls. Between the forward and the backward pass the loop runs a
pure-Python bookkeeping function (a dictionary-heavy loop, ~15 ms) that makes no CUDA call; the
GPU work of a step takes ~2 ms. Launch cost is a small part: fusing kernels or a CUDA graph would
not help; making that Python faster (or moving it off the step) would.
"""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                      nn.Linear(1024, 10)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(256, 1024, device="cuda")
y = torch.randint(0, 10, (256,), device="cuda")


def bookkeeping(step):
    stats = {}
    for i in range(60000):
        key = (i * 7919 + step) % 997
        stats[key] = stats.get(key, 0) + i % 13
    return len(stats)


for step in range(40):
    torch.cuda.nvtx.range_push(f"step {step}")
    loss = nn.functional.cross_entropy(model(x), y)
    bookkeeping(step)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    torch.cuda.nvtx.range_pop()
print("last loss", loss.item())
