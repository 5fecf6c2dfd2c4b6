"""Blind batch 15: a compiled speech encoder with LayerDrop, whose skip pattern is a Python tuple.

A speech team pre-trains a HuBERT-style encoder (masked prediction of 504 cluster labels from
log-mel frames): a linear feature projection, a learned position embedding, 6 pre-norm transformer layers (width 384, 6 heads,
FFN 1,536, SDPA), a linear head. The model is wrapped in `torch.compile` (default mode). Training
uses LayerDrop (p = 0.1), as fairseq's HuBERT and wav2vec 2.0 recipes do.

fairseq draws the LayerDrop decision inside `forward` with NumPy, which breaks the compiled graph.
So the team draws it outside, once per optimizer step (the 4 accumulated micro-batches of a step
share one pattern), and passes it to the model as a tuple of Python bools:

    skip = tuple(rnd.random() < LAYERDROP for _ in range(LAYERS))
    logits = model(feats, mask, skip)        # forward: `if skip[i]: continue`

Dynamo guards on the values of `skip`: every pattern it has not seen yet is a new graph, traced,
lowered by Inductor and its forward and backward compiled again. `cache_size_limit` was raised to
64 after the first "recompilation limit" warning, so it never falls back to eager. The shapes never
change. With the program's seed, the 20 optimizer steps of the loop bring 4 new patterns (in steps
6, 7, 13 and 17; one layer dropped in each), besides the no-drop pattern compiled in the warm-up.

Features (16 utterances x 400 frames x 80 mel bins) and labels are synthesised on the GPU; 8% of
the frames start a 10-frame mask span, replaced by a learned mask embedding; the loss is the
cross-entropy on masked frames, computed outside the compiled model with the mask as a weight.
bf16 autocast, AdamW, gradient clipping. The loss is read at every optimizer step for the progress
line. No NVTX. 1 warm-up optimizer step (4 micro-batches, all layers), then 20 (80 micro-batches).

Ground truth printed at the end: the seconds of the optimizer steps that met a new pattern, less a
steady step's median, against the loop's seconds; Dynamo's count of graphs compiled in the loop;
the number of optimizer steps and micro-batches.
"""
import math
import random
import statistics
import time

import torch
import torch._dynamo
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
dev = torch.device("cuda")
torch._dynamo.config.cache_size_limit = 64

N_MELS, CLUSTERS = 80, 504
WIDTH, LAYERS, HEADS, FFN = 384, 6, 6, 1536
BATCH, FRAMES = 16, 400
ACCUM, STEPS, WARMUP = 4, 20, 1
LAYERDROP = 0.1
MASK_PROB, MASK_SPAN = 0.08, 10


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv, self.out = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
        self.ff1, self.ff2 = nn.Linear(WIDTH, FFN), nn.Linear(FFN, WIDTH)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, WIDTH // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, WIDTH))
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(N_MELS, WIDTH)
        self.mask_emb = nn.Parameter(torch.randn(WIDTH) * 0.02)
        self.pos = nn.Parameter(torch.randn(FRAMES, WIDTH) * 0.02)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, CLUSTERS)

    def forward(self, feats, mask, skip):
        x = self.proj(feats)
        x = torch.where(mask.unsqueeze(-1), self.mask_emb.to(x.dtype), x)
        x = x + self.pos
        for i, layer in enumerate(self.layers):
            if skip[i]:
                continue
            x = layer(x)
        return self.head(self.ln(x))


def synth_batch(g, proto):
    """Log-mel-like frames: a few formant tracks drifting over time plus noise; labels are the
    nearest of 504 prototype frames (what k-means on MFCCs gives HuBERT)."""
    t = torch.linspace(0, 1, FRAMES, device=dev)
    bins = torch.arange(N_MELS, device=dev, dtype=torch.float32)
    centre = torch.rand(BATCH, 4, 1, device=dev, generator=g) * 60 + 10 \
        + 8 * torch.sin(2 * math.pi * (torch.rand(BATCH, 4, 1, device=dev, generator=g) * 3) * t)
    width = torch.rand(BATCH, 4, 1, device=dev, generator=g) * 4 + 2
    energy = (torch.rand(BATCH, 1, FRAMES, device=dev, generator=g) > 0.15).float()
    spec = torch.exp(-((bins.view(1, 1, 1, -1) - centre.unsqueeze(-1)) / width.unsqueeze(-1)) ** 2).sum(1)
    feats = torch.log(spec * energy.transpose(1, 2) + 1e-3) + 0.1 * torch.randn(BATCH, FRAMES, N_MELS, device=dev,
                                                                               generator=g)
    labels = torch.cdist(feats, proto).argmin(-1)
    starts = torch.rand(BATCH, FRAMES, device=dev, generator=g) < MASK_PROB
    mask = F.max_pool1d(starts.float().unsqueeze(1), MASK_SPAN, 1, padding=MASK_SPAN // 2)[:, 0, :FRAMES] > 0
    return feats, labels, mask


model = torch.compile(Encoder().to(dev))
opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01)
g = torch.Generator(device=dev).manual_seed(3)
proto = torch.randn(CLUSTERS, N_MELS, device=dev, generator=g) - 3.0
drop_rng = random.Random(0)


def optimizer_step(skip):
    total = torch.zeros((), device=dev)
    for _ in range(ACCUM):
        feats, labels, mask = synth_batch(g, proto)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(feats, mask, skip)
        ce = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), reduction="none")
        w = mask.flatten().float()
        loss = (ce * w).sum() / w.sum().clamp(min=1) / ACCUM
        loss.backward()
        total += loss.detach()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return total.item()


t0 = time.perf_counter()
for _ in range(WARMUP):
    optimizer_step((False,) * LAYERS)
torch.cuda.synchronize()
print(f"warm-up (first compile) {time.perf_counter() - t0:.1f} s", flush=True)

graphs_before = torch._dynamo.utils.counters["stats"].get("unique_graphs", 0)
seen = {(False,) * LAYERS}
step_times, new_steps = [], []
t_loop = time.perf_counter()
for step in range(STEPS):
    skip = tuple(drop_rng.random() < LAYERDROP for _ in range(LAYERS))
    new = skip not in seen
    seen.add(skip)
    s0 = time.perf_counter()
    loss = optimizer_step(skip)
    step_times.append(time.perf_counter() - s0)
    if new:
        new_steps.append(step)
    dropped = [i for i, s in enumerate(skip) if s]
    print(f"step {step + 1}: loss {loss:.4f}, dropped layers {dropped}, {step_times[-1]:.2f} s", flush=True)
torch.cuda.synchronize()
loop = time.perf_counter() - t_loop
graphs = torch._dynamo.utils.counters["stats"].get("unique_graphs", 0) - graphs_before
steady = statistics.median(t for i, t in enumerate(step_times) if i not in new_steps)
compile_s = sum(step_times[i] - steady for i in new_steps)
print(f"ground truth: steps with a new LayerDrop pattern {compile_s:.3f} s beyond a steady step "
      f"({1e3 * steady:.1f} ms) of {loop:.3f} s loop ({100 * compile_s / loop:.1f}%); new patterns in steps "
      f"{[i + 1 for i in new_steps]}; {graphs} graphs compiled in the loop; {STEPS} optimizer steps, "
      f"{STEPS * ACCUM} micro-batches", flush=True)
