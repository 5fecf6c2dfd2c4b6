"""Corpus (blind, batch 13, two GPUs): a click-through-rate model trained with DDP and gradient
accumulation, all-reducing its dense embedding gradients on every micro-batch.

Expected verdict: tests/corpus/BLIND13_EXPECTED.md. Run with
    torchrun --standalone --nproc_per_node=2 blind13_ddp_ctr_accum_no_sync.py

A DLRM-style CTR model: three embedding tables (users 4M, items 2M, contexts 262k rows, 64 wide,
~403M parameters, 1.6 GB in fp32) kept as plain dense nn.Embedding (sparse=False, so the optimizer
can be a dense one), 13 dense features, an MLP 205 -> 1024 -> 512 -> 256 -> 1, BCE loss, Adagrad.
It is wrapped in DistributedDataParallel (gradient_as_bucket_view=True) on 2 ranks. The effective
batch of 65,536 impressions is reached with gradient accumulation: 4 micro-batches of 8,192 per
rank per optimizer step. The accumulation loop calls backward() on every micro-batch without
model.no_sync(), so DDP all-reduces the whole gradient, embedding tables included, 4 times per
optimizer step instead of once. Impressions are synthetic (Zipf-like ids, a hidden logistic
click model), generated on the device. No NVTX. 2 warm-up optimizer steps, then 40 (160
micro-batches); the loss is read at every optimizer step.

Ground truth without changing what runs: DDP's default all-reduce hook is re-registered through a
wrapper that records a CUDA event when each gradient bucket becomes ready (the use PyTorch's
documentation suggests for `allreduce_hook`), and an event is recorded after every backward(). The
last line printed by each rank gives the summed time from the last bucket being ready to the end
of backward (the exposed all-reduce) against the loop's total, and the number of steps.
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

TABLES = (4_194_304, 2_097_152, 262_144)
EMB_DIM = 64
DENSE = 13
MICRO_BATCH = 8192
ACCUM = 4
WARMUP = 2
STEPS = 40


class CTRModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.tables = nn.ModuleList(nn.Embedding(n, EMB_DIM) for n in TABLES)
        for t in self.tables:
            nn.init.normal_(t.weight, std=0.01)
        self.mlp = nn.Sequential(
            nn.Linear(len(TABLES) * EMB_DIM + DENSE, 1024), nn.ReLU(),
            nn.Linear(1024, 512), nn.ReLU(),
            nn.Linear(512, 256), nn.ReLU(),
            nn.Linear(256, 1))

    def forward(self, ids, dense):
        embs = [t(ids[:, i]) for i, t in enumerate(self.tables)]
        return self.mlp(torch.cat(embs + [dense], dim=1)).squeeze(1)


class ImpressionStream:
    """Zipf-like categorical ids and a hidden logistic click model, all on the device."""

    def __init__(self, device, seed):
        self.device = device
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(seed)
        g = torch.Generator(device=device)
        g.manual_seed(1234)                      # the same hidden click model on every rank
        self.w_dense = torch.randn(DENSE, device=device, generator=g)
        self.bias = [torch.randn(n, device=device, generator=g) * 0.5 for n in TABLES]

    def next(self):
        u = torch.rand(MICRO_BATCH, len(TABLES), device=self.device, generator=self.gen)
        sizes = torch.tensor(TABLES, device=self.device, dtype=torch.float32)
        ids = ((u ** 3) * sizes).long().clamp_max_(sizes.long() - 1)    # heavy head, long tail
        dense = torch.randn(MICRO_BATCH, DENSE, device=self.device, generator=self.gen)
        logit = dense @ self.w_dense * 0.3 - 1.5
        for i in range(len(TABLES)):
            logit = logit + self.bias[i][ids[:, i]]
        clicks = (torch.rand(MICRO_BATCH, device=self.device, generator=self.gen)
                  < torch.sigmoid(logit)).float()
        return ids, dense, clicks


class BucketReadyTimer:
    """DDP's default all-reduce hook, plus a CUDA event when each bucket is ready."""

    def __init__(self):
        self.ready = []

    def hook(self, process_group, bucket):
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        self.ready.append(ev)
        return default_hooks.allreduce_hook(process_group, bucket)


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    torch.manual_seed(0)

    model = CTRModel().to(device)
    ddp = DDP(model, device_ids=[local_rank], gradient_as_bucket_view=True)
    timer = BucketReadyTimer()
    ddp.register_comm_hook(None, timer.hook)
    opt = torch.optim.Adagrad(ddp.parameters(), lr=0.02)
    stream = ImpressionStream(device, seed=100 + rank)
    n_params = sum(p.numel() for p in model.parameters())
    if rank == 0:
        print(f"{n_params / 1e6:.0f}M parameters ({n_params * 4 / 1e9:.2f} GB of fp32 gradients), "
              f"{dist.get_world_size()} ranks", flush=True)

    marks = []      # (last bucket ready, backward done) per micro-batch

    def optimizer_step():
        total = 0.0
        for _ in range(ACCUM):
            ids, dense, clicks = stream.next()
            loss = F.binary_cross_entropy_with_logits(ddp(ids, dense), clicks) / ACCUM
            timer.ready = []
            loss.backward()
            done = torch.cuda.Event(enable_timing=True)
            done.record()
            marks.append((timer.ready[-1], done))
            total = total + loss.detach()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return total

    for _ in range(WARMUP):
        optimizer_step().item()
    torch.cuda.synchronize()
    dist.barrier()
    marks.clear()

    loop_start = time.perf_counter()
    running = None
    for step in range(STEPS):
        loss = optimizer_step().item()
        running = loss if running is None else 0.95 * running + 0.05 * loss
        if rank == 0 and step % 10 == 0:
            print(f"step {step}: loss {running:.4f}", flush=True)
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - loop_start

    exposed = sum(ready.elapsed_time(done) for ready, done in marks) / 1e3
    print(f"rank {rank}: communication: from the last gradient bucket ready to the end of backward "
          f"(the exposed all-reduce, CUDA events) {exposed:.2f} s of loop {loop_s:.2f} s; "
          f"{STEPS} optimizer steps, {len(marks)} micro-batches each all-reducing "
          f"{n_params * 4 / 1e9:.2f} GB", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
