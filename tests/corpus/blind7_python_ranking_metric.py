"""Corpus (blind, batch 7): a two-tower ranker whose training metrics are computed in pure Python.

Program: a two-tower retrieval model (query and item MLPs, 256 -> 2048 -> 2048 -> 256, bf16
autocast, fused AdamW) trains on 512 queries x 192 candidate items a step (98,304 scored pairs,
~8-12 ms of GPU work) with click labels made on the GPU from a fixed teacher. After each step the
scores and labels come back with .cpu().tolist(), and ranking metrics are computed in plain
Python: a sort of the 98,304 pairs with a key function, ROC-AUC by a loop over the sorted pairs,
and recall@10 per query from a dict of lists (~40-80 ms of interpreter work holding one core,
GPU idle meanwhile). No NVTX. 60 steps; one line printed at the end (the time in the metric,
measured in-program).
"""
import time

import torch
from torch import nn

STEPS, QUERIES, CANDIDATES, FEATURES = 60, 512, 192, 256


def tower():
    return nn.Sequential(nn.Linear(FEATURES, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                         nn.Linear(2048, 256))


def ranking_metrics(scores, labels, queries, k=10):
    order = sorted(range(len(scores)), key=lambda i: scores[i], reverse=True)
    positives = negatives = area = 0
    for i in order:
        if labels[i]:
            positives += 1
        else:
            negatives += 1
            area += positives
    per_query = {}
    for i in order:
        per_query.setdefault(queries[i], []).append(labels[i])
    recall = sum(any(ranked[:k]) for ranked in per_query.values()) / len(per_query)
    return area / max(positives * negatives, 1), recall


torch.manual_seed(0)
query_tower, item_tower = tower().cuda(), tower().cuda()
params = [*query_tower.parameters(), *item_tower.parameters()]
opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
teacher = torch.randn(FEATURES, FEATURES, device="cuda") / FEATURES ** 0.5
generator = torch.Generator(device="cuda").manual_seed(0)
query_ids = [q for q in range(QUERIES) for _ in range(CANDIDATES)]
history, in_metric, start = [], 0.0, time.perf_counter()
for step in range(STEPS):
    q = torch.randn(QUERIES, FEATURES, device="cuda", generator=generator)
    items = torch.randn(QUERIES, CANDIDATES, FEATURES, device="cuda", generator=generator)
    affinity = torch.einsum("qf,fg,qcg->qc", q, teacher, items)
    clicks = (affinity > affinity.quantile(0.9, dim=1, keepdim=True)).float()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        scores = torch.einsum("qd,qcd->qc", query_tower(q), item_tower(items)).float()
        loss = nn.functional.binary_cross_entropy_with_logits(scores, clicks)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    host_scores, host_labels = scores.detach().flatten().cpu(), clicks.flatten().bool().cpu()
    t = time.perf_counter()
    history.append(ranking_metrics(host_scores.tolist(), host_labels.tolist(), query_ids))
    in_metric += time.perf_counter() - t
total = time.perf_counter() - start
auc, recall = history[-1]
print(f"steps {STEPS} auc {auc:.3f} recall@10 {recall:.3f}; "
      f"metric {in_metric:.2f} s of {total:.2f} s")
