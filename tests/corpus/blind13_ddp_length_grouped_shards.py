"""Corpus (blind, batch 13, two GPUs): a DDP language-model fine-tune whose data shards were cut
from a concatenated, source-ordered corpus, with length-grouped batches.

Expected verdict: tests/corpus/BLIND13_EXPECTED.md. Run with
    torchrun --standalone --nproc_per_node=2 blind13_ddp_length_grouped_shards.py

A GPT-style decoder (12 layers, width 768, 12 heads, vocabulary 32,000, ~110M parameters; bf16
autocast, scaled_dot_product_attention with a causal mask, AdamW) is trained with DDP on 2 ranks.
The corpus is built by concatenating two sources: 5,400 chat turns (48-320 tokens) followed by
1,800 long documents (1,536-2,048 tokens). Each rank takes a contiguous slice of the concatenated
list (`corpus[rank * n // world:(rank + 1) * n // world]`) instead of a strided or shuffled one,
so rank 0 holds only chat turns while rank 1 holds the remaining chat turns and all the documents.
Each rank then makes length-grouped batches of 16 sequences (shuffled mega-batches of 50 batches,
sorted by length inside, as `group_by_length` does), pads each batch to its longest sequence
(rounded up to a multiple of 64) and shuffles the batch order. So about half of rank 1's batches
are 16 x 2,048-token documents, while every batch of rank 0 is a short chat batch. The token ids
are synthetic. Both ranks run the same number of steps; the running loss is read every step.
NVTX: one "train_step" range per step (torch.cuda.nvtx). 3 warm-up steps, then 60.

Ground truth without changing what runs: DDP's default all-reduce hook is re-registered through a
wrapper that records a CUDA event when each gradient bucket becomes ready (the use PyTorch's
documentation suggests for `allreduce_hook`); events also mark each step's start and the end of
its backward(). The last line printed by each rank gives the summed time from its own last bucket
being ready to the end of backward (waiting for the other rank, plus the last all-reduce) against
the loop's total, its own compute up to the last bucket, and how many of its batches were long
documents.
"""
import math
import os
import random
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB = 32000
D_MODEL = 768
HEADS = 12
LAYERS = 12
MAX_LEN = 2048
BATCH = 16
MEGA = 50
WARMUP = 3
STEPS = 60
N_CHAT, N_DOCS = 5400, 1800


def build_corpus(rng):
    """Lengths only: the token ids are drawn when a batch is made."""
    chat = [int(min(320, max(48, rng.lognormvariate(math.log(140), 0.45)))) for _ in range(N_CHAT)]
    docs = [rng.randint(1536, MAX_LEN) for _ in range(N_DOCS)]
    return chat + docs


def length_grouped_batches(lengths, rng):
    idx = list(range(len(lengths)))
    rng.shuffle(idx)
    mega = BATCH * MEGA
    batches = []
    for m in range(0, len(idx), mega):
        group = sorted(idx[m:m + mega], key=lambda i: -lengths[i])
        batches += [group[b:b + BATCH] for b in range(0, len(group), BATCH)]
    batches = [b for b in batches if len(b) == BATCH]
    rng.shuffle(batches)
    return batches


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = nn.Linear(D_MODEL, D_MODEL)
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.fc = nn.Linear(D_MODEL, 4 * D_MODEL)
        self.out = nn.Linear(4 * D_MODEL, D_MODEL)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, -1).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, D_MODEL))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Embedding(MAX_LEN, D_MODEL)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB, bias=False)
        self.head.weight = self.tok.weight
        for m in self.modules():                        # GPT-2's initialisation
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))[None]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def make_batch(batch, lengths, gen, device):
    """Synthetic token ids, right-padded to the longest sequence (a multiple of 64)."""
    longest = max(lengths[i] for i in batch)
    t = min(MAX_LEN, -(-longest // 64) * 64)
    ids = torch.randint(3, VOCAB, (BATCH, t), device=device, generator=gen)
    lens = torch.tensor([lengths[i] for i in batch], device=device)
    pad = torch.arange(t, device=device)[None] >= lens[:, None]
    ids.masked_fill_(pad, 0)
    labels = ids.roll(-1, dims=1).masked_fill_(pad.roll(-1, dims=1), -100)
    labels[:, -1] = -100
    return ids, labels, longest >= 1024


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
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    torch.manual_seed(0)

    corpus = build_corpus(random.Random(0))
    n = len(corpus)
    shard = corpus[rank * n // world:(rank + 1) * n // world]
    batches = length_grouped_batches(shard, random.Random(1 + rank))
    total_steps = WARMUP + STEPS
    assert len(batches) >= total_steps
    gen = torch.Generator(device=device)
    gen.manual_seed(10 + rank)

    model = GPT().to(device)
    ddp = DDP(model, device_ids=[local_rank])
    timer = BucketReadyTimer()
    ddp.register_comm_hook(None, timer.hook)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-4, weight_decay=0.1, betas=(0.9, 0.95))
    marks = []      # (step start, last bucket ready, backward done) per step

    def train_step(batch):
        start = torch.cuda.Event(enable_timing=True)
        start.record()
        ids, labels, long = make_batch(batch, shard, gen, device)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = ddp(ids)
        loss = F.cross_entropy(logits.float().view(-1, VOCAB), labels.view(-1), ignore_index=-100)
        timer.ready = []
        loss.backward()
        done = torch.cuda.Event(enable_timing=True)
        done.record()
        marks.append((start, timer.ready[-1], done))
        nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss, long

    for b in batches[:WARMUP]:
        train_step(b)[0].item()
    torch.cuda.synchronize()
    dist.barrier()
    marks.clear()

    running, long_batches = None, 0
    loop_start = time.perf_counter()
    for step, b in enumerate(batches[WARMUP:total_steps]):
        torch.cuda.nvtx.range_push("train_step")
        loss, long = train_step(b)
        value = loss.item()
        torch.cuda.nvtx.range_pop()
        running = value if running is None else 0.9 * running + 0.1 * value
        long_batches += long
        if rank == 0 and step % 10 == 0:
            print(f"step {step}: loss {running:.3f}", flush=True)
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - loop_start

    waited = sum(ready.elapsed_time(done) for _, ready, done in marks) / 1e3
    own = sum(start.elapsed_time(ready) for start, ready, _ in marks) / 1e3
    print(f"rank {rank}: late-rank: from its own last gradient bucket ready to the end of backward "
          f"(waiting for the other rank + the last all-reduce, CUDA events) {waited:.2f} s of loop "
          f"{loop_s:.2f} s; own forward/backward up to the last bucket {own:.2f} s; "
          f"{long_batches} of its {STEPS} batches were long documents; {STEPS} steps", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
