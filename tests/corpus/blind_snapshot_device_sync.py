"""Corpus (blind, batch 6): a side-stream weight snapshot made serial by a device-wide synchronize.

Program: an MLP (8 Linear(4096, 4096) + GELU, bf16 autocast, fused AdamW) on 8,192 tokens keeps
an in-memory checkpoint, in the style of per-iteration snapshotting for fault tolerance: after
each optimizer step it copies the new weights (537 MB of fp32) into preallocated pinned host
buffers with non_blocking=True on its own CUDA stream, so that the copy overlaps the next step's
forward and backward (the next optimizer step waits for it with wait_stream). But the loop also
times each step the way many training scripts do, torch.cuda.synchronize() before
time.perf_counter(), and that waits for every stream, the snapshot's too: each step now ends only
when its copy has finished, and the next step's compute cannot start under it. The loss and the
mean step time are printed every 10 steps. No NVTX. 40 steps.
Expected, written before it was recorded (2026-11-26), not run beforehand, so estimated from
first principles: sync-stall first, at least 35% of the steady step, naming the
torch.cuda.synchronize() line (the cure: time the step with CUDA events or synchronize the
compute stream only; then the copy hides under the next forward and backward, ~10 ms of GEMMs).
A step computes ~12 ms (6.6 TFLOP of bf16 GEMMs, ~10 ms; the fused AdamW over 134M fp32
parameters, ~1.3 ms), then the SMs idle for the ~11 ms of the 537 MB device-to-host copy (~50
GB/s over PCIe) that the synchronize waits for, so the wait past the compute is ~45%. A copies
finding is the symptom and should come second; as the first finding it is acceptable only if it
says the copy is on a side stream from pinned memory and the device-wide synchronize is what puts
it in the step's path; advice to pin the memory or to overlap the copy on another stream is a
miss (both are done). gpu-bound is a miss. 40 steps (within 2).
"""
import time

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(*[m for _ in range(8) for m in (nn.Linear(4096, 4096), nn.GELU())]).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
params = list(model.parameters())
snapshot = [torch.empty(p.shape, dtype=p.dtype, pin_memory=True) for p in params]
copy_stream = torch.cuda.Stream()
x = torch.randn(8192, 4096, device="cuda")
step_ms = []
for step in range(40):
    start = time.perf_counter()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.cuda.current_stream().wait_stream(copy_stream)  # the last snapshot has read the weights
    opt.step()
    copy_stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(copy_stream):
        for p, host in zip(params, snapshot):
            host.copy_(p.detach(), non_blocking=True)
    torch.cuda.synchronize()  # so that the step time is the GPU's, not the launch queue's
    step_ms.append(1000 * (time.perf_counter() - start))
    if step % 10 == 9:
        print("step", step + 1, "loss %.5f" % loss.item(),
              "%.1f ms a step" % (sum(step_ms[-10:]) / 10))
print("snapshot of", len(snapshot), "tensors, first value", float(snapshot[0][0, 0]))
