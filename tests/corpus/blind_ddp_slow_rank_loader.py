"""Corpus (blind, batch 3): data-parallel training where one rank's DataLoader is slower.

Program: torchrun --nproc_per_node=2; each rank trains the same MLP (6 Linear(2048, 2048), batch
256) under DistributedDataParallel; each rank reads batches from its own DataLoader (one worker)
whose __getitem__ does NumPy work, 4x more on rank 1 than on rank 0 (its shard needs more
decoding). No NVTX; the loss is read every step. 30 steps.
Expected, written before it was recorded (2026-11-26): late-rank, naming rank 1 (rank 0 waits
for it in the all-reduce), on most steps; rank 1's own verdict input-bound.
"""
import os

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Shard(Dataset):
    def __init__(self, work):
        self.work = work

    def __len__(self):
        return 256 * 30

    def __getitem__(self, i):
        a = np.random.default_rng(i).random(4096)
        for _ in range(self.work):
            a = np.sqrt(a * 0.5 + 0.25)
        return torch.from_numpy(a[:2048].astype(np.float32))


if __name__ == "__main__":
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    torch.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(2048, 2048), nn.ReLU())])
    model = nn.parallel.DistributedDataParallel(model.cuda(), device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    loader = DataLoader(Shard(10 if rank == 0 else 40), batch_size=256, num_workers=1)
    for x in loader:
        loss = model(x.cuda()).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()
    if rank == 0:
        print("done", value)
    dist.destroy_process_group()
