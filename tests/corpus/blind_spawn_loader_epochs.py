"""Corpus (blind, batch 5): short epochs whose DataLoader workers start again every epoch.

Program: a Dataset of 2,560 samples (3x64x64 float32 made by NumPy in __getitem__, ~0.1 ms
each); DataLoader batch 256 (10 batches an epoch), shuffle, 4 workers, pin_memory=True,
multiprocessing_context="spawn" (as code that once used CUDA in its workers sets) and
persistent_workers left False, so each of 3 epochs starts 4 fresh Python processes that import
torch and NumPy before the first batch arrives. The model, a 4-layer CNN (bf16 autocast,
channels_last, SGD), needs a few ms a step, and the 4 workers keep up once they run. The loss
and the epoch's time are printed at the end of each epoch. No NVTX. 30 steps.
Expected, written before it was recorded (2026-11-26): input-bound, at least 80% of the steady
state, naming the `for x, y in loader` line: the GPU waits at the first batch of every epoch
for the workers' start-up (runs without Warpline printed 4.2 to 5.8 s an epoch, nearly all of
it that wait, against well under a second of training). 30 steps (within 3), one long step an
epoch. Calling those waits start-up, warm-up or time between steps rather than a cost of the
loop is the break this program looks for.
"""
import time

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Synthetic(Dataset):
    def __len__(self):
        return 256 * 10

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        image = rng.standard_normal((3, 64, 64), dtype=np.float32)
        return torch.from_numpy(image), i % 10


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                          nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128),
                          nn.ReLU(), nn.Conv2d(128, 256, 3, stride=2, padding=1),
                          nn.BatchNorm2d(256), nn.ReLU(), nn.Conv2d(256, 256, 3, padding=1),
                          nn.BatchNorm2d(256), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(256, 10)).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = DataLoader(Synthetic(), batch_size=256, shuffle=True, num_workers=4,
                        pin_memory=True, multiprocessing_context="spawn")
    for epoch in range(3):
        start = time.perf_counter()
        for x, y in loader:
            x = x.cuda(non_blocking=True).to(memory_format=torch.channels_last)
            y = y.cuda(non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        print("epoch", epoch, "loss", loss.item(), "%.1f s" % (time.perf_counter() - start))
