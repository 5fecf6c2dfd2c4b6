"""Corpus (blind, batch 9): DDP re-broadcasts a 2.6 GB frozen buffer from rank 0 every step.

Program: torchrun --nproc_per_node=2 (NCCL, one process per GPU). A two-tower retrieval model
fine-tuned on top of frozen pretrained word vectors (2.5 M words x 256, fp32, 2.56 GB) that the
user registered as a buffer (register_buffer: "frozen, kept out of the optimiser, moved by
.cuda()"); only the two small towers (256-1024-256 MLPs, ~1 M parameters) and a temperature are
trained, with an in-batch softmax over 1024 query/document pairs of 32 tokens each per rank,
AdamW, fp32. DistributedDataParallel is constructed with its defaults, so broadcast_buffers=True:
before every training forward DDP broadcasts every module buffer from rank 0, here the whole
2.56 GB table (one NCCL broadcast a step, on a fast link ~6-9 ms; on PCIe far longer), while
the step's own work is ~0.5-1 ms of GPU time and the gradient all-reduce is ~4 MB, overlapped
with the backward. No NVTX; every rank reads the loss every 10 steps (.item()), rank 0 prints
it. 40 steps; each rank prints one line at the end (the GPU time from each model() call to the
start of the wrapped module's forward, which is DDP's buffer broadcast, by CUDA events, against
the loop's wall time).

Expected, written before it was recorded (2026-11-26): communication, 65-92% of the
steady-state step time on both ranks, naming the exposed NCCL broadcast issued by DDP's forward
(_sync_buffers / _distributed_broadcast_coalesced, broadcast_buffers=True) of ~2.5 GB a step,
not the gradient all-reduce; 40 steps (within 2) per rank. Misses: gpu-bound (the NCCL kernel
is the GPU's only long work; naming it as compute is wrong and so is any advice about the
towers), late-rank (both ranks start each broadcast together; neither is waiting for a slower
peer's compute), launch-bound, sync-stall. Advice that helps: broadcast_buffers=False (the
table never changes), or the frozen table as a parameter with requires_grad=False, or passing
it outside the DDP-wrapped module; not larger batches or gradient compression.
"""
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

WORDS, DIM, HIDDEN = 2_500_000, 256, 1024
BATCH, TOKENS, STEPS, LOG_EVERY = 1024, 32, 40, 10


def tower():
    return nn.Sequential(nn.Linear(DIM, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, DIM))


class TwoTower(nn.Module):
    def __init__(self, word_vectors):
        super().__init__()
        self.register_buffer("word_vectors", word_vectors)  # frozen pretrained vectors
        self.query_tower, self.doc_tower = tower(), tower()
        self.log_scale = nn.Parameter(torch.tensor(math.log(20.0)))

    def encode(self, ids, net):
        bag = F.embedding(ids, self.word_vectors).mean(dim=1)
        return F.normalize(net(bag), dim=-1)

    def forward(self, query_ids, doc_ids):
        q = self.encode(query_ids, self.query_tower)
        d = self.encode(doc_ids, self.doc_tower)
        logits = q @ d.t() * self.log_scale.exp()
        target = torch.arange(q.shape[0], device=q.device)
        return F.cross_entropy(logits, target)


def main():
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    torch.manual_seed(0)
    # "Loading" the pretrained vectors: the same table on every rank.
    g = torch.Generator(device="cuda").manual_seed(1234)
    vectors = torch.randn((WORDS, DIM), device="cuda", generator=g).mul_(0.1)
    model = nn.parallel.DistributedDataParallel(TwoTower(vectors).cuda(), device_ids=[local_rank])
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)

    # Measurement only: a CUDA event where the wrapped module's forward begins.
    marks = {}

    def forward_begins(module, args):
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        marks["forward"] = ev

    model.module.register_forward_pre_hook(forward_begins)

    data = torch.Generator(device="cuda").manual_seed(100 + rank)
    spans = []
    start = time.perf_counter()
    for step in range(STEPS):
        query = torch.randint(0, WORDS, (BATCH, TOKENS), device="cuda", generator=data)
        doc = torch.randint(0, WORDS, (BATCH, TOKENS), device="cuda", generator=data)
        call = torch.cuda.Event(enable_timing=True)
        call.record()
        loss = model(query, doc)
        spans.append((call, marks["forward"]))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % LOG_EVERY == 0:
            value = loss.item()
            if rank == 0:
                print(f"step {step} loss {value:.4f}")
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    broadcast = sum(b.elapsed_time(e) for b, e in spans) / 1e3
    print(f"rank {rank}: steps {STEPS}; model() call to forward start (DDP buffer broadcast, CUDA "
          f"events) {broadcast:.2f} s of loop {total:.2f} s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
