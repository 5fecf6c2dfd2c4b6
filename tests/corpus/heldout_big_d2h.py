"""Corpus (held out): a 256 MB activation copied to the host every step for logging.

Planted: copies. A GPU-light model step (~1 ms) is followed by features.cpu() of a 256 MB fp32
tensor into pageable memory for an offline logger: the copy takes most of the step and blocks
the CPU. No NVTX. Written after the analysis was tuned: a check, not a target.
"""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(4096, 1024, device="cuda")
features = torch.randn(64, 1024, 1024, device="cuda")  # 256 MB
logged = []
for step in range(20):
    loss = model(x).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    features.mul_(0.999)
    logged = [features.cpu()]  # the logger keeps the latest
print("kept", logged[0].shape, "last loss", loss.item())
