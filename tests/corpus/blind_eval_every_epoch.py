"""Corpus (blind, batch 4): training with an evaluation pass after every epoch.

Program: an MLP (6 Linear(4096, 4096) + ReLU, batch 2048, bf16 autocast, fused AdamW) trained
for 3 epochs of 20 steps; after each epoch, 10 evaluation batches under torch.no_grad() with the
accuracy read back by .item(). Data made on the GPU. No NVTX.
Expected, written before it was recorded (2026-11-26): gpu-bound, at least 85% of the steady
step; the steps are the 60 training steps (within 6), the evaluations inside or between them.
"""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(4096, 4096), nn.ReLU())]).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
x = torch.randn(2048, 4096, device="cuda")
y = torch.randint(0, 4096, (2048,), device="cuda")
for epoch in range(3):
    model.train()
    for step in range(20):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    model.eval()
    correct = 0
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        for _ in range(10):
            correct += (model(x).argmax(1) == y).sum().item()
    print("epoch", epoch, "accuracy", correct / (10 * 2048))
