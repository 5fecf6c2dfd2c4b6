"""Corpus (blind, batch 8): a hand-written Triton LAMB optimiser launched once per parameter.

Program: a small Transformer language model (6 layers, d=256, 4 heads, 4k vocabulary, 8 x 128
tokens, fp32, 77 parameter tensors) is trained with a LAMB optimiser its author wrote in Triton
"to fuse the update": for every parameter tensor, one kernel computes the Adam direction and
moments, one accumulates the squared norms of the weight and of the update (atomics into a
per-parameter slot), and one applies the trust-ratio-scaled step. So each step makes 231 Triton
launches through Triton's Python launcher (argument binding, specialisation key, cache look-up:
~8-35 us each depending on the Triton version) for tensors of 256 to 1M elements whose kernels
run for a few microseconds; the forward and backward pass add ~350 more small PyTorch kernels
(~2.5-3.5 ms of launching for ~1.5-2.5 ms of GPU work). The GPU is idle most of the step,
waiting for launches. No NVTX. 60 steps (after one warm-up step that compiles the Triton
kernels); one line printed at the end (the CPU time of the optimiser's step, measured
in-program with no synchronisation, against the loop's total).

Expected, written before it was recorded (2026-11-26): launch-bound, 70-92% of the
steady-state step time (the GPU idle between tiny kernels while the CPU issues them), naming
the per-parameter Triton launches in TritonLAMB.step (40-70% of the step on its own; the
forward and backward launches are the rest); 60 steps (within 2). A finding of cpu-work that
names the same loop is a near miss: much of each launch's cost is Triton's Python launcher
rather than time inside cuLaunchKernel, but the cure is the launch-bound one (one multi-tensor
kernel over all parameters, torch's fused optimisers, or CUDA graphs), not less host
computation. Misses: gpu-bound, sync-stall (the only read-back is a loss.item() every 10 steps),
compilation (the Triton kernels compile in the warm-up step, before the loop).
"""
import math
import time

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from torch import nn

VOCAB, D, HEADS, LAYERS, SEQ, BATCH, STEPS = 4096, 256, 4, 6, 128, 8, 60
BLOCK = 1024


@triton.jit
def lamb_direction_kernel(p_ptr, g_ptr, m_ptr, v_ptr, u_ptr, n, beta1, beta2, eps, weight_decay,
                          bias_c1, bias_c2, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask, other=0.0)
    g = tl.load(g_ptr + offs, mask=mask, other=0.0)
    m = beta1 * tl.load(m_ptr + offs, mask=mask, other=0.0) + (1.0 - beta1) * g
    v = beta2 * tl.load(v_ptr + offs, mask=mask, other=0.0) + (1.0 - beta2) * g * g
    u = (m / bias_c1) / (tl.sqrt(v / bias_c2) + eps) + weight_decay * p
    tl.store(m_ptr + offs, m, mask=mask)
    tl.store(v_ptr + offs, v, mask=mask)
    tl.store(u_ptr + offs, u, mask=mask)


@triton.jit
def sq_norms_kernel(p_ptr, u_ptr, norms_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask, other=0.0)
    u = tl.load(u_ptr + offs, mask=mask, other=0.0)
    tl.atomic_add(norms_ptr, tl.sum(p * p, axis=0))
    tl.atomic_add(norms_ptr + 1, tl.sum(u * u, axis=0))


@triton.jit
def trust_step_kernel(p_ptr, u_ptr, norms_ptr, n, lr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    w_norm = tl.sqrt(tl.load(norms_ptr))
    u_norm = tl.sqrt(tl.load(norms_ptr + 1))
    trust = tl.where((w_norm > 0.0) & (u_norm > 0.0), w_norm / u_norm, 1.0)
    p = tl.load(p_ptr + offs, mask=mask, other=0.0)
    u = tl.load(u_ptr + offs, mask=mask, other=0.0)
    tl.store(p_ptr + offs, p - lr * trust * u, mask=mask)


class TritonLAMB:
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01):
        self.params = [p for p in params if p.requires_grad]
        self.lr, (self.beta1, self.beta2), self.eps, self.wd = lr, betas, eps, weight_decay
        self.state = [(torch.zeros_like(p), torch.zeros_like(p), torch.empty_like(p))
                      for p in self.params]
        # One (weight, update) squared-norm slot per parameter, padded to 16 bytes.
        self.norms = torch.zeros(len(self.params), 4, device=self.params[0].device)
        self.t = 0
        self.launches = 0

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self):
        self.t += 1
        c1, c2 = 1.0 - self.beta1 ** self.t, 1.0 - self.beta2 ** self.t
        self.norms.zero_()
        for i, (p, (m, v, u)) in enumerate(zip(self.params, self.state)):
            n = p.numel()
            grid = (triton.cdiv(n, BLOCK),)
            wd = self.wd if p.ndim > 1 else 0.0
            slot = self.norms[i]
            lamb_direction_kernel[grid](p, p.grad, m, v, u, n, self.beta1, self.beta2, self.eps,
                                        wd, c1, c2, BLOCK=BLOCK)
            sq_norms_kernel[grid](p, u, slot, n, BLOCK=BLOCK)
            trust_step_kernel[grid](p, u, slot, n, self.lr, BLOCK=BLOCK)
            self.launches += 3


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, n, D))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.pos = nn.Embedding(VOCAB, D), nn.Parameter(torch.zeros(SEQ, D))
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f, self.head = nn.LayerNorm(D), nn.Linear(D, VOCAB, bias=False)

    def forward(self, ids):
        x = self.embed(ids) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def main():
    torch.manual_seed(0)
    model = TinyLM().cuda()
    opt = TritonLAMB(model.parameters())
    corpus = torch.randint(0, VOCAB, (BATCH * (STEPS + 2), SEQ + 1), device="cuda")
    print(f"{len(opt.params)} parameter tensors, "
          f"{sum(p.numel() for p in opt.params) / 1e6:.1f} M parameters")

    def train_step(step):
        batch = corpus[step * BATCH:(step + 1) * BATCH]
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        t = time.perf_counter()
        opt.step()
        return loss, time.perf_counter() - t

    t = time.perf_counter()
    train_step(STEPS + 1)  # warm-up: Triton compiles its kernels for each specialisation
    torch.cuda.synchronize()
    print(f"warm-up step (Triton compiles) {time.perf_counter() - t:.2f} s")
    opt.launches = 0

    in_step, start = 0.0, time.perf_counter()
    for step in range(STEPS):
        loss, seconds = train_step(step)
        in_step += seconds
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f} ppl {math.exp(min(loss.item(), 20)):.0f}")
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    print(f"steps {STEPS}; TritonLAMB.step {in_step:.2f} s ({opt.launches // STEPS} Triton "
          f"launches a step) of loop {total:.2f} s")


if __name__ == "__main__":
    main()
