"""Corpus (held out): torch.cuda.synchronize() after every layer, left in from debugging.

Planted: synchronization. A 12-layer MLP (width 2048, batch 2048, bf16) calls
torch.cuda.synchronize() after each layer's forward, so the CPU never queues ahead and the GPU
idles while it launches each next layer. NVTX "step N" ranges. Written after the analysis was
tuned: a check, not a target.
"""
import torch
from torch import nn

torch.manual_seed(0)
layers = nn.ModuleList([nn.Sequential(nn.Linear(2048, 2048), nn.GELU()) for _ in range(12)]).cuda()
opt = torch.optim.AdamW(layers.parameters(), lr=1e-4, fused=True)
x = torch.randn(2048, 2048, device="cuda")
for step in range(30):
    torch.cuda.nvtx.range_push(f"step {step}")
    h = x
    with torch.autocast("cuda", dtype=torch.bfloat16):
        for layer in layers:
            h = layer(h)
            torch.cuda.synchronize()  # left over from timing each layer
        loss = h.float().pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    torch.cuda.nvtx.range_pop()
print("last loss", loss.item())
