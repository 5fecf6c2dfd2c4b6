"""Corpus: a CNN starved by its DataLoader (2 worker processes, each batch takes 90 ms to make).

Planted: waiting for input. Every batch takes ~90 ms of (sleeping) I/O in a worker; with 2 workers
a batch is ready every ~45 ms, while the GPU needs ~5 ms for a step. The main thread waits in
next(loader) with no CUDA call, then copies the batch to the GPU. NVTX step ranges ("step N").
Advice that helps: more workers, faster decoding, prefetching; fusing kernels or CUDA graphs
cannot.
"""
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowImages(Dataset):
    def __len__(self):
        return 64 * 40

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(3, 64, 64, generator=g), i % 10


def slow_collate(items):
    time.sleep(0.09)  # reading and decoding a batch from a slow disk
    return torch.stack([a for a, _ in items]), torch.tensor([b for _, b in items])


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 128, 3, padding=1),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(SlowImages(), batch_size=64, num_workers=2, collate_fn=slow_collate,
                        pin_memory=True)
    for step, (x, y) in enumerate(loader):
        torch.cuda.nvtx.range_push(f"step {step}")
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.nvtx.range_pop()
    print("last loss", loss.item())
