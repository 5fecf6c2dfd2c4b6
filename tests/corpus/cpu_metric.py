"""Corpus: a metric computed on the CPU every step: .cpu() waits for the step, then NumPy works.

Planted: a per-step sync that keeps CPU work from overlapping the GPU. Each step queues ~12 ms
of GPU work (8 bf16 layers of width 4096 on 8,192 tokens, forward and backward), then copies
the predictions to the host with .cpu() to compute accuracy and a confusion matrix in Python and
NumPy (~5 ms). The copy waits for the whole step; then the GPU, its queue drained, idles while
the CPU computes the metric. Advice that helps: compute the metric on the GPU (or read it every N
steps), so the CPU can queue the next step meanwhile. No NVTX.
"""
import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
d, classes = 4096, 16
model = nn.Sequential(*[nn.Sequential(nn.Linear(d, d), nn.GELU()) for _ in range(8)],
                      nn.Linear(d, classes)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
x = torch.randn(8192, d, device="cuda")
y = torch.randint(0, classes, (8192,), device="cuda")
labels = y.cpu().numpy()
for step in range(30):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.float(), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    preds = logits.argmax(1).cpu().numpy()
    confusion = np.zeros((classes, classes), dtype=np.int64)
    for p, t in zip(preds.tolist(), labels.tolist()):
        confusion[t][p] += 1
    accuracy = float(np.trace(confusion)) / len(preds)
    per_class = [confusion[c, c] / max(1, confusion[c].sum()) for c in range(classes)]
print("accuracy", accuracy, "worst class", min(per_class))
