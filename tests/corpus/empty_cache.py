"""Corpus: torch.cuda.empty_cache() every step: allocator churn, NVTX steps.

Planted: memory management. After each step the loop returns PyTorch's cached blocks to the
driver, so the next step allocates again with cudaMalloc (and cudaFree, which synchronizes the
device, gives them back). A transformer-ish MLP with activations of a few MB each. Advice that
helps: do not call empty_cache() in the loop.
"""
import torch
from torch import nn

torch.manual_seed(0)
d = 2048
model = nn.Sequential(*[nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                        for _ in range(4)]).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(512, d, device="cuda")
for step in range(30):
    torch.cuda.nvtx.range_push(f"step {step}")
    loss = model(x).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    torch.cuda.empty_cache()
    torch.cuda.nvtx.range_pop()
print("last loss", loss.item())
