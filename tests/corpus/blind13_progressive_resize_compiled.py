"""Corpus (blind, batch 13): progressive-resizing image classification, torch.compile'd.

Expected verdict: tests/corpus/BLIND13_EXPECTED.md.

A ResNet-style classifier (a stem and four stages of one basic block each, 100 classes) is trained
with the progressive-resizing recipe of fast ImageNet schedules: the image resolution grows with the
epoch (128 -> 160 -> 192 -> 224 px, rounded to multiples of 32), 16 steps an epoch, batch 128. The
dataset is 2,048 synthetic 224 px images kept on the device as uint8 and resized per batch with
F.interpolate. The model is compiled once with torch.compile(dynamic=False), "static shapes let
Inductor pick the best kernels", and trained under bf16 autocast with SGD (Nesterov) and a
per-step learning-rate schedule. A training job starts in a fresh container, so the compiler caches
start empty (a private cache directory here). One warm-up step at the first epoch's resolution,
then 4 epochs x 16 steps. The running loss is read every step for the progress line.

The last line printed gives the seconds of the steps at a resolution seen for the first time, less
a steady step, against the loop's total.
"""
import os
import tempfile

# Fresh container: no Inductor / Triton cache from an earlier job.
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-cache-")
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cache-")

import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = "cuda"
EPOCHS = 4
STEPS_PER_EPOCH = 16
BATCH = 128
MIN_RES, MAX_RES = 128, 224
NUM_CLASSES = 100
DATASET = 2048
BASE_LR = 0.4


def get_resolution(epoch):
    """Linear ramp from MIN_RES to MAX_RES over the epochs, rounded to a multiple of 32."""
    frac = epoch / max(1, EPOCHS - 1)
    res = MIN_RES + frac * (MAX_RES - MIN_RES)
    return int(round(res / 32)) * 32


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.short is None else self.short(x)))


class ResNet10(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
        self.layers = nn.Sequential(BasicBlock(64, 64, 1), BasicBlock(64, 128, 2),
                                    BasicBlock(128, 256, 2), BasicBlock(256, 512, 2))
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def make_dataset(generator):
    """Synthetic 'images': class-dependent colour blobs on noise, uint8, 224 px, on the device."""
    labels = torch.randint(0, NUM_CLASSES, (DATASET,), device=DEVICE, generator=generator)
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, MAX_RES, device=DEVICE),
                            torch.linspace(-1, 1, MAX_RES, device=DEVICE), indexing="ij")
    centres = torch.rand(NUM_CLASSES, 2, device=DEVICE, generator=generator) * 1.2 - 0.6
    colours = torch.rand(NUM_CLASSES, 3, device=DEVICE, generator=generator)
    images = torch.empty(DATASET, 3, MAX_RES, MAX_RES, dtype=torch.uint8, device=DEVICE)
    for start in range(0, DATASET, 256):
        lab = labels[start:start + 256]
        c = centres[lab]
        d2 = (xx[None] - c[:, 0, None, None]) ** 2 + (yy[None] - c[:, 1, None, None]) ** 2
        blob = torch.exp(-d2 / 0.08)[:, None] * colours[lab][:, :, None, None]
        noise = torch.rand(len(lab), 3, MAX_RES, MAX_RES, device=DEVICE, generator=generator) * 0.35
        images[start:start + 256] = ((blob + noise).clamp(0, 1) * 255).to(torch.uint8)
    return images, labels


MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def load_batch(images, labels, res, generator):
    idx = torch.randint(0, DATASET, (BATCH,), device=DEVICE, generator=generator)
    x = images[idx].float().div_(255)
    flip = torch.rand(BATCH, 1, 1, 1, device=DEVICE, generator=generator) < 0.5   # horizontal flip
    x = torch.where(flip, x.flip(3), x)
    x = (x - MEAN.to(DEVICE)) / STD.to(DEVICE)
    if res != MAX_RES:
        x = F.interpolate(x, size=(res, res), mode="bilinear", align_corners=False, antialias=True)
    return x.contiguous(memory_format=torch.channels_last), labels[idx]


def lr_at(step, total):
    warm = total // 8
    if step < warm:
        return BASE_LR * (step + 1) / warm
    return BASE_LR * 0.5 * (1 + math.cos(math.pi * (step - warm) / (total - warm)))


def main():
    torch.backends.cudnn.benchmark = True
    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(0)
    torch.manual_seed(0)
    images, labels = make_dataset(gen)

    model = ResNet10(NUM_CLASSES).to(DEVICE).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=BASE_LR, momentum=0.9, nesterov=True,
                          weight_decay=5e-5)
    # Static shapes let Inductor specialise every kernel to the batch's exact size.
    cmodel = torch.compile(model, dynamic=False)

    def train_step(x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(cmodel(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    total = EPOCHS * STEPS_PER_EPOCH
    # Warm-up: one step at the first epoch's resolution (the first compile).
    x, y = load_batch(images, labels, get_resolution(0), gen)
    t0 = time.perf_counter()
    train_step(x, y).item()
    print(f"warm-up step (compile at {get_resolution(0)} px): {time.perf_counter() - t0:.1f} s",
          flush=True)

    step_times = []        # (resolution, seconds, first step at this resolution?)
    seen = {get_resolution(0)}
    running = None
    loop_start = time.perf_counter()
    step = 0
    for epoch in range(EPOCHS):
        res = get_resolution(epoch)
        for _ in range(STEPS_PER_EPOCH):
            t = time.perf_counter()
            for group in opt.param_groups:
                group["lr"] = lr_at(step, total)
            x, y = load_batch(images, labels, res, gen)
            loss = train_step(x, y).item()
            running = loss if running is None else 0.9 * running + 0.1 * loss
            first = res not in seen
            seen.add(res)
            step_times.append((res, time.perf_counter() - t, first))
            step += 1
        print(f"epoch {epoch}: {res} px, loss {running:.3f}, "
              f"{sum(s for r, s, _ in step_times if r == res):.1f} s", flush=True)
    loop_s = time.perf_counter() - loop_start

    steady = statistics.median(s for _, s, f in step_times if not f)
    firsts = [(r, s) for r, s, f in step_times if f]
    compile_s = sum(s - steady for _, s in firsts)
    print(f"compile: first steps at {', '.join(str(r) for r, _ in firsts)} px took "
          f"{sum(s for _, s in firsts):.2f} s, {compile_s:.2f} s over a steady step "
          f"({steady * 1e3:.1f} ms), of loop {loop_s:.2f} s; {len(step_times)} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
