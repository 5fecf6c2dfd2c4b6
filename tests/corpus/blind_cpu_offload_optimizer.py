"""Corpus (blind, batch 4): optimizer state kept on the CPU (a hand-made offload).

Program: an MLP (4 Linear(2048, 2048), batch 1024) runs forward and backward on the GPU; every
step its gradients are copied to CPU master weights with .cpu(), torch.optim.Adam updates them
on the CPU (2 threads), and the weights are copied back with .copy_() from pageable memory. No
NVTX. 25 steps.
Expected, written before it was recorded (2026-11-26): cpu-work (the CPU's Adam update, the GPU
idle meanwhile), at least 40% of the steady step; copies second; 25 steps (within 2).
"""
import torch
from torch import nn

torch.set_num_threads(2)
torch.manual_seed(0)
model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(2048, 2048), nn.GELU())]).cuda()
master = [p.detach().cpu().clone().requires_grad_() for p in model.parameters()]
opt = torch.optim.Adam(master, lr=1e-4)
x = torch.randn(1024, 2048, device="cuda")
for step in range(25):
    loss = model(x).pow(2).mean()
    loss.backward()
    for p, m in zip(model.parameters(), master):
        m.grad = p.grad.cpu()
        p.grad = None
    opt.step()
    with torch.no_grad():
        for p, m in zip(model.parameters(), master):
            p.copy_(m)
print("last loss", float(loss))
