"""Corpus (blind, batch 10): diffusion-transformer training guarded against non-finite losses.

Program: a class-conditional latent diffusion transformer in the DiT layout written with
torch.nn (4 x 32 x 32 latents as from a 256 x 256 VAE, 2 x 2 patches: 256 tokens; 12 blocks of
d_model 1024, 16 heads, adaLN-Zero modulation from the timestep and class embedding, SDPA
attention, GELU MLP of 4096; bf16 autocast, fused AdamW, an EMA copy of the weights updated with
torch._foreach_lerp_ every step), trained on batches of 128 latents made on the GPU with
epsilon-prediction MSE under a linear beta schedule. The loop carries the guard that diffusion
codebases add after a divergence: `if not torch.isfinite(loss): skip the batch` before the
backward, and after clip_grad_norm_ `if not torch.isfinite(grad_norm): skip the update`: two
syncs every step, each draining the GPU queue. The model is GEMM-heavy (~31 TFLOP of bf16 GEMMs
and attention a step, ~55-75 ms, plus elementwise modulation, LayerNorm and GELU over 32k x 1024
activations, ~30-40 ms: ~90-120 ms of GPU work), launched by ~20-35 ms of CPU. After each guard
the GPU idles only until the next kernel arrives (the backward's first launch; the fused AdamW's
first launch after tensor grouping, ~0.3-1 ms), and the forward is launched faster than it runs,
so the two syncs cost ~1-2% of the step. No NVTX. 40 steps; one line printed at the end (the
GPU-timeline span of the steps by CUDA events, which measures time on the GPU timeline including
idle gaps, not busy time; the seconds the CPU spent blocked in the two guards, which is the
GPU's queued work, not time lost; and the loop's wall time).

Expected, written before it was recorded (2026-11-26): gpu-bound, 88-97% of the steady-state
step time, the finding naming the forward/backward GEMMs (QKV, attention projection, MLP and the
adaLN modulation linears) as holding most of the GPU time, then flash attention and the
elementwise modulate/LayerNorm/GELU kernels, the fused AdamW and the EMA foreach kernels last;
40 steps (within 2). Why gpu-bound and not sync-stall: a sync that the GPU reaches busy costs
only the refill gap after it; with ~100 ms of kernels a step and the CPU ~3-4x faster than the
GPU, each refill is well under a millisecond. Misses: sync-stall (two syncs a step, both waiting
for work the GPU would have to do anyway), launch-bound, cpu-work, allocator. Advice that helps:
GPU-side levers (torch.compile or fused modulation/LayerNorm kernels, a larger patch or smaller
model); the guards may stay (or be made sync-free with torch.where on the update), but removing
them would gain ~1-2%.
"""
import copy
import math
import time

import torch
import torch.nn.functional as F
from torch import nn

