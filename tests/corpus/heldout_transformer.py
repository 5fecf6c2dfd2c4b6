"""Corpus (held out): a Transformer encoder trained with bf16 and fused AdamW, no NVTX.

Planted: nothing but work. 6 nn.TransformerEncoderLayer (d_model 1024, 16 heads, sequence 512,
batch 32) keep the GPU busy; the loss is read back every step with .item(), as most loops do.
The right verdict is GPU-bound. Written after the analysis was tuned: a check, not a target.
"""
import torch
from torch import nn

torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, norm_first=True)
model = nn.TransformerEncoder(layer, 6).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
x = torch.randn(32, 512, 1024, device="cuda")
for step in range(30):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    value = loss.item()
print("last loss", value)
