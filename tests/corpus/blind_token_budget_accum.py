"""Corpus (blind, batch 5): gradient accumulation to a token budget: 3 to 7 micro-batches a step.

Program: 6 nn.TransformerEncoderLayer (d_model 2048, 16 heads, feed-forward 8192, bf16 autocast);
micro-batches of 16 sequences whose length varies (128 to 1024 tokens, log-uniform, multiples of
64, from a fixed seed) are accumulated until 32,768 tokens have been seen, as token-budget
batching does, so one optimizer step (fused AdamW) holds 3 to 7 forward/backward passes of
different shapes (32k to 45k tokens). Data made on the GPU; the loss printed every 10 optimizer
steps. No NVTX. 30 optimizer steps.
Expected, written before it was recorded (2026-11-26): gpu-bound, at least 85% of the steady
state: the CPU queues a micro-batch in a few ms, the GPU needs tens of ms for it, and nothing
syncs between prints (a run under torch.profiler, not Warpline, saw kernels busy 96% of the
loop's second half, with lengths of 256 to 1024). The steps are the 30 optimizer steps (within
3), not the 149 micro-batches, although consecutive steps differ in launches and durations.
"""
import random

import torch
from torch import nn

random.seed(0)
torch.manual_seed(0)
layers = nn.ModuleList([nn.TransformerEncoderLayer(2048, 16, 8192, batch_first=True)
                        for _ in range(6)]).cuda()
opt = torch.optim.AdamW(layers.parameters(), lr=1e-4, fused=True)
budget = 32768
for step in range(30):
    seen = 0
    while seen < budget:
        length = 64 * round(2 ** random.uniform(7, 10) / 64)
        h = torch.randn(16, length, 2048, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            for layer in layers:
                h = layer(h)
            loss = h.float().pow(2).mean() * (16 * length / budget)
        loss.backward()
        seen += 16 * length
    opt.step()
    opt.zero_grad(set_to_none=True)
    if step % 10 == 9:
        print("step", step + 1, "loss", loss.item())
