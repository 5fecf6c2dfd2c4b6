"""Corpus (blind, batch 8): full-graph GraphSAGE training, bound by gathers and scatter-adds.

Program: a three-layer GraphSAGE node classifier (mean aggregation written with index_select
and index_add_, as in hand-rolled or PyG-style message passing) trains full-batch on a synthetic
graph of 1.2 M nodes and 9.6 M edges with skewed in-degrees (edges sorted by destination, as a
CSR build leaves them), 128 features, fp32, Adam. Each step gathers 9.6 M x 128 messages per
layer (~10 GB of random-row reads and writes), scatter-adds them with atomics, and runs the
mirror-image scatter and gather in backward: ~60-120 ms of memory- and atomics-bound GPU work a
step, from only ~150 kernel launches. The loop is irregular: loss.item() is printed every 10
steps and a no-grad evaluation over the whole graph (accuracy read back with .item()) runs
every 20 steps. No NVTX. 40 steps; one line printed at the end (the GPU time of the training
steps and of the evaluations, timed with CUDA events that add no synchronisation, against the
loop's wall time).

Expected, written before it was recorded (2026-11-26): gpu-bound, 85-98% of the steady-state
step time; the kernels it names as holding the time should be the message passing's
(index_select's gather, the index_add_ scatter with atomics, and their backward counterparts:
~55-75% of the GPU time, memory- and atomics-bound), with the fp32 GEMMs of the Linear layers
behind them; the periodic .item() syncs and the evaluation pass are not the bottleneck (the GPU
is busy while the CPU waits in them). 40 steps (within 2); the two steps followed by an
evaluation are longer.
"""
import time

import torch
import torch.nn.functional as F
from torch import nn

NODES, EDGES, FEATURES, HIDDEN, CLASSES = 1_200_000, 9_600_000, 128, 128, 16
STEPS, LOG_EVERY, EVAL_EVERY = 40, 10, 20


class SAGELayer(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin = nn.Linear(2 * d_in, d_out)

    def forward(self, h, src, dst, inv_deg):
        msg = h.index_select(0, src)
        agg = torch.zeros_like(h).index_add_(0, dst, msg) * inv_deg
        return self.lin(torch.cat([h, agg], dim=1))


class GraphSAGE(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([SAGELayer(FEATURES, HIDDEN), SAGELayer(HIDDEN, HIDDEN),
                                     SAGELayer(HIDDEN, CLASSES)])

    def forward(self, x, src, dst, inv_deg):
        h = x
        for i, layer in enumerate(self.layers):
            h = layer(h, src, dst, inv_deg)
            if i < len(self.layers) - 1:
                h = F.dropout(F.relu(h), p=0.2, training=self.training)
        return h


def build_graph(gen):
    src = torch.randint(0, NODES, (EDGES,), device="cuda", generator=gen)
    # Skewed in-degrees: a few popular nodes receive many edges (citation and social graphs).
    dst = (torch.rand(EDGES, device="cuda", generator=gen).pow(2.5) * NODES).long()
    dst, order = dst.sort()
    src = src[order]
    deg = torch.bincount(dst, minlength=NODES).clamp_(min=1)
    return src, dst, (1.0 / deg.float()).unsqueeze(1)


def main():
    torch.manual_seed(0)
    gen = torch.Generator(device="cuda").manual_seed(0)
    src, dst, inv_deg = build_graph(gen)
    x = torch.randn(NODES, FEATURES, device="cuda", generator=gen)
    # Labels that depend on the neighbourhood, so the model has something to learn.
    teacher = torch.randn(FEATURES, CLASSES, device="cuda", generator=gen)
    neighbourhood = torch.zeros_like(x).index_add_(0, dst, x.index_select(0, src)) * inv_deg
    y = ((x + neighbourhood) @ teacher).argmax(1)
    split = torch.rand(NODES, device="cuda", generator=gen)
    train_idx, val_idx = (split < 0.6).nonzero().squeeze(1), (split >= 0.8).nonzero().squeeze(1)

    model = GraphSAGE().cuda()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    torch.cuda.synchronize()
    print(f"graph: {NODES} nodes, {EDGES} edges; {len(train_idx)} training nodes")

    spans, evals = [], []
    start = time.perf_counter()
    for step in range(STEPS):
        model.train()
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        out = model(x, src, dst, inv_deg)
        loss = F.cross_entropy(out[train_idx], y[train_idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        end.record()
        spans.append((begin, end))
        if step % LOG_EVERY == 0:
            print(f"step {step} loss {loss.item():.4f}")
        if (step + 1) % EVAL_EVERY == 0:
            model.eval()
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            with torch.no_grad():
                pred = model(x, src, dst, inv_deg).argmax(1)
                correct = (pred[val_idx] == y[val_idx]).float().mean()
            end.record()
            evals.append((begin, end))
            print(f"step {step} val acc {correct.item():.3f}")
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    gpu = sum(b.elapsed_time(e) for b, e in spans) / 1e3
    gpu_eval = sum(b.elapsed_time(e) for b, e in evals) / 1e3
    print(f"steps {STEPS}; GPU time (CUDA events) of the training steps {gpu:.2f} s and of the "
          f"evaluations {gpu_eval:.2f} s, of loop {total:.2f} s")


if __name__ == "__main__":
    main()
