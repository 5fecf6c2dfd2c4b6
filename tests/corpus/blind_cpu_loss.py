"""Corpus (blind, batch 3): a training loop whose loss and metrics are computed on the CPU.

Program: an MLP (4 Linear(2048, 2048) layers, batch 4096, bf16) runs forward on the GPU; its
output is moved to the CPU with .cpu() and a custom loss plus metrics (a top-5 accuracy with
torch.topk, a calibration histogram) are computed there with PyTorch CPU ops; the loss's
gradient is sent back with .cuda() and backward runs on the GPU. No NVTX. 30 steps.
Expected, written before it was recorded (2026-11-26): cpu-work (the GPU idles while the CPU
computes the loss and metrics, tens of milliseconds a step), at least 50% of the steady step;
30 steps (within 2).
"""
import torch
from torch import nn

torch.set_num_threads(2)
torch.manual_seed(0)
model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(2048, 2048), nn.GELU())]).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
x = torch.randn(4096, 2048, device="cuda")
labels = torch.randint(0, 2048, (4096,))
for step in range(30):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(x)
    logits = out.detach().float().cpu().requires_grad_()
    loss = nn.functional.cross_entropy(logits, labels)
    loss.backward()
    with torch.no_grad():
        top5 = (logits.topk(5, dim=1).indices == labels[:, None]).any(1).float().mean()
        confidence = logits.softmax(1).max(1).values
        histogram = torch.histc(confidence, bins=20, min=0, max=1)
    opt.zero_grad(set_to_none=True)
    out.backward(logits.grad.cuda().to(out.dtype))
    opt.step()
print("loss", float(loss), "top5", float(top5), "bins", int(histogram.sum()))
