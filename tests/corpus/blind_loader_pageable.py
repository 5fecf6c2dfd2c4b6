"""Corpus (blind, batch 4): a DataLoader that hands over big batches in pageable memory.

Program: a Dataset of 64 preprocessed images (3x224x224 float32 each, held in memory, so
__getitem__ costs nothing); DataLoader batch 64, 2 workers, pin_memory=False; each 38.5 MB batch
goes to the GPU with .cuda(); a small conv net (3 conv layers, bf16, channels_last) trains on it.
No NVTX. 30 steps.
Expected, written before it was recorded (2026-11-26): copies (the pageable host-to-device copy
of each batch), at least 30% of the steady step, its advice to pin memory; 30 steps (within 2).
"""
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Preprocessed(Dataset):
    def __init__(self):
        self.images = torch.randn(64, 3, 224, 224)

    def __len__(self):
        return 64 * 30

    def __getitem__(self, i):
        return self.images[i % 64], i % 10


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(),
                          nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
                          nn.Conv2d(64, 64, 3, stride=2, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).cuda()
    model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Preprocessed(), batch_size=64, num_workers=2, pin_memory=False)
    for images, labels in loader:
        images = images.cuda().to(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(images), labels.cuda())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    print("last loss", loss.item())
