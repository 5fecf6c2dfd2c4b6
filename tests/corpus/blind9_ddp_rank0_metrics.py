"""Corpus (blind, batch 9): DDP training where rank 0 alone computes running metrics in Python.

Program: torchrun --nproc_per_node=2 (NCCL, one process per GPU). A 100-class text classifier
(token embeddings of a 32k vocabulary, 4 pre-LN nn.TransformerEncoderLayer of d_model 512, mean
pooling, a linear head; bf16 autocast, AdamW) trained under DistributedDataParallel on 64
sequences of 128 tokens per rank per step, made on the GPU from a per-rank seed. Every rank
reads its loss with .item() every step for a running average. Rank 0 alone, as the "main
process" that logs, also reads its logits and labels back every step (.cpu().tolist()) and
updates running metrics in plain Python: a softmax per sample, a 100 x 100 confusion matrix,
and a macro one-vs-rest AUROC over a sliding window of the last 12 steps (768 samples: a
sort per class) with the macro F1 from the confusion matrix. Timed here: ~20-25 ms a step once
the window is full (from step 12; less before) on a slower 2-core machine, ~12-20 ms expected
on the device, against ~6-10 ms for the step itself. Rank 0 therefore reaches each step's
gradient all-reduce late, and rank 1, which has no extra work, waits for it inside the
all-reduce (and, on the CPU, in its next loss.item()). No NVTX. 50 steps; each rank prints one
line at the end (rank 0: seconds in the metrics; rank 1: seconds in loss.item(), which holds its
wait plus the tail of its own step's GPU work, a few ms a step; both against the loop's total).

Expected, written before it was recorded (2026-11-26): late-rank, naming rank 0 as the late
rank (its Python metrics after each step, RunningMetrics.update and report, while its GPU
idles) and rank 1 as the one that waits, in the NCCL all-reduce of the backward; rank 1's wait
50-75% of its steady-state step time (from step ~12 on); 50 steps (within 2) per rank. Rank
0's own reading: cpu-work on the metrics. The trap: the straggler is rank 0, the rank that
usually is the reference, and the victim's wait sits behind a loss.item() that looks like an
ordinary sync-stall. Misses: sync-stall on rank 1 (its .item() waits for the all-reduce, which
waits for rank 0), communication (the all-reduce is ~116 MB and would take ~0.5 ms if both
ranks arrived together), late-rank naming rank 1, gpu-bound, input-bound. Advice that helps:
move the metrics off the training loop's critical path (compute them on the GPU with tensor
ops, every N steps, or in a separate process/thread fed by a queue), or all-gather the
predictions and compute the metrics less often; not faster communication.
"""
import collections
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

VOCAB, D_MODEL, LAYERS, HEADS, SEQ, CLASSES = 32000, 512, 4, 8, 128, 100
BATCH, STEPS, WINDOW_STEPS, LOG_EVERY = 64, 50, 12, 10


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Parameter(torch.zeros(SEQ, D_MODEL))
        layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, 4 * D_MODEL, dropout=0.1,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(D_MODEL, CLASSES)

    def forward(self, ids):
        x = self.encoder(self.embed(ids) + self.pos)
        return self.head(x.mean(dim=1))


class RunningMetrics:
    """Macro AUROC over a sliding window and macro F1 from a running confusion matrix."""

    def __init__(self):
        self.window = collections.deque(maxlen=WINDOW_STEPS)
        self.confusion = [[0] * CLASSES for _ in range(CLASSES)]

    def update(self, logits, labels):
        probs = []
        for row, y in zip(logits, labels):
            m = max(row)
            e = [math.exp(v - m) for v in row]
            s = sum(e)
            p = [v / s for v in e]
            probs.append(p)
            self.confusion[y][max(range(CLASSES), key=p.__getitem__)] += 1
        self.window.append((probs, labels))

    def report(self):
        probs = [p for ps, _ in self.window for p in ps]
        labels = [y for _, ys in self.window for y in ys]
        n, aucs = len(labels), []
        for c in range(CLASSES):
            pos = sum(1 for y in labels if y == c)
            if pos == 0 or pos == n:
                continue
            order = sorted(range(n), key=lambda i: probs[i][c])
            rank_sum = sum(r for r, i in enumerate(order, 1) if labels[i] == c)
            aucs.append((rank_sum - pos * (pos + 1) / 2) / (pos * (n - pos)))
        f1 = []
        for c in range(CLASSES):
            tp = self.confusion[c][c]
            fp = sum(self.confusion[r][c] for r in range(CLASSES)) - tp
            fn = sum(self.confusion[c]) - tp
            f1.append(2 * tp / max(2 * tp + fp + fn, 1))
        return sum(aucs) / max(len(aucs), 1), sum(f1) / CLASSES


def main():
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Classifier().cuda(), device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    gen = torch.Generator(device="cuda").manual_seed(10 + rank)
    metrics = RunningMetrics() if rank == 0 else None

    running_loss, in_item, in_metrics = 0.0, 0.0, 0.0
    start = time.perf_counter()
    for step in range(STEPS):
        ids = torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda", generator=gen)
        labels = ids[:, 0] % CLASSES  # a learnable synthetic label
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids)
        loss = F.cross_entropy(logits.float(), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        t = time.perf_counter()
        running_loss += loss.item()
        in_item += time.perf_counter() - t
        if rank == 0:
            t = time.perf_counter()
            metrics.update(logits.detach().float().cpu().tolist(), labels.cpu().tolist())
            auroc, f1 = metrics.report()
            in_metrics += time.perf_counter() - t
            if step % LOG_EVERY == 0:
                print(f"step {step} loss {running_loss / (step + 1):.4f} macro-AUROC {auroc:.3f} "
                      f"macro-F1 {f1:.3f}")
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    if rank == 0:
        print(f"rank 0: steps {STEPS}; metrics (Python) {in_metrics:.2f} s, loss.item() "
              f"{in_item:.2f} s, of loop {total:.2f} s")
    else:
        print(f"rank {rank}: steps {STEPS}; loss.item() (waits for the all-reduce) {in_item:.2f} s "
              f"of loop {total:.2f} s")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
