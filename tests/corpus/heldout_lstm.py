"""Corpus (held out): an LSTM cell unrolled in Python over 64 time steps, small hidden size.

Planted: launch cost. nn.LSTMCell(128, 128) on a batch of 16, stepped 64 times in a Python loop
forward and backward: thousands of microsecond kernels per training step, each launched on its
own. No NVTX; the loss is printed every 5 steps. Written after the analysis was tuned: a check,
not a target.
"""
import torch
from torch import nn

torch.manual_seed(0)
cell = nn.LSTMCell(128, 128).cuda()
head = nn.Linear(128, 1).cuda()
opt = torch.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=1e-2)
xs = torch.randn(64, 16, 128, device="cuda")
for step in range(25):
    h = torch.zeros(16, 128, device="cuda")
    c = torch.zeros(16, 128, device="cuda")
    for t in range(64):
        h, c = cell(xs[t], (h, c))
    loss = head(h).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f"step {step} loss {loss.item():.4f}")
