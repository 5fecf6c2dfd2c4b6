"""Corpus: AMP with GradScaler: a hidden device-to-host read every step, NVTX steps.

Planted: a per-step sync the user did not write. scaler.step() reads GradScaler's found_inf flag
back to the host (grad_scaler.py) every step, so the CPU waits for the backward pass to finish
before it can launch the optimizer (plain Adam, one kernel per op per parameter), and the GPU idles
while it does. The loss is printed only every 10 steps. The finding must name the GradScaler line,
separately from the loss print.
"""
import torch
from torch import nn

torch.manual_seed(0)
d = 1024
model = nn.Sequential(*[nn.Sequential(nn.Linear(d, d), nn.ReLU()) for _ in range(12)],
                      nn.Linear(d, 10)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=False)
scaler = torch.amp.GradScaler("cuda")
x = torch.randn(512, d, device="cuda")
y = torch.randint(0, 10, (512,), device="cuda")
for step in range(40):
    torch.cuda.nvtx.range_push(f"step {step}")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")
    torch.cuda.nvtx.range_pop()
