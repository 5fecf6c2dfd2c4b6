"""Corpus: a loop of large bf16 GEMMs without NVTX: GPU-bound (compute).

Planted: nothing but work. Each step multiplies four 8192x8192 bf16 matrices in a chain with a
scaling kernel after each product, then reads a 4-byte checksum back. The GPU is busy nearly all
of each step with cuBLAS GEMMs; the right verdict is "the GPU is busy; these kernels hold the
time". 45 steps of 4 GEMMs each, not 180 one-GEMM "steps".
"""
import torch

torch.manual_seed(0)
n = 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16) * 0.01
ws = [torch.randn(n, n, device="cuda", dtype=torch.bfloat16) * 0.01 for _ in range(4)]
for step in range(45):
    h = a
    for w in ws:
        h = (h @ w) * 0.5
    total = h.float().abs().mean().item()
print("done", total)
