"""Training a skin-lesion (dermoscopy) classifier with heavy NumPy augmentation in the DataLoader.

The images are pre-decoded into one uint8 array at start-up. Each sample gets a random rotation
and scale (bilinear, NumPy), a DullRazor-style hair removal (grey-level closing with a 9x9 window,
then blur in-painting), colour jitter through HSV and a random crop - all in the dataset's
__getitem__. The loader has num_workers=3 (copied from a laptop config) on a 16-core machine and
persistent_workers is off, so the workers are re-forked every epoch; the training step (a
ResNet-style net in bf16, channels_last) waits on next(loader) most of the time.
"""
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

SMALL = os.environ.get("BLIND_SMALL") == "1"
dev = "cuda"
torch.manual_seed(0)
if SMALL:
    N_IMAGES, SRC, CROP, BATCH, EPOCHS, WARMUP, WORKERS = 48, 96, 64, 8, 2, 1, 1
else:
    N_IMAGES, SRC, CROP, BATCH, EPOCHS, WARMUP, WORKERS = 640, 384, 224, 40, 3, 3, 3
CLASSES = 7  # nevus, melanoma, BCC, AK, BKL, DF, vascular
N_BASE = min(N_IMAGES, 192)

t_setup = time.perf_counter()


def synth_lesion(rng):
    yy, xx = np.mgrid[0:SRC, 0:SRC].astype(np.float32) / SRC
    skin = np.array([0.85, 0.65, 0.55], np.float32) * rng.uniform(0.8, 1.05)
    img = np.broadcast_to(skin, (SRC, SRC, 3)).copy()
    cy, cx, r = rng.uniform(0.35, 0.65), rng.uniform(0.35, 0.65), rng.uniform(0.12, 0.3)
    d = ((yy - cy) ** 2 + (xx - cx) ** 2 * rng.uniform(0.6, 1.6)) / r ** 2
    blob = np.exp(-d ** 2)[..., None]
    lesion = np.array([0.35, 0.2, 0.15], np.float32) * rng.uniform(0.5, 1.2)
    img = img * (1 - blob) + lesion * blob
    img += rng.normal(0, 0.03, img.shape).astype(np.float32)
    for _ in range(rng.integers(0, 12)):  # dark hairs
        y0, x0 = rng.integers(0, SRC, 2)
        ang = rng.uniform(0, np.pi)
        t = np.arange(0, SRC // 2)
        ys = np.clip((y0 + t * np.sin(ang)).astype(int), 0, SRC - 1)
        xs = np.clip((x0 + t * np.cos(ang)).astype(int), 0, SRC - 1)
        img[ys, xs] = 0.1
    return (np.clip(img, 0, 1) * 255).astype(np.uint8)


rng0 = np.random.default_rng(0)
base = np.stack([synth_lesion(rng0) for _ in range(N_BASE)])
labels = rng0.integers(0, CLASSES, N_IMAGES)


def rgb_to_hsv(img):
    mx, mn = img.max(2), img.min(2)
    delta = mx - mn + 1e-6
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    h = np.where(mx == r, (g - b) / delta % 6, np.where(mx == g, (b - r) / delta + 2, (r - g) / delta + 4)) / 6
    s = np.where(mx > 0, delta / (mx + 1e-6), 0)
    return h, s, mx


def hsv_to_rgb(h, s, v):
    i = np.floor(h * 6).astype(np.int32) % 6
    f = h * 6 - np.floor(h * 6)
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    choices = [np.stack(c, -1) for c in ((v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q))]
    out = np.zeros(h.shape + (3,), np.float32)
    for k, c in enumerate(choices):
        out = np.where((i == k)[..., None], c, out)
    return out


def sliding(img, k, fn):
    pad = k // 2
    p = np.pad(img, pad, mode="edge")
    out = p[:, pad:pad + img.shape[1]].copy()
    for dx in range(-pad, pad + 1):
        if dx:
            out = fn(out, p[:, pad + dx:pad + dx + img.shape[1]])
    res = out[pad:pad + img.shape[0]].copy()
    for dy in range(-pad, pad + 1):
        if dy:
            res = fn(res, out[pad + dy:pad + dy + img.shape[0]])
    return res


class DermoscopyDataset(Dataset):
    def __init__(self, n):
        self.n = n
        c = (np.arange(CROP, dtype=np.float32) - CROP / 2)
        self.gy, self.gx = np.meshgrid(c, c, indexing="ij")

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i * 7919 + int(time.perf_counter_ns() % 100000))
        img = base[i % N_BASE].astype(np.float32) / 255.0
        # random rotation + scale + translation, bilinear
        ang, sc = rng.uniform(0, 2 * np.pi), rng.uniform(0.85, 1.2)
        cy, cx = SRC / 2 + rng.uniform(-20, 20, 2) * SRC / 384
        ys = (np.cos(ang) * self.gy - np.sin(ang) * self.gx) * sc + cy
        xs = (np.sin(ang) * self.gy + np.cos(ang) * self.gx) * sc + cx
        y0 = np.clip(np.floor(ys).astype(np.int32), 0, SRC - 2)
        x0 = np.clip(np.floor(xs).astype(np.int32), 0, SRC - 2)
        wy = np.clip(ys - y0, 0, 1)[..., None]
        wx = np.clip(xs - x0, 0, 1)[..., None]
        out = (img[y0, x0] * (1 - wy) * (1 - wx) + img[y0 + 1, x0] * wy * (1 - wx)
               + img[y0, x0 + 1] * (1 - wy) * wx + img[y0 + 1, x0 + 1] * wy * wx)
        # DullRazor-style hair removal: black-hat on grey, in-paint with a blur
        grey = out.mean(2)
        closed = sliding(sliding(grey, 9, np.maximum), 9, np.minimum)
        hair = (closed - grey) > 0.08
        blur = np.stack([sliding(out[..., c], 5, np.add) / 25.0 for c in range(3)], -1)
        out = np.where(hair[..., None], blur, out)
        # colour jitter in HSV
        h, s, v = rgb_to_hsv(out)
        h = (h + rng.uniform(-0.03, 0.03)) % 1.0
        s = np.clip(s * rng.uniform(0.8, 1.2), 0, 1)
        v = np.clip(v * rng.uniform(0.85, 1.15), 0, 1)
        out = hsv_to_rgb(h, s, v)
        if rng.random() < 0.5:
            out = out[:, ::-1]
        if rng.random() < 0.5:
            out = out[::-1]
        out = (out - np.array([0.7, 0.55, 0.5], np.float32)) / np.array([0.15, 0.15, 0.15], np.float32)
        return torch.from_numpy(np.ascontiguousarray(out.transpose(2, 0, 1), dtype=np.float32)), int(labels[i])


