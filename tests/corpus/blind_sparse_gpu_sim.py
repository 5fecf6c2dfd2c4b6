"""Corpus (blind, batch 3): a Python simulation that launches a little GPU work now and then.

Program: each of 40 iterations runs a particle update in pure Python (lists of floats, ~8 ms of
interpreter work), calling into PyTorch on the GPU only every 400 particles (a small tensor op
on a 256-element buffer, 10 of them an iteration), then reads a checksum back with .item(). NVTX
"tick N" ranges.
Expected, written before it was recorded (2026-11-26): cpu-work (the GPU idles while Python runs
between launches that are milliseconds apart, not microseconds: not launch cost), at least 80%
of the steady step; 40 steps from NVTX.
"""
import math

import torch

torch.manual_seed(0)
buffer = torch.zeros(256, device="cuda")
positions = [float(i) for i in range(4000)]
velocities = [math.sin(i) for i in range(4000)]
for tick in range(40):
    torch.cuda.nvtx.range_push(f"tick {tick}")
    for i in range(len(positions)):
        v = velocities[i] * 0.999 + 0.001 * math.cos(positions[i])
        for _ in range(6):
            v = v * 0.9999 + 1e-6 * math.sin(v)
        velocities[i] = v
        positions[i] += v
        if i % 400 == 399:
            buffer.add_(1.0).mul_(0.5)
    checksum = buffer.sum().item()
    torch.cuda.nvtx.range_pop()
print("checksum", checksum)
