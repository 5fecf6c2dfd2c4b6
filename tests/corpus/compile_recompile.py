"""Corpus: torch.compile recompiling every 4 steps (a new batch size), no NVTX.

Planted: recompilation. The batch size changes every 4 steps to one not seen before, and
automatic dynamic shapes are off (as with mark_static, or a model that is not shape-generic), so
Dynamo and Inductor compile the model again: those steps take hundreds of ms of CPU work and new
GPU modules are loaded, while the other steps take a few ms. Advice that helps: dynamic=True,
padding batches to a few sizes.
"""
import torch
import torch._dynamo
from torch import nn

torch._dynamo.config.automatic_dynamic_shapes = False
torch._dynamo.config.cache_size_limit = 64
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 512), nn.LayerNorm(512),
                      nn.Linear(512, 10)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
compiled = torch.compile(model)
for step in range(24):
    batch = 64 + 8 * (step // 4)
    x = torch.randn(batch, 512, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")
    loss = nn.functional.cross_entropy(compiled(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    print(f"step {step} batch {batch} loss {loss.item():.4f}")