def block(cin, cout, stride):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class LesionNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
        self.stages = nn.Sequential(block(64, 64, 1), block(64, 128, 2), block(128, 256, 2),
                                    block(256, 512, 2))
        self.head = nn.Linear(512, CLASSES)

    def forward(self, x):
        return self.head(F.adaptive_avg_pool2d(self.stages(self.stem(x)), 1).flatten(1))


model = LesionNet().to(dev).to(memory_format=torch.channels_last)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4, nesterov=True)
class_w = torch.tensor([0.5, 2.0, 1.5, 1.5, 1.0, 3.0, 3.0], device=dev)
ema = [p.detach().clone() for p in model.parameters()]

# Validation set: centre crops prepared once, kept on the GPU.
val_x = torch.from_numpy(((base[:64, (SRC - CROP) // 2:(SRC + CROP) // 2,
                            (SRC - CROP) // 2:(SRC + CROP) // 2].astype(np.float32) / 255.0
                           - 0.6) / 0.15).transpose(0, 3, 1, 2).copy()).to(dev)
val_x = val_x.contiguous(memory_format=torch.channels_last)
val_y = torch.from_numpy(labels[:64]).to(dev)

ds = DermoscopyDataset(N_IMAGES)
loader = DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=WORKERS, pin_memory=not SMALL,
                    drop_last=True, persistent_workers=False)
steps_per_epoch = len(loader)
print(f"dermoscopy: {N_IMAGES} images, {steps_per_epoch} steps/epoch x {EPOCHS} epochs, "
      f"{WORKERS} workers, setup {time.perf_counter() - t_setup:.1f}s", flush=True)


def train_step(x, y):
    x = x.to(dev, non_blocking=True).contiguous(memory_format=torch.channels_last)
    y = y.to(dev, non_blocking=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y, weight=class_w, label_smoothing=0.1)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    with torch.no_grad():
        torch._foreach_lerp_(ema, [p.detach() for p in model.parameters()], 0.001)
    return loss.detach()


@torch.no_grad()
def validate():
    model.eval()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        pred = model(val_x).argmax(1)
    model.train()
    recalls = [((pred == c) & (val_y == c)).sum() / (val_y == c).sum().clamp(min=1) for c in range(CLASSES)]
    return torch.stack(recalls).mean().item()


wait_s = 0.0
timed = 0
loop_s = 0.0
loop_t0 = None
global_step = 0
for epoch in range(EPOCHS):
    it = iter(loader)  # workers forked again each epoch (persistent_workers=False)
    for i in range(steps_per_epoch):
        if global_step == WARMUP:
            torch.cuda.synchronize()
            loop_t0 = time.perf_counter()
        t0 = time.perf_counter()
        x, y = next(it)
        if loop_t0 is not None:
            wait_s += time.perf_counter() - t0
        loss = train_step(x, y)
        global_step += 1
        if loop_t0 is not None:
            timed += 1
        if global_step % 10 == 0:
            print(f"epoch {epoch} step {global_step:3d} loss {loss.item():.3f}", flush=True)
    del it
    print(f"epoch {epoch} balanced acc {validate():.3f}", flush=True)
torch.cuda.synchronize()
loop_s = time.perf_counter() - loop_t0
print(f"GROUND TRUTH: input-bound: waiting in next(loader) for augmented batches {wait_s:.2f} s = "
      f"{100 * wait_s / loop_s:.1f}% of the timed loop {loop_s:.2f} s; {timed} timed steps "
      f"({EPOCHS} epochs of {steps_per_epoch}) after {WARMUP} warm-up steps", flush=True)
