"""Corpus (blind, batch 7): a training loop that writes an audit record and fsyncs it every step.

Program: a residual MLP (4 blocks of 1024 -> 4096 -> 1024, bf16 autocast, fused AdamW) trains on
16,384 samples a step (~10-15 ms of GPU work). For an audit trail that must survive a crash, every
step appends a JSON log line and the step's output embeddings (16,384 x 1,024 float32, 64 MiB,
copied back with .cpu()) to one file opened unbuffered in a folder made under the working
directory, then calls os.fsync on it, so the main thread blocks until the disk has the data
(~20-65 ms at 1-3 GB/s, more on a network disk) before it launches the next step; the GPU idles
meanwhile. The folder is removed at exit. No NVTX. 60 steps, ~3.8 GiB written in all; one line
printed at the end (the time in write() and in os.fsync, measured in-program).
"""
import json
import os
import shutil
import tempfile
import time

import torch
from torch import nn

STEPS, BATCH, WIDTH = 60, 16384, 1024


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.up, self.down = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, 4 * WIDTH), \
            nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x):
        return x + self.down(nn.functional.gelu(self.up(self.norm(x))))


torch.manual_seed(0)
encoder = nn.Sequential(*[Block() for _ in range(4)]).cuda()
head = nn.Linear(WIDTH, 10).cuda()
opt = torch.optim.AdamW([*encoder.parameters(), *head.parameters()], lr=1e-4, fused=True)
x = torch.randn(BATCH, WIDTH, device="cuda")
y = torch.randint(0, 10, (BATCH,), device="cuda")

folder = tempfile.mkdtemp(prefix="blind7-audit-", dir=os.getcwd())
log = open(os.path.join(folder, "audit.bin"), "wb", buffering=0)
wrote = synced = 0.0
start = time.perf_counter()
for step in range(STEPS):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        embeddings = encoder(x)
        loss = nn.functional.cross_entropy(head(embeddings).float(), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    dump = embeddings.detach().float().cpu().numpy()
    record = {"step": step, "loss": round(loss.item(), 5), "rows": dump.shape[0],
              "cols": dump.shape[1], "time": round(time.time(), 3)}
    t = time.perf_counter()
    log.write((json.dumps(record) + "\n").encode())
    log.write(memoryview(dump).cast("B"))
    t2 = time.perf_counter()
    os.fsync(log.fileno())
    t3 = time.perf_counter()
    wrote, synced = wrote + t2 - t, synced + t3 - t2
total = time.perf_counter() - start
log.close()
size = os.path.getsize(os.path.join(folder, "audit.bin"))
shutil.rmtree(folder)
print(f"steps {STEPS}, {size / 2**20:.0f} MiB; write {wrote:.2f} s, fsync {synced:.2f} s "
      f"of {total:.2f} s")
