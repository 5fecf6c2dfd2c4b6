"""Corpus: a boolean mask inside forward: a sync for the element count every step, no NVTX.

Planted: a hidden per-step sync (x[mask] in forward(): PyTorch copies the count back and waits
for the GPU) in a model whose GEMMs keep the GPU busy ~93% of each step. The right verdict is
GPU-bound; the sync must still be found, naming the masking line in forward(), with the few
percent it costs. The loss is not read back in the loop.
"""
import torch
from torch import nn


class Filtered(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.inp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.out = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.inp(x)
        keep = h.norm(dim=-1) > h.norm(dim=-1).mean()
        h = h[keep]
        return self.out(h).mean()


torch.manual_seed(0)
model = Filtered(1024).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(4096, 1024, device="cuda")
for step in range(40):
    loss = model(x)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
print("last loss", loss.item())
