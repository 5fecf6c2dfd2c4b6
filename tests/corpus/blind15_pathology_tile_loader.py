"""Blind batch 15: a histopathology tile classifier fed by three DataLoader workers.

A pathology lab trains a tumour / stroma / lymphocyte / necrosis classifier on 256 x 256 H&E tiles
cut from whole-slide images. The tiles are stored compressed (deflate, as in the tiled TIFFs the
scanner writes), 512 of them held in memory as `bytes`; the dataset presents 8,192 samples (16
random views of each tile per epoch). Each sample is prepared in a DataLoader worker, in NumPy:

- `zlib.decompress` of the tile (196,608 bytes of RGB);
- a random 224 x 224 crop, a random multiple of 90 degrees and a random flip;
- HED stain augmentation: RGB to optical density (`-log`), projection on the H&E-DAB stain
  vectors, a random scale and shift per stain, back to RGB (`exp`), in float32;
- a random Gaussian blur (separable, 5 taps) on half of the samples, brightness/contrast jitter;
- normalisation with the dataset's mean and standard deviation, HWC to CHW.

`num_workers=3` (the machine has 16 cores), `pin_memory=True`, `persistent_workers=True`,
`prefetch_factor=4`. The training loop copies each batch with `.to("cuda", non_blocking=True)` from
the pinned batch, so the copies are asynchronous and small next to the wait for the workers.

The model is a ResNet-26-style network (bottleneck blocks, widths 64-512), channels_last, bf16
autocast, SGD with momentum and a one-cycle learning rate, batch 64. The loss is read every 10
steps. No NVTX. 3 warm-up batches (the workers' start), then 80 steps.

Ground truth printed at the end: seconds blocked in `next()` on the loader's iterator and seconds
in the non-blocking copies, against the loop's seconds; the number of steps.
"""
import math
import time
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

TILE, CROP = 256, 224
N_TILES, VIEWS = 512, 16
BATCH, WORKERS = 64, 3
WARMUP, STEPS, LOG_EVERY = 3, 80, 10
CLASSES = 4
MEAN = np.array([0.70, 0.52, 0.68], dtype=np.float32)
STD = np.array([0.16, 0.20, 0.14], dtype=np.float32)
# Ruifrok & Johnston's H&E-DAB stain vectors (rows) and their inverse.
RGB_FROM_HED = np.array([[0.65, 0.70, 0.29], [0.07, 0.99, 0.11], [0.27, 0.57, 0.78]], dtype=np.float32)
RGB_FROM_HED /= np.linalg.norm(RGB_FROM_HED, axis=1, keepdims=True)
HED_FROM_RGB = np.linalg.inv(RGB_FROM_HED).astype(np.float32)


def synth_tile(rng, label):
    """A pink stroma background with purple nuclei; density and size depend on the class."""
    yy, xx = np.mgrid[0:TILE, 0:TILE].astype(np.float32)
    img = np.empty((TILE, TILE, 3), np.float32)
    base = np.array([0.92, 0.70, 0.80], np.float32) - 0.05 * label
    fibres = 0.04 * np.sin(xx * rng.uniform(0.05, 0.2) + yy * rng.uniform(0.02, 0.1))
    img[:] = base + fibres[..., None]
    n_nuclei = [40, 15, 160, 25][label] + rng.integers(0, 20)
    radius = [7.0, 4.0, 3.5, 9.0][label]
    for _ in range(n_nuclei):
        cy, cx = rng.uniform(0, TILE, 2)
        r = radius * rng.uniform(0.6, 1.4)
        y0, y1, x0, x1 = int(max(cy - r, 0)), int(min(cy + r + 1, TILE)), int(max(cx - r, 0)), int(min(cx + r + 1, TILE))
        d = ((yy[y0:y1, x0:x1] - cy) ** 2 + (xx[y0:y1, x0:x1] - cx) ** 2) < r * r
        img[y0:y1, x0:x1][d] = np.array([0.35, 0.20, 0.55], np.float32) * rng.uniform(0.8, 1.2)
    img += rng.normal(0, 0.02, img.shape).astype(np.float32)
    return (np.clip(img, 0, 1) * 255).astype(np.uint8)


