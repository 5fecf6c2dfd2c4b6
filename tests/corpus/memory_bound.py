"""Corpus: element-wise work on 512 MB tensors: GPU-bound (memory bandwidth), NVTX steps.

Planted: nothing but work. Each step updates three 128M-element fp32 tensors with a few
element-wise ops each (an eager optimizer-like update), all on the GPU, no host sync in the step.
Every kernel streams its data at DRAM speed, so the GPU is busy; fusing the ops (fewer passes
over memory) is the only lever. 30 steps.
"""
import torch

n = 128 * 1024 * 1024
p = torch.zeros(n, device="cuda")
g = torch.randn(n, device="cuda")
m = torch.zeros(n, device="cuda")
for step in range(30):
    torch.cuda.nvtx.range_push(f"step {step}")
    m.mul_(0.9).add_(g, alpha=0.1)
    p.add_(m, alpha=-1e-3)
    g.mul_(0.999)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print("done")
