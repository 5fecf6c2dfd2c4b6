"""Corpus (blind, batch 2): a training loop that saves a checkpoint every 10 steps.

Program: 4 Linear(4096, 4096) layers (fp32, 256 MB of weights), batch 2048, AdamW (foreach);
every 10th step torch.save(model.state_dict()) writes the weights to /tmp, which copies each
tensor to the host and writes the file while the GPU has nothing queued. No NVTX. 40 steps.
Expected, written before it was recorded (2026-11-26): the checkpoint leads: cpu-work (the file
write, the GPU idle while the CPU serialises) naming the torch.save line, or copies
(device-to-host of the weights) naming it; together at least 40% of the steady state; about 40
steps.
"""
import os

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(*[nn.Linear(4096, 4096) for _ in range(4)]).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(2048, 4096, device="cuda")
path = "/tmp/blind-checkpoint.pt"
for step in range(40):
    loss = model(x).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if step % 10 == 9:
        torch.save(model.state_dict(), path)
os.remove(path)
print("last loss", loss.item())
