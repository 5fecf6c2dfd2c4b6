"""Corpus: torch.compile with a graph break every step (a data-dependent Python branch), no NVTX.

Planted: a graph break and the sync it brings. forward() branches on a GPU value in Python
(if h.abs().mean() > 1), so Dynamo splits the model in two graphs and reads the value back every
step. Expected before recording: the GEMMs keep the GPU busy most of the step (gpu-bound), and a
sync-stall finding names the branch line (compile_graph_break.py:21) with the small share the
read-back costs. (Line numbers matter: the recorded trace's stacks name them.)
"""
import torch
from torch import nn


class Branchy(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.b = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.a(x)
        if h.abs().mean() > 1:  # graph break: a Python branch on a GPU value
            h = h * 0.5
        return self.b(h).float().pow(2).mean()


torch.manual_seed(0)
model = Branchy(2048).cuda()
compiled = torch.compile(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
x = torch.randn(4096, 2048, device="cuda")
for step in range(30):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = compiled(x)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
print("last loss", loss.item())
