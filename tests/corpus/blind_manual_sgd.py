"""Corpus (blind, batch 2): a deep narrow MLP updated by hand, one parameter at a time.

Program: 32 Linear(256, 256) + ReLU layers, batch 32; no torch.optim: momentum SGD written as a
Python loop over the 64 parameters (three small in-place ops each), gradients cleared by hand.
No NVTX, no sync inside the loop. 30 steps.
Expected, written before it was recorded (2026-11-26): launch-bound (hundreds of kernels of a few
microseconds each, the GPU idle between launches), at least 40% of the steady step; about 30
steps, found without an optimizer kernel to cut at.
"""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(*[m for _ in range(32) for m in (nn.Linear(256, 256), nn.ReLU())]).cuda()
params = list(model.parameters())
velocity = [torch.zeros_like(p) for p in params]
x = torch.randn(32, 256, device="cuda")
target = torch.randn(32, 256, device="cuda")
for step in range(30):
    loss = (model(x) - target).pow(2).mean()
    loss.backward()
    with torch.no_grad():
        for p, v in zip(params, velocity):
            v.mul_(0.9).add_(p.grad)
            p.add_(v, alpha=-1e-3)
            p.grad = None
torch.cuda.synchronize()
print("last loss", float(loss))
