"""Corpus (held out): a DataLoader with 4 workers whose decoding (NumPy) is slower than the model.

Planted: waiting for input. Each sample is "decoded" with NumPy work (~2 ms of CPU each, 64 per
batch) in 4 worker processes, pin_memory=False; the ResNet-like model needs ~3 ms a step. No
NVTX. Written after the analysis was tuned: a check, not a target.
"""
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Decoded(Dataset):
    def __len__(self):
        return 64 * 30

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        raw = rng.random((3, 96, 96), dtype=np.float32)
        for _ in range(6):  # "decoding": a few passes over the image
            raw = np.sqrt(raw * 0.5 + 0.25)
        return torch.from_numpy(raw[:, :64, :64].copy()), i % 10


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                          nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = DataLoader(Decoded(), batch_size=64, num_workers=4)
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    print("last loss", loss.item())
