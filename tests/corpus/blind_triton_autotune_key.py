"""Corpus (blind, batch 6): a Triton kernel autotuned on a size that changes with every batch.

Program: an inference service for a 2-block MLP (Linear(2048, 8192) without bias, then a custom
fused bias + GELU Triton kernel, then Linear(8192, 2048), residual; bf16, inference_mode). The
kernel is decorated with @triton.autotune over 4 configurations (BLOCK_SIZE 1024 to 8192) and
key=["n_elements"], as Triton's tutorials key kernels; each batch holds 16 sequences of a length
not seen before (2,048 to 4,096 tokens, multiples of 64), so n_elements is new every time and the
autotuner benchmarks all 4 configurations again before the batch runs: for each, triton.testing's
do_bench times ~25 ms of warm-up calls and ~100 ms of repetitions, each repetition preceded by a
zero_ of a 256 MB buffer (to flush L2) and bracketed by CUDA events, then synchronizes. The
batch's own work is then ~15 ms (four GEMMs of 1-2 TFLOP); a summary is read back with .item().
No NVTX. 20 batches.
Expected, written before it was recorded (2026-11-26), not run beforehand, so estimated from
first principles: the autotuner's benchmarking, ~0.5 s a batch against ~15 ms of the model's
work, so at least 90% of the steady step. It is set-up that recurs because a shape changes, the
kind whose cure is bucketed or fixed shapes (here: key on a bucket of the size, or tune once):
compilation, naming the bias_gelu call (through triton/runtime/autotuner.py) or the Triton
kernel. The trap: the GPU is busy most of that time (each repetition queues ~85 us of zero_ and
a 0.4-0.7 ms candidate kernel, 0.5-1 GB read and written, more than the CPU needs to launch
them), so gpu-bound is a miss even if it names those kernels: a faster kernel saves nothing.
Only the first batch compiles the 4 configurations (cubins loaded once): calling that alone the
cause is a miss too. Steps: the 20 batches (within 3), ~1,200-2,000 kernels each; a "loop" found
inside the benchmark (its hundreds of identical zero_ / event / kernel / event repetitions) is a
miss.
"""
import random

import torch
import triton
import triton.language as tl
from torch import nn


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),
                          triton.Config({"BLOCK_SIZE": 2048}, num_warps=4),
                          triton.Config({"BLOCK_SIZE": 4096}, num_warps=8),
                          triton.Config({"BLOCK_SIZE": 8192}, num_warps=16)],
                 key=["n_elements"])
@triton.jit
def bias_gelu_kernel(x_ptr, bias_ptr, out_ptr, n_elements, n_cols, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    h = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    h = h + tl.load(bias_ptr + offsets % n_cols, mask=mask, other=0.0).to(tl.float32)
    inner = 0.7978845608028654 * (h + 0.044715 * h * h * h)
    y = h * tl.sigmoid(2.0 * inner)  # 0.5 * h * (1 + tanh(inner)): GELU, tanh form
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


def bias_gelu(x, bias):
    out = torch.empty_like(x)
    n = x.numel()
    bias_gelu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, bias, out, n,
                                                                         x.shape[-1])
    return out


class Block(nn.Module):
    def __init__(self, d=2048, hidden=8192):
        super().__init__()
        self.up = nn.Linear(d, hidden, bias=False)
        self.bias = nn.Parameter(torch.zeros(hidden))
        self.down = nn.Linear(hidden, d)

    def forward(self, x):
        return x + self.down(bias_gelu(self.up(x), self.bias))


random.seed(0)
torch.manual_seed(0)
model = nn.Sequential(Block(), Block()).cuda().to(torch.bfloat16).eval()
lengths = random.sample(range(2048, 4097, 64), 20)
with torch.inference_mode():
    for batch, length in enumerate(lengths):
        x = torch.randn(16 * length, 2048, device="cuda", dtype=torch.bfloat16)
        score = model(x).float().pow(2).mean().item()
        if batch % 5 == 4:
            print("batch", batch + 1, "tokens", 16 * length, "score %.4f" % score)
print("tuned sizes", len(bias_gelu_kernel.cache), "last best", bias_gelu_kernel.best_config)
