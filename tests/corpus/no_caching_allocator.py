"""Corpus: PyTorch's caching allocator turned off: every tensor is a cudaMalloc and a cudaFree.

Planted: memory management. Run with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (the script sets it before
importing torch), as debugging setups do and forget. A small CNN training loop without NVTX, the
loss read back every step. Each cudaFree synchronizes the device. Advice that helps: unset the
variable.
"""
import os

os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
import torch  # noqa: E402
from torch import nn  # noqa: E402

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1),
                      nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(128, 3, 64, 64, device="cuda")
y = torch.randint(0, 10, (128,), device="cuda")
for step in range(40):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    last = loss.item()
print("last loss", last)
