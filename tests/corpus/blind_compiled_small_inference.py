"""Corpus (blind, batch 3): a small model served one request at a time under torch.compile.

Program: a 6-layer MLP (width 512) compiled with torch.compile(mode="reduce-overhead"), so each
call replays a CUDA graph; 300 requests of batch 1, each copied in from a pinned CPU tensor and
its result read back with .item() (a serving loop). No NVTX.
Expected, written before it was recorded (2026-11-26): cpu-work (between graph replays the CPU
runs Python and the compiled module's guards; the graph's GPU work is tiny), at least 50% of the
steady step; advice that does not tell the program to use CUDA graphs (it already does); about
300 steps.
"""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(512, 512), nn.ReLU())]).cuda()
model = torch.compile(model.eval(), mode="reduce-overhead")
requests = torch.randn(300, 1, 512).pin_memory()
with torch.inference_mode():
    for i in range(300):
        x = requests[i].cuda(non_blocking=True)
        score = model(x).sum().item()
print("last score", score)
