"""Corpus (blind, batch 8): protein masked-LM training that empties the CUDA cache every step.

Program: a LLaMA-style encoder (12 layers, d=512, 8 heads, rotary embeddings and RMSNorm written
in Python ops as in many research codebases, SwiGLU MLP of 1,536, bf16 autocast, fp32 residual
stream, AdamW) trains a masked language model on synthetic protein sequences, 32 crops a step
whose length is drawn each step from the buckets 160-512 (so every step's activations have new
sizes: 5k-16k tokens, blocks of ~5-50 MB). A "memory hygiene" helper copied from an OOM
workaround calls torch.cuda.empty_cache() after the optimiser step whenever reserved minus
allocated memory exceeds 1 GiB, which with the activations freed is every step. So every step
starts from an empty cache: the ~250-300 activation and temporary blocks of the forward and
backward pass (Python RMSNorm and rotary each make several full-size temporaries) are each
cudaMalloc'ed again, and empty_cache cudaFree's them all after a device synchronisation, while
the GPU work itself is ~10-25 ms a step of mostly elementwise kernels and small-K GEMMs.
PYTORCH_CUDA_ALLOC_CONF is left unset. No NVTX. 40 steps; one line printed at the end (seconds
in empty_cache, the CPU time of issuing forward, backward and the optimiser step, and the
cudaMalloc/cudaFree counts from torch.cuda.memory_stats, against the loop's total).

Expected, written before it was recorded (2026-11-26): allocator, 45-80% of the steady-state
step time (the cudaMalloc calls spread through forward and backward while the GPU waits for the
kernels they hold back, plus the cudaFree calls and synchronisation inside empty_cache), naming
torch.cuda.empty_cache() in release_cached_memory as the cause and cudaMalloc/cudaFree as the
calls that hold the time; 40 steps (within 2). The printed line gives the counts, not the
allocator's time: judge the share from the trace's cudaMalloc and cudaFree durations. If those
come to less than ~35% of the step (the device's cudaMalloc much cheaper than guessed), the
plant failed and gpu-bound is the right finding for that recording. Misses: sync-stall (the
synchronisation inside empty_cache waits for the step's own kernels; the GPU then idles because
the allocator is freeing and re-allocating, not because a read-back is refilling), launch-bound,
cpu-work, input-bound.
"""
import random
import time

import torch
import torch.nn.functional as F
from torch import nn

AMINO, MASK_ID, VOCAB = 20, 24, 25
D, HEADS, LAYERS, FFN = 512, 8, 12, 1536
BATCH, BUCKETS, STEPS = 32, (160, 224, 288, 352, 416, 480, 512), 40
FRAGMENTATION_LIMIT = 1 << 30


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        x = x.float()
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(q, k, cos, sin):
    cos, sin = cos.to(q.dtype), sin.to(q.dtype)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def rotary_tables(length, dim, device):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, device=device).float() / dim))
    freqs = torch.outer(torch.arange(length, device=device).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos()[None, None], emb.sin()[None, None]


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(D), RMSNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D, bias=False), nn.Linear(D, D, bias=False)
        self.gate, self.up = nn.Linear(D, FFN, bias=False), nn.Linear(D, FFN, bias=False)
        self.down = nn.Linear(FFN, D, bias=False)

    def forward(self, x, cos, sin):
        b, n, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, HEADS, D // HEADS).unbind(2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        q, k = apply_rotary(q, k, cos, sin)
        attn = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, n, D))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class ProteinLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList([Layer() for _ in range(LAYERS)])
        self.norm, self.head = RMSNorm(D), nn.Linear(D, VOCAB)

    def forward(self, tokens):
        cos, sin = rotary_tables(tokens.shape[1], D // HEADS, tokens.device)
        x = self.embed(tokens).float()
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.head(self.norm(x))


def release_cached_memory(stats):
    """Free the cache when it holds much more than the live tensors ("fragmentation")."""
    if torch.cuda.memory_reserved() - torch.cuda.memory_allocated() > FRAGMENTATION_LIMIT:
        t = time.perf_counter()
        torch.cuda.empty_cache()
        stats["empty_cache_s"] += time.perf_counter() - t
        stats["empty_cache_calls"] += 1


def masked_batch(length, gen):
    tokens = torch.randint(0, AMINO, (BATCH, length), device="cuda", generator=gen)
    masked = torch.rand(BATCH, length, device="cuda", generator=gen) < 0.15
    labels = torch.where(masked, tokens, torch.full_like(tokens, -100))
    return torch.where(masked, torch.full_like(tokens, MASK_ID), tokens), labels


def device_counts():
    s = torch.cuda.memory_stats()
    return (s.get("num_device_alloc", -1), s.get("num_device_free", -1),
            s.get("num_alloc_retries", 0))


def main():
    torch.manual_seed(0)
    rng = random.Random(0)
    gen = torch.Generator(device="cuda").manual_seed(0)
    model = ProteinLM().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    lengths = [rng.choice(BUCKETS) for _ in range(STEPS)]
    print(f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters; "
          f"lengths {lengths[:8]} ...")

    stats = {"empty_cache_s": 0.0, "empty_cache_calls": 0, "issue_s": 0.0}
    allocs0, frees0, retries0 = device_counts()
    start = time.perf_counter()
    for step, length in enumerate(lengths):
        inputs, labels = masked_batch(length, gen)
        t = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(inputs)
        loss = F.cross_entropy(logits.float().view(-1, VOCAB), labels.view(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        stats["issue_s"] += time.perf_counter() - t
        del logits
        release_cached_memory(stats)
        if step % 10 == 0:
            print(f"step {step} length {length} loss {loss.item():.4f}")
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    allocs, frees, retries = device_counts()
    print(f"steps {STEPS}; empty_cache {stats['empty_cache_s']:.2f} s "
          f"({stats['empty_cache_calls']} calls), issuing forward/backward/step "
          f"{stats['issue_s']:.2f} s, cudaMalloc {allocs - allocs0} cudaFree {frees - frees0} "
          f"(retries {retries - retries0}), of loop {total:.2f} s")


if __name__ == "__main__":
    main()
