"""Corpus (blind, batch 6): activations offloaded to pinned host memory with save_on_cpu.

Program: a 12-block pre-norm MLP trunk (LayerNorm, Linear(1024, 4096), GELU, Linear(4096, 1024),
residual; bf16 autocast, fused AdamW) on 8,192 tokens, trained under
torch.autograd.graph.save_on_cpu(pin_memory=True), as memory-starved fine-tuning code does to fit
a larger batch: every tensor autograd saves in the forward (each LayerNorm's fp32 input, each
Linear's bf16 input and bf16 weight, each GELU's input, the loss's inputs) is copied to pinned
host memory with a blocking copy_, and copied back with non_blocking=True when the backward needs
it. The data is made on the GPU once; the loss is read every step. No NVTX. 30 steps.
Expected, written before it was recorded (2026-11-26), not run beforehand, so estimated from
first principles: copies, at least 70% of the steady step, in both directions, from and to
*pinned* memory (advice to pin the memory is a miss: it is pinned; the cure is to offload less,
or to checkpoint activations instead). A block saves ~190 MB (32 MB fp32 LayerNorm input, bf16
inputs of 16 + 64 + 64 MB, two 8 MB bf16 weights), so a step moves ~2.3 GB each way; at the ~50
GB/s a pinned copy gets on this machine (52 GB/s measured host to device in batch 5) that is ~90
ms a step, on the compute stream, against ~10 ms of GEMMs (~0.8 TFLOP a block, forward and
backward), elementwise kernels and the optimizer. The device-to-host copies should be named at
the forward (a line of Block.forward or the model call, under torch/autograd/graph.py's
pack_to_cpu), the host-to-device ones at loss.backward(). A sync-stall finding may follow (each
forward copy blocks the CPU until it is done) but must not lead: while the CPU waits, the GPU is
copying, not idle. gpu-bound or launch-bound is a miss. 30 steps (within 2); the first is longer
(~2.3 GB of pinned memory allocated once, then reused by PyTorch's host allocator).
"""
import torch
from torch import nn

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(nn.functional.gelu(self.up(self.norm(x))))


model = nn.Sequential(*[Block(1024) for _ in range(12)]).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
x = torch.randn(8192, 1024, device="cuda")
target = torch.randn(8192, 1024, device="cuda")
for step in range(30):
    with torch.autograd.graph.save_on_cpu(pin_memory=True):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.mse_loss(model(x).float(), target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    value = loss.item()
print("last loss", value)
