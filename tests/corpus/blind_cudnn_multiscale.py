"""Corpus (blind, batch 5): multi-scale training with cudnn.benchmark on: a new image size a step.

Program: a small detection-style CNN backbone (4 conv + BatchNorm + ReLU blocks, bf16 autocast,
channels_last, SGD) trained with torch.backends.cudnn.benchmark = True, as detection code sets
it; each step draws an image size not seen before (height and width multiples of 32 from 256 to
512, as multi-scale training does), so cuDNN benchmarks every convolution again (forward, data
and weight gradients): it builds and times candidate algorithms before running the step. The
batch (16 images) is made on the GPU; the loss is read every step. No NVTX. 20 steps.
Expected, written before it was recorded (2026-11-26): cuDNN's per-shape set-up leads, as the
kind for set-up that recurs because shapes change: compilation (the cure of recompiling: fixed
or bucketed shapes, or benchmark off), at least 50% of the steady step. Runs on the H100 without
Warpline: under torch.profiler the kernels were busy 4% of the loop (steps of ~0.5 s); with
benchmark off the program ran 5 s faster (10 s against 15 s), so about half of each step is the
benchmark and the rest cuDNN's host-side plan building for a new shape, which benchmark off
still pays. The step's own convolutions take a few ms. gpu-bound or launch-bound is a miss;
cpu-work at the model's line would be the right place but the wrong cure. 20 steps (within 3).
"""
import random

import torch
from torch import nn

torch.backends.cudnn.benchmark = True
random.seed(0)
torch.manual_seed(0)


def block(cin, cout, stride):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True))


model = nn.Sequential(block(3, 32, 2), block(32, 64, 2), block(64, 128, 2), block(128, 256, 2),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(256, 20)).cuda().to(memory_format=torch.channels_last)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
sizes = random.sample([(h, w) for h in range(256, 513, 32) for w in range(256, 513, 32)], 20)
for step, (h, w) in enumerate(sizes):
    x = torch.randn(16, 3, h, w, device="cuda").contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 20, (16,), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    value = loss.item()
print("last loss", value)
