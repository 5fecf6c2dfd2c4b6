"""Corpus: gradient accumulation over 4 micro-batches, no NVTX, small MLP: launch-bound.

Planted: launch cost. Each optimizer step runs 4 micro-batches of a 6-layer MLP (width 256, batch
32) and then AdamW (foreach): hundreds of kernels of a few microseconds each, launched one by one,
so the GPU idles between them. One training step is the optimizer step (4 forward/backward
passes), not a micro-batch. The loss is printed every 20 steps.
"""
import torch
from torch import nn

torch.manual_seed(0)
steps, accum = 40, 4
model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.LayerNorm(256), nn.GELU())
                        for _ in range(6)], nn.Linear(256, 1)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
data = [(torch.randn(32, 256, device="cuda"), torch.randn(32, 1, device="cuda"))
        for _ in range(accum)]

for step in range(steps):
    for x, y in data:
        loss = nn.functional.mse_loss(model(x), y) / accum
        loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.4f}")
torch.cuda.synchronize()
