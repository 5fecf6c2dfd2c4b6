"""Corpus (blind, batch 9): caching a teacher's full logits in host memory for offline distillation.

Program: the first stage of a knowledge-distillation pipeline. A teacher LM (6 pre-LN decoder
blocks, d_model 1024, 16 heads, SDPA causal attention, a 32k-vocabulary head; bf16 weights,
inference_mode) runs over 50 batches of 8 x 256 tokens (made on the GPU from a fixed seed), and
its full bf16 logits (8 x 256 x 32000, 131 MB a batch) are kept in host RAM for the student's
training, which cannot hold them on the GPU. The user preallocates the host cache once
(torch.empty of 50 x 8 x 256 x 32000 bf16, 6.5 GB, not pinned: pinning 6.5 GB "takes too
long") and fills it with cache[step].copy_(logits), believing that preallocation makes the copy
cheap. Each copy is a synchronous device-to-host transfer into pageable memory (staged through
the driver's bounce buffer, the destination pages touched for the first time), ~10-30 ms at
pageable speed, while the teacher's forward is ~1.5-3 ms of GPU work. A per-token entropy of the
teacher's distribution is accumulated on the GPU and printed every 10 batches (.item()). No
NVTX. 50 steps; one line printed at the end (the GPU-side duration of the copies by CUDA events,
the wall time of the copy_ calls, against the loop's total).

Expected, written before it was recorded (2026-11-26): copies, 75-93% of the steady-state step
time, naming the device-to-host memcpy (pageable destination, ~131 MB a step) issued by
cache[step].copy_(logits); 50 steps (within 2). Misses: sync-stall (the copy_ waits for the
forward's kernels first, but that wait is ~1.5-3 ms; the rest is the transfer itself with the
GPU's compute idle), gpu-bound (the copy engine is busy, not the SMs), allocator (the cache is
allocated once, before the loop), cpu-work. Advice that helps: fewer bytes (top-k logits per
token on the GPU, e.g. 64 of 32000, or fp8), a pinned cache (or pinned staging buffers copied
with non_blocking=True on a side stream, overlapped with the next batch's forward).
"""
import math
import time

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, D_MODEL, LAYERS, HEADS = 32000, 1024, 6, 16
BATCH, SEQ, STEPS = 8, 256, 50


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL, bias=False)
        self.proj = nn.Linear(D_MODEL, D_MODEL, bias=False)
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.up = nn.Linear(D_MODEL, 4 * D_MODEL, bias=False)
        self.down = nn.Linear(4 * D_MODEL, D_MODEL, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, D_MODEL // HEADS)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, D_MODEL))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class TeacherLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Embedding(SEQ, D_MODEL)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, ids):
        x = self.tok(ids) + self.pos.weight[: ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def main():
    torch.manual_seed(0)
    teacher = TeacherLM().cuda().to(torch.bfloat16).eval()
    gen = torch.Generator(device="cuda").manual_seed(1)
    cache = torch.empty((STEPS, BATCH, SEQ, VOCAB), dtype=torch.bfloat16)  # host RAM, 6.5 GB
    print(f"host logit cache: {cache.numel() * cache.element_size() / 2**30:.1f} GiB")

    copy_spans, copy_wall = [], 0.0
    start = time.perf_counter()
    with torch.inference_mode():
        entropy_sum = torch.zeros((), device="cuda")
        for step in range(STEPS):
            ids = torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda", generator=gen)
            logits = teacher(ids)
            logp = torch.log_softmax(logits.float(), dim=-1)
            entropy_sum += -(logp.exp() * logp).sum(-1).mean()
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t = time.perf_counter()
            begin.record()
            cache[step].copy_(logits)
            end.record()
            copy_wall += time.perf_counter() - t
            copy_spans.append((begin, end))
            if (step + 1) % 10 == 0:
                mean_entropy = entropy_sum.item() / (step + 1)
                print(f"batch {step + 1}: mean teacher entropy {mean_entropy:.3f} nats "
                      f"(max {math.log(VOCAB):.2f})")
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    copies = sum(b.elapsed_time(e) for b, e in copy_spans) / 1e3
    print(f"steps {STEPS}; device-to-host copies {copies:.2f} s on the GPU (CUDA events), copy_ "
          f"calls {copy_wall:.2f} s wall, of loop {total:.2f} s")


if __name__ == "__main__":
    main()
