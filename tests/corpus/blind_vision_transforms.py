"""Corpus (blind, batch 2): torchvision's ResNet-18 fed by CPU image augmentation.

Program: a Dataset makes a 320x320 RGB PIL image per sample and applies torchvision's
RandomResizedCrop(224), RandomHorizontalFlip, ColorJitter, ToTensor and Normalize; DataLoader
with 2 workers, batch 64, pin_memory=True; ResNet-18 (random weights) trained with bf16 autocast,
channels_last, SGD. No NVTX. 25 steps.
Expected, written before it was recorded (2026-11-26): input-bound (waiting for the DataLoader;
two workers cannot augment 64 images as fast as the GPU trains on them), at least 50% of the
steady step; about 25 steps.
"""
import numpy as np
import torch
import torchvision
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms as T


class Augmented(Dataset):
    def __init__(self):
        self.tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                             T.ColorJitter(0.4, 0.4, 0.4), T.ToTensor(),
                             T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

    def __len__(self):
        return 64 * 25

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        image = Image.fromarray(rng.integers(0, 255, (320, 320, 3), dtype=np.uint8))
        return self.tf(image), i % 1000


if __name__ == "__main__":
    torch.manual_seed(0)
    model = torchvision.models.resnet18().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loader = DataLoader(Augmented(), batch_size=64, num_workers=2, pin_memory=True)
    for x, y in loader:
        x = x.cuda(non_blocking=True).to(memory_format=torch.channels_last)
        y = y.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    print("last loss", loss.item())
