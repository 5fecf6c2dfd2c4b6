"""Corpus (blind, batch 10): a hand-written KV-cache sampler for a small Llama-style model.

Program: the generation loop a user writes without any generation library. A small decoder (6
layers, d_model 768, 12 heads, RMSNorm and rotary embeddings written in Python ops the way the
reference Llama code writes them, SwiGLU MLP of 2048, a 32k vocabulary with a tied head; bf16
weights, random, inference_mode) answers 4 requests: each prompt (64-128 random token ids) is
prefilled in one call, then 200 tokens are sampled one at a time with a preallocated KV cache
(cache_k[:, :, pos] = k, attention over the cache prefix with SDPA), temperature 0.8 and top-k
40 (topk, softmax, multinomial). Each token's forward and sampling launch ~270 small kernels
(per layer ~9 for each RMSNorm, ~10 for the rotary embedding, 2 cache writes, the attention, 5
for the MLP, the GEMMs on a single row), each a few microseconds of GPU work, while PyTorch's
eager dispatch and the launches cost ~15-30 us of CPU each: ~4-8 ms of CPU per token against
~0.7-1.3 ms of GPU work. After sampling, the token is read back with .item() for the stop check
(EOS, allowed after 16 tokens) and the detokenizer's list, as every hand-written loop does. No
NVTX. 4 requests x 200 tokens = 800 model calls (a prefill and 199 single-token decodes per
request); one line printed at the end (seconds the CPU spent issuing the per-token forward and
sampling, measured in-program with perf_counter around calls that do not synchronize, and
seconds waiting in .item(), against the loop's total; no CUDA events: an event span measures
time on the GPU timeline including its idle gaps, not busy time, so it could not show the idle
share).

Expected, written before it was recorded (2026-11-26): launch-bound, 70-88% of the steady-state
step time (the GPU idle between tiny kernels while the CPU dispatches and launches the next
ones), the finding naming the per-token forward (Block.forward, RMSNorm.forward, apply_rotary,
Attention.forward) and its ~270 small kernels a token; 800 steps (within 2), one per generated
token (4 of them the longer prefills); per-request steps (4) are also defensible. Misses:
sync-stall (the .item() each token waits only for the sampling kernels' tail, tens of
microseconds, because the GPU keeps pace with the launches; removing it would save ~1-3%),
gpu-bound, cpu-work naming Python outside the framework (the time is PyTorch's per-op dispatch
and launch path, cured by fewer launches, not by faster Python), copies. Advice that helps: a
CUDA graph of the decode step with a static KV cache (torch.compile mode="reduce-overhead"),
fused kernels (RMSNorm, rotary, QKV), or batching requests.
"""
import math
import random
import time

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, D_MODEL, LAYERS, HEADS, FFN = 32000, 768, 6, 12, 2048
HEAD_DIM = D_MODEL // HEADS
REQUESTS, NEW_TOKENS, MIN_NEW_TOKENS = 4, 200, 16
TEMPERATURE, TOP_K, EOS_ID = 0.8, 40, 2
MAX_PROMPT = 128
MAX_LEN = MAX_PROMPT + NEW_TOKENS


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(variance + self.eps)).type_as(x) * self.weight


