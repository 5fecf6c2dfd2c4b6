"""Corpus (blind, batch 4): batches built from Python dicts in the training process.

Program: each step builds a batch of 512 samples as Python dicts of lists (token ids, a mask,
per-token features made with Python's random module), pads and collates them with list
comprehensions and torch.tensor in the main process, copies them to the GPU, and trains a small
embedding + MLP model (bf16). No DataLoader, no NVTX. 30 steps.
Expected, written before it was recorded (2026-11-26): input-bound (the GPU waits while the main
process builds the next batch), at least 60% of the steady step, naming the collate line; 30
steps (within 2).
"""
import random

import torch
from torch import nn

random.seed(0)
torch.manual_seed(0)
model = nn.Sequential(nn.EmbeddingBag(30000, 256, mode="sum"), nn.Linear(256, 1024), nn.ReLU(),
                      nn.Linear(1024, 2)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)


def sample():
    n = random.randint(16, 128)
    return {"ids": [random.randrange(30000) for _ in range(n)],
            "weights": [random.random() for _ in range(n)], "label": random.randrange(2)}


for step in range(30):
    batch = [sample() for _ in range(512)]
    longest = max(len(s["ids"]) for s in batch)
    ids = torch.tensor([s["ids"] + [0] * (longest - len(s["ids"])) for s in batch])
    weights = torch.tensor([s["weights"] + [0.0] * (longest - len(s["weights"])) for s in batch])
    labels = torch.tensor([s["label"] for s in batch])
    ids, weights, labels = ids.cuda(), weights.cuda(), labels.cuda()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model[1:](model[0](ids, per_sample_weights=weights))
        loss = nn.functional.cross_entropy(logits.float(), labels)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
print("last loss", loss.item())
