"""Blind batch 14 (two GPUs): DDP training where rank 0 alone evaluates every few steps.

Run with `torchrun --standalone --nproc_per_node=2`. Each rank trains a GPT-style decoder
(12 layers, width 768, 12 heads, vocabulary 32,000, tied embeddings, ~110 M parameters; bf16
autocast, SDPA causal, AdamW, `clip_grad_norm_`) under DistributedDataParallel on its own synthetic
token batches (16 x 512). Every 6 steps the loop validates, the way many training scripts do it:

    if (step + 1) % EVAL_EVERY == 0:
        if rank == 0:
            val_loss = evaluate(model.module)   # 24 batches of 32 x 512, .item() per batch
        dist.barrier()

so rank 1 waits in the barrier while rank 0 runs the whole validation set alone. 3 warm-up steps
(with one warm-up validation batch on rank 0), then 48 steps, 8 validations. The loss is read every
6 steps. No NVTX.

Ground truth printed at the end by each rank: its seconds in `dist.barrier()` and (rank 0) in
`evaluate`, against its loop's seconds, and the number of steps.
"""
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB, WIDTH, LAYERS, HEADS, SEQ = 32000, 768, 12, 12, 512
TRAIN_BATCH, VAL_BATCH, VAL_BATCHES = 16, 32, 24
WARMUP, STEPS, EVAL_EVERY = 3, 48, 6


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.fc1, self.fc2 = nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, WIDTH // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, WIDTH))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, WIDTH), nn.Embedding(SEQ, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(WIDTH)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.ln_f(x) @ self.tok.weight.t()


def token_batch(batch, gen, dev):
    """Synthetic text: a noisy random walk over the vocabulary, SEQ + 1 tokens a row."""
    steps = torch.randint(-50, 51, (batch, SEQ + 1), device=dev, generator=gen)
    start = torch.randint(0, VOCAB, (batch, 1), device=dev, generator=gen)
    return (steps.cumsum(1) + start) % VOCAB


def lm_loss(model, tokens):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(tokens[:, :-1])
    return F.cross_entropy(logits.float().view(-1, VOCAB), tokens[:, 1:].reshape(-1))


@torch.no_grad()
def evaluate(model, batches):
    model.eval()
    total = 0.0
    for tokens in batches:
        total += lm_loss(model, tokens).item()
    model.train()
    return total / len(batches)


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank)
    torch.manual_seed(0)
    model = GPT().to(dev)
    ddp = DDP(model, device_ids=[local_rank])
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-4, weight_decay=0.1)
    gen = torch.Generator(device=dev).manual_seed(1234 + rank)
    val_batches = []
    if rank == 0:
        val_gen = torch.Generator(device=dev).manual_seed(99)
        val_batches = [token_batch(VAL_BATCH, val_gen, dev) for _ in range(VAL_BATCHES)]

    barrier_s = eval_s = 0.0
    loss_acc = torch.zeros((), device=dev)

    def train_step():
        tokens = token_batch(TRAIN_BATCH, gen, dev)
        loss = lm_loss(ddp, tokens)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss_acc.add_(loss.detach())

    for _ in range(WARMUP):
        train_step()
    if rank == 0:
        evaluate(model, val_batches[:1])
    dist.barrier(device_ids=[local_rank])
    torch.cuda.synchronize()
    loss_acc.zero_()

    t_loop = time.perf_counter()
    for step in range(STEPS):
        train_step()
        if (step + 1) % EVAL_EVERY == 0:
            train_loss = loss_acc.item() / EVAL_EVERY
            loss_acc.zero_()
            if rank == 0:
                t0 = time.perf_counter()
                val_loss = evaluate(model, val_batches)
                eval_s += time.perf_counter() - t0
                print(f"step {step + 1}: train loss {train_loss:.4f}, val loss {val_loss:.4f} "
                      f"(ppl {math.exp(min(val_loss, 20)):.1f})", flush=True)
            t0 = time.perf_counter()
            dist.barrier(device_ids=[local_rank])
            barrier_s += time.perf_counter() - t0
    torch.cuda.synchronize()
    loop = time.perf_counter() - t_loop
    print(f"ground truth rank {rank}: barrier {barrier_s:.3f} s, evaluation {eval_s:.3f} s of {loop:.3f} s loop "
          f"(barrier {100 * barrier_s / loop:.1f}%, evaluation {100 * eval_s / loop:.1f}%); {STEPS} steps, "
          f"{STEPS // EVAL_EVERY} validations", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
