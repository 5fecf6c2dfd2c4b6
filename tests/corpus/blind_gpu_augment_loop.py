"""Corpus (blind, batch 5): augmentation moved to the GPU, but applied one image at a time.

Program: a DataLoader (2 workers, pin_memory=True) hands over batches of 256 raw uint8 images
(3x160x160, held in memory, so it costs the workers nothing); the training process copies each
batch to the GPU and augments it there image by image in a Python loop: a random crop, a flip
half the time, brightness and contrast jitter, a bilinear resize to 128x128 and normalisation,
about a dozen tiny kernels per image (~3,000 a step); then a small CNN (bf16 autocast, SGD with
momentum) trains on the stacked batch. The loss is printed every 10 steps. No NVTX. 30 steps.
Expected, written before it was recorded (2026-11-26): launch-bound, at least 60% of the steady
step: the GPU idles between the augmentation's few-microsecond kernels while the CPU launches the
next (runs without Warpline: the augmentation took ~35 ms a batch, ~12 us of CPU a kernel, and under
torch.profiler the kernels were busy 15% of the loop; the CNN itself is a few ms). Not
input-bound: the DataLoader always has the next batch ready, and the GPU is not waiting for a
batch but running the augmentation's kernels one by one; not gpu-bound. 30 steps (within 2),
although the launches differ from step to step (the flips are random).
"""
import random

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class RawImages(Dataset):
    def __init__(self):
        self.images = torch.randint(0, 256, (512, 3, 160, 160), dtype=torch.uint8)

    def __len__(self):
        return 256 * 30

    def __getitem__(self, i):
        return self.images[i % 512], i % 100


def augment(batch, mean, std):
    out = []
    for image in batch:
        size = random.randint(96, 160)
        top, left = random.randint(0, 160 - size), random.randint(0, 160 - size)
        crop = image[:, top:top + size, left:left + size].float().div_(255)
        if random.random() < 0.5:
            crop = crop.flip(2)
        crop = crop * random.uniform(0.6, 1.4)
        average = crop.mean()
        crop = (crop - average) * random.uniform(0.6, 1.4) + average
        crop = nn.functional.interpolate(crop[None], size=(128, 128), mode="bilinear",
                                         align_corners=False)[0]
        out.append(crop.clamp_(0, 1).sub_(mean).div_(std))
    return torch.stack(out)


if __name__ == "__main__":
    random.seed(0)
    torch.manual_seed(0)
    mean = torch.tensor([0.485, 0.456, 0.406], device="cuda").view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device="cuda").view(3, 1, 1)
    model = nn.Sequential(nn.Conv2d(3, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                          nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128),
                          nn.ReLU(), nn.Conv2d(128, 256, 3, stride=2, padding=1),
                          nn.BatchNorm2d(256), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(256, 100)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = DataLoader(RawImages(), batch_size=256, num_workers=2, pin_memory=True)
    for step, (images, labels) in enumerate(loader):
        x = augment(images.cuda(non_blocking=True), mean, std)
        y = labels.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 10 == 9:
            print("step", step + 1, "loss", loss.item())
