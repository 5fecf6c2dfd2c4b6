"""Corpus (blind, batch 9): a DLRM-style click model with dense embedding gradients and Adam.

Program: a recommendation model in the DLRM layout written with torch.nn: 8 categorical
features, each an nn.EmbeddingBag(1,000,000 x 128, mode="sum") with the default dense gradient
(sparse=False), multi-hot bags of 20 ids per sample drawn with a power-law skew; 13 dense
features through a bottom MLP (13-512-256-128); pairwise dot-product interactions of the 9
vectors (bmm); a top MLP (164-1024-1024-512-1) and BCE-with-logits; fp32 throughout,
torch.optim.Adam (the default foreach implementation), batch 4096 made on the GPU from a fixed
seed. The tables hold 4.1 GB of parameters: every step each table's gradient is materialised
as a dense 512 MB tensor (zero fill plus scatter-add of the few touched rows), and Adam reads
and writes every row of every table and of both moment buffers (~10 passes over 4.1 GB), ~30-45
ms of DRAM-bound GPU work a step from ~250 launches (~2-3 ms of CPU). No NVTX; the loss printed
every 10 steps (.item()). 40 steps; one line printed at the end (the GPU time of the steps and of
the optimizer step alone by CUDA events, against the loop's wall time).

Expected, written before it was recorded (2026-11-26): gpu-bound, 90-98% of the steady-state
step time, the finding naming Adam's multi-tensor (foreach) kernels over the embedding tables
as holding most of the time (~65-85% of the GPU time), then the dense embedding-bag backward
(fill and scatter-add); the work is memory-bandwidth-bound; 40 steps (within 2). Misses:
launch-bound, sync-stall (a .item() every 10 steps), allocator (the dense gradients are freed
and re-used from the caching allocator each step, no cudaMalloc after the first steps),
cpu-work. Advice that helps: sparse gradients (sparse=True with SparseAdam, or a row-wise
optimiser such as row-wise Adagrad that touches only the looked-up rows), the fused Adam
(fused=True, one pass), smaller tables (hashing) or bf16 tables; not fewer syncs.
"""
import time

import torch
import torch.nn.functional as F
from torch import nn

TABLES, ROWS, DIM, BAG = 8, 1_000_000, 128, 20
DENSE, BATCH, STEPS, LOG_EVERY = 13, 4096, 40, 10


def mlp(sizes, last_act=True):
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(nn.Linear(a, b, device="cuda"))
        if last_act or i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tables = nn.ModuleList(nn.EmbeddingBag(ROWS, DIM, mode="sum", device="cuda")
                                    for _ in range(TABLES))
        self.bottom = mlp([DENSE, 512, 256, DIM])
        n = TABLES + 1
        self.top = mlp([DIM + n * (n - 1) // 2, 1024, 1024, 512, 1], last_act=False)
        self.register_buffer("tri", torch.triu_indices(n, n, offset=1, device="cuda"))

    def forward(self, dense, ids, offsets):
        x = self.bottom(dense)
        vecs = [x] + [t(ids[i], offsets) for i, t in enumerate(self.tables)]
        z = torch.stack(vecs, dim=1)  # B x 9 x 128
        inter = torch.bmm(z, z.transpose(1, 2))[:, self.tri[0], self.tri[1]]
        return self.top(torch.cat([x, inter], dim=1)).squeeze(1)


def make_batch(gen):
    # Power-law ids: a few popular items, a long tail.
    u = torch.rand((TABLES, BATCH * BAG), device="cuda", generator=gen)
    ids = (u.pow(4) * ROWS).long().clamp_(max=ROWS - 1)
    offsets = torch.arange(0, BATCH * BAG, BAG, device="cuda")
    dense = torch.randn((BATCH, DENSE), device="cuda", generator=gen).abs_().log1p_()
    clicks = (torch.rand(BATCH, device="cuda", generator=gen) < 0.03).float()
    return dense, ids, offsets, clicks


def main():
    torch.manual_seed(0)
    model = DLRM()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(1)
    params = sum(p.numel() for p in model.parameters())
    print(f"parameters: {params / 1e9:.2f} B ({params * 4 / 2**30:.1f} GiB fp32)")

    step_spans, opt_spans = [], []
    start = time.perf_counter()
    for step in range(STEPS):
        begin, mid, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        begin.record()
        dense, ids, offsets, clicks = make_batch(gen)
        loss = F.binary_cross_entropy_with_logits(model(dense, ids, offsets), clicks)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        mid.record()
        opt.step()
        end.record()
        step_spans.append((begin, end))
        opt_spans.append((mid, end))
        if step % LOG_EVERY == 0:
            print(f"step {step} loss {loss.item():.5f}")
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    gpu = sum(b.elapsed_time(e) for b, e in step_spans) / 1e3
    gpu_opt = sum(b.elapsed_time(e) for b, e in opt_spans) / 1e3
    print(f"steps {STEPS}; GPU time (CUDA events) of the steps {gpu:.2f} s, of which Adam "
          f"{gpu_opt:.2f} s, of loop {total:.2f} s")


if __name__ == "__main__":
    main()
