"""Corpus (blind, batch 10): a GShard-style mixture-of-experts LM logging ~70 .item() scalars.

Program: a decoder LM whose feed-forward layers are mixtures of experts in the GShard/fairseq
layout (6 pre-LN blocks, d_model 1024, 16 heads, SDPA causal attention; 8 experts of 4096 per
layer with top-2 gating over groups of 1024 tokens, capacity factor 1.25, one-hot dispatch and
combine tensors applied with einsum, a load-balancing auxiliary loss; ~490 M parameters; bf16
autocast, fused AdamW, clip_grad_norm_), trained on batches of 16 x 512 tokens drawn on the GPU
from a fixed pool. The gating is written without a host sync (one_hot with num_classes, cumsum
for the buffer positions), so an ordinary step never waits for the GPU: ~10-11 TFLOP of bf16
GEMMs a step (expert GEMMs ~60% of it, the dispatch/combine einsums and attention projections
the rest) plus the gating's elementwise work and a fused AdamW over ~490 M parameters (~5-6 ms,
memory-bound): ~35-50 ms of GPU work, queued by ~15-20 ms of CPU, which runs ahead until the
launch queue is full and then waits inside the launch calls. Every 20 steps the loop logs
through a minimal SummaryWriter-style class (add_scalar writes one text line per scalar to a
file in a temporary folder under the current directory, removed at exit): the loss, the
auxiliary losses, each layer's per-expert load fractions, dropped-token fractions and router
entropies, the gradient norm and the learning rate, each read with its own .item() (~70 syncs in
a burst; the first waits for the queued steps, the others ~10-30 us each). No NVTX. 80 steps (4
of them with the burst); one line printed at the end (the GPU-timeline span of the steps by CUDA
events, which measures time on the GPU timeline including idle gaps, not busy time, and the
seconds spent in the logging bursts, which include the wait for already-queued GPU work, against
the loop's wall time).

Expected, written before it was recorded (2026-11-26): gpu-bound, 90-98% of the steady-state
step time, the finding naming the expert GEMMs (the bmm kernels behind the einsums), the
dispatch/combine einsums and the attention projections as holding the time, the fused AdamW and
the gating's elementwise kernels next; 80 steps (within 2), the logging steps (20, 40, 60, 80)
~2-4 ms longer. Misses: sync-stall (the ~70-sync bursts every 20 steps cost ~1-3 ms of GPU idle
each, well under 1% of the loop; the first .item() of a burst waits for queued work the GPU must
do anyway), launch-bound (the CPU spends much of its time inside launch calls because the launch
queue is full while the GPU is busy, not because kernels are short), cpu-work, allocator. Advice
that helps: GPU-side levers (sort-based dispatch instead of the one-hot einsums, grouped GEMMs
for the experts, a fused optimizer step is already used); the logging may stay (or gather its
scalars with one torch.stack(...).tolist()), it is not the bottleneck.
"""
import math
import os
import shutil
import tempfile
import time

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, D_MODEL, LAYERS, HEADS, SEQ = 32000, 1024, 6, 16, 512
EXPERTS, FFN, GROUP, CAPACITY_FACTOR, AUX_WEIGHT = 8, 4096, 1024, 1.25, 0.01
BATCH, STEPS, LOG_EVERY, LR, WARMUP, MAX_GRAD_NORM = 16, 80, 20, 3e-4, 20, 1.0
CAPACITY = math.ceil(2 * GROUP / EXPERTS * CAPACITY_FACTOR)


def top2_gating(logits):
    """GShard top-2 gating over (groups, tokens, experts) logits, as in fairseq's top2gating."""
    gates = logits.softmax(dim=-1)
    idx1 = gates.argmax(dim=-1)
    mask1 = F.one_hot(idx1, EXPERTS).to(gates.dtype)
    idx2 = logits.masked_fill(mask1.bool(), float("-inf")).argmax(dim=-1)
    mask2 = F.one_hot(idx2, EXPERTS).to(gates.dtype)
    loc1 = torch.cumsum(mask1, dim=1) - 1
    loc2 = torch.cumsum(mask2, dim=1) - 1 + mask1.sum(dim=1, keepdim=True)
    load = mask1.mean(dim=1)
    aux = (gates.mean(dim=1) * load).sum(dim=-1).mean() * EXPERTS
    mask1 = mask1 * (loc1 < CAPACITY)
    mask2 = mask2 * (loc2 < CAPACITY)
    pos1 = (loc1 * mask1).sum(dim=-1).long()
    pos2 = (loc2 * mask2).sum(dim=-1).long()
    g1 = (gates * mask1).sum(dim=-1)
    g2 = (gates * mask2).sum(dim=-1)
    denom = (g1 + g2).clamp(min=torch.finfo(gates.dtype).eps)
    g1, g2 = g1 / denom, g2 / denom
    combine = (g1[..., None, None] * mask1[..., None] * F.one_hot(pos1, CAPACITY)[..., None, :]
               + g2[..., None, None] * mask2[..., None] * F.one_hot(pos2, CAPACITY)[..., None, :])
    stats = {
        "load": load.mean(dim=0).detach(),
        "dropped": (1 - (mask1.sum() + mask2.sum()) / (2 * mask1[..., 0].numel())).detach(),
        "entropy": -(gates * torch.log(gates + 1e-9)).sum(dim=-1).mean().detach(),
        "aux": aux.detach(),
    }
    return aux, combine, stats


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = nn.Linear(D_MODEL, EXPERTS, bias=False)
        self.w1 = nn.Parameter(torch.randn(EXPERTS, D_MODEL, FFN) / math.sqrt(D_MODEL))
        self.w2 = nn.Parameter(torch.randn(EXPERTS, FFN, D_MODEL) / math.sqrt(FFN))

    def forward(self, x):
        b, t, d = x.shape
        groups = x.reshape(-1, GROUP, d)
        logits = self.router(groups).float()
        aux, combine, stats = top2_gating(logits)
        dispatch = (combine > 0).to(combine.dtype)
        # Under autocast the einsums run as bf16 batched GEMMs.
        expert_in = torch.einsum("gsec,gsm->egcm", dispatch, groups)
        h = F.gelu(torch.einsum("egcm,emh->egch", expert_in, self.w1))
        expert_out = torch.einsum("egch,ehm->egcm", h, self.w2)
        out = torch.einsum("gsec,egcm->gsm", combine, expert_out)
        return out.reshape(b, t, d), aux, stats


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = nn.Linear(D_MODEL, D_MODEL)
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.moe = MoE()

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        m, aux, stats = self.moe(self.ln2(x))
        return x + m, aux, stats


