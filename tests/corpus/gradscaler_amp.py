"""Corpus: AMP with GradScaler ahead of an unfused optimizer, NVTX steps.

Planted: launch cost in the optimizer, behind a hidden per-step sync. scaler.step() reads
GradScaler's found_inf flag back (grad_scaler.py) every step; then plain Adam (foreach=False)
makes ~1,150 small launches with the GPU waiting for each. The CPU is barely behind the GPU's
~12 ms forward and backward when it reads found_inf, so the read-back itself costs little: the
launches are the bottleneck (fused=True removes both). The loss is printed every 10 steps: the
sync rows must name the GradScaler line and the print apart. (Line numbers matter: the recorded
trace's stacks name them.)
"""
import torch
from torch import nn

torch.manual_seed(0)
d = 1024
model = nn.Sequential(*[nn.Sequential(nn.Linear(d, d), nn.ReLU()) for _ in range(48)]).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=False)
scaler = torch.amp.GradScaler("cuda")
x = torch.randn(16384, d, device="cuda")
for step in range(30):
    torch.cuda.nvtx.range_push(f"step {step}")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x).float().pow(2).mean()
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")
    torch.cuda.nvtx.range_pop()
