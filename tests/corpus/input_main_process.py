"""Corpus: input prepared in the training process itself (num_workers=0), no NVTX.

Planted: waiting for input. Each batch is augmented on the CPU in the main process (NumPy flips,
crops and normalisation of 128 images, ~20-30 ms), then copied to the GPU; the model needs a few
ms. The CPU is busy, but with the input pipeline, not with launches. Advice that helps: DataLoader
workers (num_workers > 0), or augmentation on the GPU.
"""
import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
rng = np.random.default_rng(0)
images = rng.random((512, 3, 96, 96), dtype=np.float32)
model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1),
                      nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def augment(batch):
    out = np.empty((len(batch), 3, 64, 64), dtype=np.float32)
    for k, img in enumerate(batch):
        y0, x0 = rng.integers(0, 32, 2)
        crop = img[:, y0:y0 + 64, x0:x0 + 64]
        if rng.random() < 0.5:
            crop = crop[:, :, ::-1]
        out[k] = (crop - crop.mean(axis=(1, 2), keepdims=True)) / (crop.std(axis=(1, 2), keepdims=True) + 1e-5)
    return out


for step in range(40):
    idx = rng.integers(0, len(images), 128)
    x = torch.from_numpy(augment(images[idx])).cuda()
    y = torch.from_numpy(idx % 10).cuda()
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
print("last loss", loss.item())
