"""Corpus (blind, batch 4): a transformer trained with activation checkpointing.

Program: 8 nn.TransformerEncoderLayer (d_model 1024, 16 heads, sequence 1024, batch 16, bf16),
each wrapped in torch.utils.checkpoint.checkpoint (use_reentrant=False), so the backward pass
recomputes every layer's forward; fused AdamW; the loss read back every step. No NVTX. 20 steps.
Expected, written before it was recorded (2026-11-26): gpu-bound, at least 90% of the steady
step; 20 steps (within 2).
"""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
layers = nn.ModuleList([nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True)
                        for _ in range(8)]).cuda()
opt = torch.optim.AdamW(layers.parameters(), lr=1e-4, fused=True)
x = torch.randn(16, 1024, 1024, device="cuda")
for step in range(20):
    h = x
    with torch.autocast("cuda", dtype=torch.bfloat16):
        for layer in layers:
            h = checkpoint(layer, h, use_reentrant=False)
        loss = h.float().pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    value = loss.item()
print("last loss", value)
