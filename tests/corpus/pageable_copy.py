"""Corpus: 64 MB copied from pageable host memory every step, inside the step, NVTX steps.

Planted: a synchronous copy from pageable memory. Each step uploads a fresh 64 MB NumPy array
(not pinned) with .cuda(), which copies through a staging buffer and blocks the CPU, then runs a
bf16 MLP on it. The copy is a large share of the step. Advice that helps: pinned memory
(pin_memory()) and non_blocking copies, or keeping the data on the GPU.
"""
import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
rows, dim = 4096, 4096  # 4096 x 4096 fp32 = 64 MB
host = [np.random.default_rng(k).standard_normal((rows, dim), dtype=np.float32) for k in range(2)]
model = nn.Sequential(nn.Linear(dim, 4096), nn.GELU(), nn.Linear(4096, dim)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
for step in range(30):
    torch.cuda.nvtx.range_push(f"step {step}")
    x = torch.from_numpy(host[step % 2]).cuda()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = (model(x) - x).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    torch.cuda.nvtx.range_pop()
print("last loss", loss.item())