def rotate_half(x):
    x1, x2 = x[..., : HEAD_DIM // 2], x[..., HEAD_DIM // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(x, cos, sin):
    return x * cos + rotate_half(x) * sin


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL, bias=False)
        self.proj = nn.Linear(D_MODEL, D_MODEL, bias=False)

    def forward(self, x, cos, sin, cache_k, cache_v, pos):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)
        q = apply_rotary(q, cos, sin)
        k = apply_rotary(k, cos, sin)
        cache_k[:, :, pos:pos + t] = k
        cache_v[:, :, pos:pos + t] = v
        out = F.scaled_dot_product_attention(q, cache_k[:, :, :pos + t], cache_v[:, :, :pos + t],
                                             is_causal=t > 1)
        return self.proj(out.transpose(1, 2).reshape(b, t, D_MODEL))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(D_MODEL, FFN, bias=False)
        self.up = nn.Linear(D_MODEL, FFN, bias=False)
        self.down = nn.Linear(FFN, D_MODEL, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn_norm = RMSNorm(D_MODEL)
        self.attn = Attention()
        self.mlp_norm = RMSNorm(D_MODEL)
        self.mlp = MLP()

    def forward(self, x, cos, sin, cache_k, cache_v, pos):
        x = x + self.attn(self.attn_norm(x), cos, sin, cache_k, cache_v, pos)
        return x + self.mlp(self.mlp_norm(x))


class TinyLlama(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = RMSNorm(D_MODEL)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
        freqs = torch.outer(torch.arange(MAX_LEN).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, ids, cache, pos):
        t = ids.shape[1]
        x = self.embed(ids)
        cos = self.cos[pos:pos + t].to(x.dtype)
        sin = self.sin[pos:pos + t].to(x.dtype)
        for i, block in enumerate(self.blocks):
            x = block(x, cos, sin, cache[i, 0], cache[i, 1], pos)
        x = self.norm(x[:, -1:])
        return F.linear(x, self.embed.weight)[:, -1]


def sample(logits, n_generated):
    logits = logits.float() / TEMPERATURE
    if n_generated < MIN_NEW_TOKENS:
        logits[:, EOS_ID] = float("-inf")
    top_vals, top_idx = torch.topk(logits, TOP_K, dim=-1)
    probs = torch.softmax(top_vals, dim=-1)
    choice = torch.multinomial(probs, 1)
    return top_idx.gather(-1, choice)


def main():
    torch.manual_seed(0)
    rnd = random.Random(7)
    model = TinyLlama().cuda().to(torch.bfloat16).eval()
    for m in model.modules():
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02 / math.sqrt(2 * LAYERS))
    cache = torch.zeros(LAYERS, 2, 1, HEADS, MAX_LEN, HEAD_DIM, device="cuda",
                        dtype=torch.bfloat16)
    prompts = [[rnd.randrange(3, VOCAB) for _ in range(rnd.randint(64, MAX_PROMPT))]
               for _ in range(REQUESTS)]

    with torch.inference_mode():
        # Warm-up: one short generation so cuBLAS and the SDPA kernels are initialised.
        warm = torch.tensor([prompts[0][:16]], device="cuda")
        nxt = sample(model(warm, cache, 0), 0)
        for p in range(16, 24):
            nxt = sample(model(nxt, cache, p), p)
        nxt.item()

        issuing = waiting = 0.0
        tokens_out = 0
        start = time.perf_counter()
        for r, prompt in enumerate(prompts):
            ids = torch.tensor([prompt], device="cuda")
            pos = len(prompt)
            next_tok = sample(model(ids, cache, 0), 0)
            generated = []
            for n in range(NEW_TOKENS):
                t0 = time.perf_counter()
                tok = next_tok.item()
                t1 = time.perf_counter()
                waiting += t1 - t0
                if tok == EOS_ID:
                    break
                generated.append(tok)
                if n == NEW_TOKENS - 1:
                    break
                logits = model(next_tok, cache, pos)
                next_tok = sample(logits, n + 1)
                issuing += time.perf_counter() - t1
                pos += 1
            tokens_out += len(generated)
            print(f"request {r}: prompt {len(prompt)} tokens, generated {len(generated)}: "
                  f"{generated[:8]}...")
        torch.cuda.synchronize()
        total = time.perf_counter() - start
    print(f"generated {tokens_out} tokens in {REQUESTS} requests; issuing forward+sampling "
          f"{issuing:.2f} s, waiting in .item() {waiting:.2f} s, of loop {total:.2f} s")


if __name__ == "__main__":
    main()
