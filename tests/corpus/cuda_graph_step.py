"""Corpus: a whole training step captured in a CUDA graph and replayed, no NVTX.

Planted: nothing slow: launch cost is gone (one graph launch per step), and the GPU is busy with
the step's GEMMs (an 8-layer MLP, width 2048, batch 1024). Each step copies a new batch into the
graph's static input and reads the loss back. The right verdict is GPU-bound: the GEMM kernels
hold the time.
"""
import torch
from torch import nn

torch.manual_seed(0)
d = 2048
model = nn.Sequential(*[nn.Sequential(nn.Linear(d, d), nn.ReLU()) for _ in range(8)]).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-4, capturable=True)
static_x = torch.randn(1024, d, device="cuda")
batches = [torch.randn(1024, d, device="cuda") for _ in range(4)]

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):  # warm up on a side stream before capture, as the PyTorch docs do
        opt.zero_grad(set_to_none=True)
        model(static_x).pow(2).mean().backward()
        opt.step()
torch.cuda.current_stream().wait_stream(s)

graph = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)
with torch.cuda.graph(graph):
    static_loss = model(static_x).pow(2).mean()
    static_loss.backward()
    opt.step()

for step in range(40):
    static_x.copy_(batches[step % 4])
    graph.replay()
    value = static_loss.item()
print("last loss", value)