class CompressedTiles(Dataset):
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, CLASSES, N_TILES)
        self.blobs = [zlib.compress(synth_tile(rng, int(l)).tobytes(), 6) for l in self.labels]

    def __len__(self):
        return N_TILES * VIEWS

    def __getitem__(self, i):
        rng = np.random.default_rng(i * 7919 + 17)
        t = i % N_TILES
        img = np.frombuffer(zlib.decompress(self.blobs[t]), np.uint8).reshape(TILE, TILE, 3)
        y, x = rng.integers(0, TILE - CROP + 1, 2)
        img = np.rot90(img[y:y + CROP, x:x + CROP], int(rng.integers(0, 4)))
        if rng.random() < 0.5:
            img = img[:, ::-1]
        rgb = img.astype(np.float32) / 255.0
        # HED jitter.
        od = -np.log(np.maximum(rgb, 1e-6))
        hed = od.reshape(-1, 3) @ HED_FROM_RGB
        hed = hed * rng.uniform(0.95, 1.05, 3).astype(np.float32) + rng.uniform(-0.05, 0.05, 3).astype(np.float32)
        rgb = np.exp(-(hed @ RGB_FROM_HED)).reshape(CROP, CROP, 3)
        if rng.random() < 0.5:
            k = np.array([1, 4, 6, 4, 1], np.float32) / 16
            p = np.pad(rgb, ((2, 2), (2, 2), (0, 0)), mode="reflect")
            rgb = sum(k[j] * p[j:j + CROP] for j in range(5))
            rgb = sum(k[j] * rgb[:, j:j + CROP] for j in range(5))
        rgb = (rgb - 0.5) * rng.uniform(0.9, 1.1) + 0.5 + rng.uniform(-0.05, 0.05)
        rgb = (np.clip(rgb, 0, 1) - MEAN) / STD
        return torch.from_numpy(np.ascontiguousarray(rgb.transpose(2, 0, 1))), int(self.labels[t])


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * 4
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        nn.init.zeros_(self.bn3.weight)   # zero_init_residual
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        return F.relu(h + (x if self.down is None else self.down(x)))


class ResNet26(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for width, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            for j in range(2):
                layers.append(Bottleneck(cin, width, stride if j == 0 else 1))
                cin = width * 4
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, CLASSES)

    def forward(self, x):
        return self.fc(self.layers(self.stem(x)).mean((2, 3)))


def main():
    dev = torch.device("cuda")
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    t0 = time.perf_counter()
    ds = CompressedTiles()
    print(f"{N_TILES} compressed tiles, {sum(map(len, ds.blobs)) / 2**20:.1f} MiB "
          f"({time.perf_counter() - t0:.1f} s)", flush=True)
    loader = DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=WORKERS, pin_memory=True,
                        persistent_workers=True, prefetch_factor=4, drop_last=True)
    model = ResNet26().to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, nesterov=True, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=WARMUP + STEPS)
    it = iter(loader)

    def step(x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        return loss.detach()

    for _ in range(WARMUP):
        x, y = next(it)
        step(x.to(dev, non_blocking=True).to(memory_format=torch.channels_last), y.to(dev, non_blocking=True))
    torch.cuda.synchronize()

    wait_s = copy_s = 0.0
    running = torch.zeros((), device=dev)
    t_loop = time.perf_counter()
    for s in range(STEPS):
        t0 = time.perf_counter()
        x, y = next(it)
        t1 = time.perf_counter()
        x = x.to(dev, non_blocking=True).to(memory_format=torch.channels_last)
        y = y.to(dev, non_blocking=True)
        t2 = time.perf_counter()
        wait_s += t1 - t0
        copy_s += t2 - t1
        running += step(x, y)
        if (s + 1) % LOG_EVERY == 0:
            print(f"step {s + 1}: loss {running.item() / LOG_EVERY:.4f}", flush=True)
            running.zero_()
    torch.cuda.synchronize()
    loop = time.perf_counter() - t_loop
    print(f"ground truth: loader next() {wait_s:.3f} s, non-blocking copies {copy_s:.3f} s, of {loop:.3f} s loop "
          f"(next {100 * wait_s / loop:.1f}%, copies {100 * copy_s / loop:.1f}%); {WORKERS} workers; {STEPS} steps",
          flush=True)


if __name__ == "__main__":
    main()
