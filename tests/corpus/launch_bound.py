"""Corpus: launch-bound: a hand-written RMSNorm + SwiGLU block on small tensors, NVTX steps.

Planted: launch cost. Each step runs 8 blocks written with separate element-wise ops on a
(16, 512) activation: ~300 kernels of 2-4 us each, every one launched from Python. The CPU's
launch calls take longer than the kernels, so the GPU idles between them. Fusing (torch.compile)
or a CUDA graph helps.
"""
import torch

torch.manual_seed(0)
d = 512
ws = [(torch.randn(d, d, device="cuda") * 0.02, torch.randn(d, d, device="cuda") * 0.02,
       torch.ones(d, device="cuda")) for _ in range(8)]
x0 = torch.randn(16, d, device="cuda")


def block(x, w1, w2, g):
    rms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    h = x * rms * g
    a = h @ w1
    b = h @ w2
    return x + torch.sigmoid(a) * a * b


for step in range(40):
    torch.cuda.nvtx.range_push(f"step {step}")
    x = x0
    for w1, w2, g in ws:
        x = block(x, w1, w2, g)
    out = x.sum()
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print("done", out.item())