class MoELM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Parameter(torch.randn(SEQ, D_MODEL) * 0.02)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos
        auxes, stats = [], []
        for block in self.blocks:
            x, aux, s = block(x)
            auxes.append(aux)
            stats.append(s)
        logits = self.head(self.ln_f(x))
        lm_loss = F.cross_entropy(logits.float().view(-1, VOCAB), targets.reshape(-1))
        return lm_loss, torch.stack(auxes).sum(), stats


class ScalarWriter:
    """The part of a TensorBoard SummaryWriter this script uses: one record per add_scalar."""

    def __init__(self, logdir):
        self.file = open(os.path.join(logdir, "scalars.tsv"), "w")

    def add_scalar(self, tag, value, step):
        self.file.write(f"{step}\t{tag}\t{value:.6g}\t{time.time():.3f}\n")

    def close(self):
        self.file.close()


def log_step(writer, step, lm_loss, aux_loss, stats, grad_norm, lr):
    writer.add_scalar("train/lm_loss", lm_loss.item(), step)
    writer.add_scalar("train/aux_loss", aux_loss.item(), step)
    writer.add_scalar("train/grad_norm", grad_norm.item(), step)
    writer.add_scalar("train/lr", lr, step)
    for i, s in enumerate(stats):
        for e in range(EXPERTS):
            writer.add_scalar(f"moe/layer{i}/load_expert{e}", s["load"][e].item(), step)
        writer.add_scalar(f"moe/layer{i}/dropped", s["dropped"].item(), step)
        writer.add_scalar(f"moe/layer{i}/router_entropy", s["entropy"].item(), step)
        writer.add_scalar(f"moe/layer{i}/aux", s["aux"].item(), step)
    print(f"step {step}: lm loss {lm_loss.item():.4f} aux {aux_loss.item():.4f} "
          f"grad norm {grad_norm.item():.3f}")


def main():
    torch.manual_seed(0)
    model = MoELM().cuda()
    print(f"MoE LM: {sum(p.numel() for p in model.parameters()) / 1e6:.0f} M parameters")
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.1, fused=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / WARMUP))
    gen = torch.Generator(device="cuda").manual_seed(1)
    corpus = torch.randint(0, VOCAB, (2_000_000,), device="cuda", generator=gen)
    logdir = tempfile.mkdtemp(prefix="moe-runs-", dir=os.getcwd())
    writer = ScalarWriter(logdir)
    try:
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(STEPS)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(STEPS)]
        in_logging = 0.0
        loop_start = time.perf_counter()
        for step in range(STEPS):
            starts[step].record()
            offsets = torch.randint(0, corpus.numel() - SEQ - 1, (BATCH, 1), device="cuda",
                                    generator=gen)
            chunk = corpus[offsets + torch.arange(SEQ + 1, device="cuda")]
            x, y = chunk[:, :-1], chunk[:, 1:]
            with torch.autocast("cuda", dtype=torch.bfloat16):
                lm_loss, aux_loss, stats = model(x, y)
            loss = lm_loss + AUX_WEIGHT * aux_loss
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_GRAD_NORM)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            ends[step].record()
            if (step + 1) % LOG_EVERY == 0:
                t0 = time.perf_counter()
                log_step(writer, step + 1, lm_loss, aux_loss, stats, grad_norm,
                         sched.get_last_lr()[0])
                in_logging += time.perf_counter() - t0
        torch.cuda.synchronize()
        total = time.perf_counter() - loop_start
        span = sum(s.elapsed_time(e) for s, e in zip(starts, ends)) / 1000
        print(f"steps {STEPS}; GPU-timeline span of the steps {span:.2f} s (includes idle gaps), "
              f"logging bursts {in_logging:.2f} s (includes the wait for queued work), "
              f"of loop {total:.2f} s")
    finally:
        writer.close()
        shutil.rmtree(logdir, ignore_errors=True)


if __name__ == "__main__":
    main()
