"""Corpus (blind, batch 6): a GPU-bound transformer on the cudaMallocAsync allocator backend.

Program: 6 nn.TransformerEncoderLayer (d_model 2048, 16 heads, feed-forward 8192, pre-norm, bf16
autocast, fused AdamW) on batches of 16 x 1,024 tokens made on the GPU, with
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync set (as the script does before importing torch;
people set it against fragmentation). With that backend PyTorch does not cache blocks itself:
every tensor it makes or frees is a cudaMallocAsync or cudaFreeAsync call (~1,000 of each a
step), served by the driver's stream-ordered pool, which PyTorch tells never to give memory
back (release threshold UINT64_MAX); neither call synchronizes anything. The loss is read every
step. No NVTX. 30 steps.
Expected, written before it was recorded (2026-11-26), not run beforehand, so estimated from
first principles: gpu-bound, at least 85% of the steady step. A step is ~32 TFLOP of bf16
GEMMs and attention (~55-65 ms), while the CPU queues it, allocator calls included, in ~10-20
ms and then waits at .item(); the allocator calls cost a microsecond or two each, on the CPU
only, while the GPU works through the queue. The trap is the allocator: thousands of allocation
calls a step, where this corpus's other allocator programs (empty_cache, no caching, a memory
cap) paid for cudaMalloc and cudaFree that synchronize. An allocator finding first is a miss; as
a later finding it must not say the calls stall the GPU or advise removing empty_cache().
launch-bound is a miss. 30 steps (within 2).
"""
import os

os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync")

import torch  # noqa: E402 (the allocator's backend is read when CUDA starts)
from torch import nn  # noqa: E402

torch.manual_seed(0)
layers = nn.Sequential(*[nn.TransformerEncoderLayer(2048, 16, 8192, batch_first=True,
                                                    norm_first=True) for _ in range(6)]).cuda()
opt = torch.optim.AdamW(layers.parameters(), lr=1e-4, fused=True)
for step in range(30):
    x = torch.randn(16, 1024, 2048, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = layers(x).float().pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    value = loss.item()
print("allocator", torch.cuda.get_allocator_backend(), "last loss", value)
