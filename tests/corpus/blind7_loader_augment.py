"""Corpus (blind, batch 7): a CNN trained from a DataLoader whose per-sample augmentation is heavy.

Program: a Dataset "decodes" each 144x144 RGB image (seeded NumPy noise) and augments it on the
CPU in NumPy: a random resized crop to 112x112 with bilinear interpolation, brightness, contrast
and saturation jitter, a separable 7-tap Gaussian blur and a per-channel histogram equalisation
(~2-4 ms a sample). torch.utils.data.DataLoader(num_workers=2, pin_memory=True) batches 64
samples, so a batch costs a worker ~150-250 ms and arrives every ~75-125 ms with two workers; the
main thread trains a small ResNet-like CNN (bf16 autocast, channels_last, SGD with momentum) in a
few ms a batch and then waits in the loader's next(). No NVTX, no synchronize. 60 steps, one a
batch; one line printed at the end (the time spent waiting for batches, measured in-program).
"""
import time

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

SIZE, CROP, BATCH, STEPS = 144, 112, 64, 60
KERNEL = np.exp(-0.5 * (np.arange(-3, 4) / 1.5) ** 2)
KERNEL /= KERNEL.sum()


class AugmentedImages(Dataset):
    def __len__(self):
        return BATCH * STEPS

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8).astype(np.float32)
        side = int(SIZE * rng.uniform(0.5, 1.0))  # random resized crop, bilinear
        top, left = rng.integers(0, SIZE - side + 1, 2)
        ys, xs = np.linspace(top, top + side - 1, CROP), np.linspace(left, left + side - 1, CROP)
        y0, x0 = ys.astype(int), xs.astype(int)
        y1, x1 = np.minimum(y0 + 1, SIZE - 1), np.minimum(x0 + 1, SIZE - 1)
        wy, wx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
        out = (img[y0][:, x0] * (1 - wy) * (1 - wx) + img[y0][:, x1] * (1 - wy) * wx
               + img[y1][:, x0] * wy * (1 - wx) + img[y1][:, x1] * wy * wx)
        out = out * rng.uniform(0.8, 1.2) + rng.uniform(-20, 20)  # brightness, contrast
        gray = out.mean(2, keepdims=True)
        out = gray + (out - gray) * rng.uniform(0.7, 1.3)  # saturation
        padded = np.pad(out, ((3, 3), (3, 3), (0, 0)), mode="reflect")  # Gaussian blur
        out = sum(KERNEL[j] * padded[j:j + CROP] for j in range(7))
        out = sum(KERNEL[j] * out[:, j:j + CROP] for j in range(7))
        q = np.clip(out, 0, 255).astype(np.uint8)
        for c in range(3):  # histogram equalisation
            cdf = np.bincount(q[..., c].ravel(), minlength=256).cumsum()
            lut = (cdf - cdf[0]) * 255 // max(cdf[-1] - cdf[0], 1)
            q[..., c] = lut.astype(np.uint8)[q[..., c]]
        image = ((q.astype(np.float32) / 255 - 0.45) / 0.25).transpose(2, 0, 1)
        return torch.from_numpy(np.ascontiguousarray(image)), int(rng.integers(0, 100))


def block(cin, cout, stride):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(block(3, 64, 2), block(64, 64, 1), block(64, 128, 2), block(128, 128, 1),
                          block(128, 256, 2), block(256, 256, 1), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(256, 100))
    model = model.cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = DataLoader(AugmentedImages(), batch_size=BATCH, num_workers=2, pin_memory=True,
                        drop_last=True)
    waited, start = 0.0, time.perf_counter()
    batches = iter(loader)
    for step in range(STEPS):
        t = time.perf_counter()
        x, y = next(batches)
        waited += time.perf_counter() - t
        x = x.cuda(non_blocking=True).contiguous(memory_format=torch.channels_last)
        y = y.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    total = time.perf_counter() - start
    print(f"steps {STEPS} loss {loss.item():.3f}; next(loader) {waited:.2f} s of {total:.2f} s")
