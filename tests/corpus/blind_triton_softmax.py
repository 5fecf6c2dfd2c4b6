"""Corpus (blind, batch 2): a hand-written Triton kernel between large matrix products.

Program: each iteration multiplies two 8192x8192 bf16 matrices with torch.matmul and applies a
row softmax written in Triton (one program per row) to the product; 40 iterations, no NVTX, one
torch.cuda.synchronize() at the end, so the CPU runs far ahead of the GPU.
Expected, written before it was recorded (2026-11-26): gpu-bound, the GPU busy for at least 90%
of the steady step, the matrix product the kernel with the most time and the Triton
softmax_kernel second; 40 steps (within 4), measured on the GPU.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, (e / tl.sum(e, axis=0)).to(tl.bfloat16), mask=mask)


def softmax(x):
    out = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](out, x, x.stride(0), x.shape[1],
                                  BLOCK=triton.next_power_of_2(x.shape[1]))
    return out


torch.manual_seed(0)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) / 90
for it in range(40):
    a = softmax(a @ b) * 8192
torch.cuda.synchronize()
print("checksum", float(a.float().sum()))
