"""A small CNN training loop, as a PyTorch user writes one (the GPT loop's companion for costs).

  python3 tests/gpu/torch_cnn.py [--steps 300] [--workers 2] [--step-log FILE]

A ResNet-style network (three stages of two basic blocks) on 64x64 images at batch 128: bf16
autocast, channels_last, SGD with momentum, the batches from a DataLoader whose worker processes
make each image (pin_memory, non_blocking copies), and the loss read back every step for a running
mean (a sync each step). Nothing is warmed up before the loop.

Prints "step_ms=<median ms per step over the second half>" and the step count. --step-log FILE writes
each step's start and end to FILE, --toggle-trampolines MS switches CPython's perf trampolines on
and off in turns (steplog.py), for bench/sampling_toggle_cost.py.
"""
import argparse
import statistics

import torch
from steplog import StepLog
from torch import nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=300)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--batch", type=int, default=128)
p.add_argument("--size", type=int, default=64)
args, rest = p.parse_known_args()  # and steplog.py's options


class Images(torch.utils.data.Dataset):
    def __len__(self):
        return args.steps * args.batch

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        image = torch.randint(0, 256, (3, args.size, args.size), dtype=torch.uint8, generator=g)
        return image, i % 100


class Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.skip = None
        if stride != 1 or cin != cout:
            self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.skip is None else self.skip(x)))


def net():
    layers = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2)):
        layers += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 100)]
    return nn.Sequential(*layers)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = net().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = torch.utils.data.DataLoader(Images(), batch_size=args.batch, num_workers=args.workers,
                                         pin_memory=True, persistent_workers=args.workers > 0)
    mean = torch.tensor([0.5, 0.5, 0.5], device="cuda").view(1, 3, 1, 1) * 255
    times, running = [], 0.0
    steplog = StepLog.from_args(rest)
    batches = iter(loader)
    for i in range(args.steps):
        steplog.begin()
        images, labels = next(batches)
        x = images.cuda(non_blocking=True).float().sub_(mean).div_(64)
        x = x.contiguous(memory_format=torch.channels_last)
        y = labels.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.item()  # the running mean of the loss: the CPU waits for the GPU
        times.append(steplog.end())
    steplog.write()
    half = times[len(times) // 2 :]
    print(f"steps={args.steps} workers={args.workers} step_ms={statistics.median(half):.2f} "
          f"mean_loss={running / args.steps:.4f}")
