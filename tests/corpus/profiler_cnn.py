"""Corpus: the CNN of loop_logging_eval.py under torch.profiler, exported as a Chrome trace.

  python3 profiler_cnn.py OUT.pt.trace.json.gz

Planted: the same GPU-bound CNN; the profiler's schedule records 8 active steps, each a
"ProfilerStep#N" range. Operator names such as CudnnBatchNormBackward0 hold no step: only the
ProfilerStep ranges are steps.
"""
import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule

torch.manual_seed(0)


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


model = nn.Sequential(block(3, 128), block(128, 256), block(256, 256), block(256, 256),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(64, 3, 64, 64, device="cuda")
y = torch.randint(0, 10, (64,), device="cuda")
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
             schedule=schedule(wait=1, warmup=2, active=8, repeat=1)) as prof:
    for step in range(12):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 4 == 0:
            print(f"step {step} loss {loss.item():.4f}")
        prof.step()
prof.export_chrome_trace(sys.argv[1])
