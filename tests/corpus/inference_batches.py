"""Corpus: an inference server loop: requests of varying batch size, result copied back each time.

Planted: launch cost at small batches. Requests arrive with 1 to 64 sequences (a fixed random
sequence of sizes); each runs a 6-layer transformer-style MLP block under torch.no_grad() and
copies its result to the host (.cpu(), needed to answer). Most requests are small, so the kernels
are shorter than their launches. No NVTX. Advice that helps: CUDA graphs per batch size (or
torch.compile mode="reduce-overhead"), batching requests.
"""
import random

import torch
from torch import nn

torch.manual_seed(0)
random.seed(0)
d = 768
layers = [nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
          for _ in range(6)]
model = nn.Sequential(*layers).cuda().half().eval()
sizes = [random.choice([1, 1, 2, 4, 8, 16, 64]) for _ in range(80)]
with torch.no_grad():
    for n in sizes:
        x = torch.randn(n, 32, d, device="cuda", dtype=torch.half)
        y = model(x).float().mean(dim=1).cpu()
print("served", len(sizes), "requests; last", float(y[0, 0]))