LATENT_CH, LATENT, PATCH = 4, 32, 2
D_MODEL, LAYERS, HEADS, MLP_RATIO, CLASSES = 1024, 12, 16, 4, 1000
BATCH, STEPS, LR, EMA_DECAY, MAX_GRAD_NORM, T_STEPS = 128, 40, 1e-4, 0.9999, 1.0, 1000
TOKENS = (LATENT // PATCH) ** 2


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


def timestep_embedding(t, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class DiTBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(D_MODEL, elementwise_affine=False, eps=1e-6)
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = nn.Linear(D_MODEL, D_MODEL)
        self.norm2 = nn.LayerNorm(D_MODEL, elementwise_affine=False, eps=1e-6)
        self.fc1 = nn.Linear(D_MODEL, MLP_RATIO * D_MODEL)
        self.fc2 = nn.Linear(MLP_RATIO * D_MODEL, D_MODEL)
        self.adaLN = nn.Sequential(nn.SiLU(), nn.Linear(D_MODEL, 6 * D_MODEL))
        nn.init.zeros_(self.adaLN[1].weight)
        nn.init.zeros_(self.adaLN[1].bias)

    def forward(self, x, c):
        shift1, scale1, gate1, shift2, scale2, gate2 = self.adaLN(c).chunk(6, dim=1)
        b, n, d = x.shape
        h = modulate(self.norm1(x), shift1, scale1)
        q, k, v = self.qkv(h).view(b, n, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v)
        a = self.proj(a.transpose(1, 2).reshape(b, n, d))
        x = x + gate1.unsqueeze(1) * a
        h = modulate(self.norm2(x), shift2, scale2)
        h = self.fc2(F.gelu(self.fc1(h), approximate="tanh"))
        return x + gate2.unsqueeze(1) * h


class DiT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(LATENT_CH, D_MODEL, PATCH, stride=PATCH)
        self.pos = nn.Parameter(torch.randn(1, TOKENS, D_MODEL) * 0.02)
        self.t_mlp = nn.Sequential(nn.Linear(256, D_MODEL), nn.SiLU(), nn.Linear(D_MODEL, D_MODEL))
        self.y_embed = nn.Embedding(CLASSES + 1, D_MODEL)
        self.blocks = nn.ModuleList(DiTBlock() for _ in range(LAYERS))
        self.norm_out = nn.LayerNorm(D_MODEL, elementwise_affine=False, eps=1e-6)
        self.ada_out = nn.Sequential(nn.SiLU(), nn.Linear(D_MODEL, 2 * D_MODEL))
        self.out = nn.Linear(D_MODEL, PATCH * PATCH * LATENT_CH)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def unpatchify(self, x):
        b, g = x.shape[0], LATENT // PATCH
        x = x.view(b, g, g, PATCH, PATCH, LATENT_CH).permute(0, 5, 1, 3, 2, 4)
        return x.reshape(b, LATENT_CH, LATENT, LATENT)

    def forward(self, x, t, y):
        x = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        c = self.t_mlp(timestep_embedding(t, 256)) + self.y_embed(y)
        for block in self.blocks:
            x = block(x, c)
        shift, scale = self.ada_out(c).chunk(2, dim=1)
        return self.unpatchify(self.out(modulate(self.norm_out(x), shift, scale)))


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    model = DiT().cuda()
    ema = copy.deepcopy(model).requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    ema_params = list(ema.parameters())
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=0.0, fused=True)
    print(f"DiT: {sum(p.numel() for p in params) / 1e6:.0f} M parameters")

    betas = torch.linspace(1e-4, 0.02, T_STEPS, device="cuda")
    alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
    gen = torch.Generator(device="cuda").manual_seed(1)
    # A fixed pool of "encoded" latents and labels standing in for the VAE-encoded dataset.
    pool = torch.randn(8 * BATCH, LATENT_CH, LATENT, LATENT, device="cuda", generator=gen)
    pool_labels = torch.randint(0, CLASSES, (8 * BATCH,), device="cuda", generator=gen)

    skipped = 0
    blocked = 0.0
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(STEPS)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(STEPS)]
    model.train()
    loop_start = time.perf_counter()
    for step in range(STEPS):
        starts[step].record()
        idx = torch.randint(0, pool.shape[0], (BATCH,), device="cuda", generator=gen)
        x0, y = pool[idx] * 0.18215, pool_labels[idx]
        y = torch.where(torch.rand(BATCH, device="cuda", generator=gen) < 0.1,
                        torch.full_like(y, CLASSES), y)  # classifier-free guidance dropout
        t = torch.randint(0, T_STEPS, (BATCH,), device="cuda", generator=gen)
        noise = torch.randn(x0.shape, device="cuda", generator=gen)
        a = alphas_cumprod[t].view(-1, 1, 1, 1)
        xt = a.sqrt() * x0 + (1 - a).sqrt() * noise

        with torch.autocast("cuda", dtype=torch.bfloat16):
            pred = model(xt, t, y)
        loss = F.mse_loss(pred.float(), noise)

        t0 = time.perf_counter()
        finite = bool(torch.isfinite(loss))
        blocked += time.perf_counter() - t0
        if not finite:
            print(f"step {step}: non-finite loss, skipping batch")
            opt.zero_grad(set_to_none=True)
            skipped += 1
            ends[step].record()
            continue

        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(params, MAX_GRAD_NORM)
        t0 = time.perf_counter()
        finite = bool(torch.isfinite(grad_norm))
        blocked += time.perf_counter() - t0
        if not finite:
            print(f"step {step}: non-finite gradient norm, skipping update")
            opt.zero_grad(set_to_none=True)
            skipped += 1
            ends[step].record()
            continue
        opt.step()
        opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            torch._foreach_lerp_(ema_params, params, 1.0 - EMA_DECAY)
        ends[step].record()
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.4f} grad norm {grad_norm.item():.3f}")
    torch.cuda.synchronize()
    total = time.perf_counter() - loop_start
    gpu_span = sum(s.elapsed_time(e) for s, e in zip(starts, ends)) / 1000
    print(f"steps {STEPS} (skipped {skipped}); GPU-timeline span of the steps {gpu_span:.2f} s "
          f"(includes idle gaps), CPU blocked in the two guards {blocked:.2f} s, "
          f"of loop {total:.2f} s")


if __name__ == "__main__":
    main()
