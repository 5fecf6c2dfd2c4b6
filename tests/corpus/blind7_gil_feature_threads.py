"""Corpus (blind, batch 7): three Python threads hash text features for the GPU thread (one GIL).

Program: a text classifier's features are made on the fly: three threading.Thread producers
each take every third batch, generate 512 short records with Python's random module, hash their
character 2-, 3- and 4-grams into 512 signed buckets with zlib.crc32 in a pure-Python loop,
normalise them, build the batch with torch.tensor from the lists of lists and hand it over
through a queue.Queue(maxsize=6). The main thread takes each batch (ready.get(), blocking),
copies it to the GPU and trains an MLP (512 -> 2048 -> 2048 -> 20, bf16 autocast, fused AdamW;
~1 ms of GPU work). The three producers were meant to feed the GPU three times as fast as one,
but they hold the GIL while they hash, so together they make a batch only as fast as one core
can (~60-120 ms), and the main thread must win the GIL back after each wake-up. No NVTX. 60
steps, one a batch; one line printed at the end (the time waiting in ready.get(), in-program).
"""
import queue
import random
import threading
import time
import zlib

import torch
from torch import nn

BATCHES, BATCH, DIM, CLASSES, THREADS = 60, 512, 512, 20, 3
LETTERS = "abcdefghijklmnopqrstuvwxyz     "
ready = queue.Queue(maxsize=6)


def features(text):
    v = [0.0] * DIM
    for n in (2, 3, 4):
        for i in range(len(text) - n + 1):
            h = zlib.crc32(text[i:i + n].encode())
            v[h % DIM] += 1.0 if h & 1 else -1.0
    norm = sum(x * x for x in v) ** 0.5 or 1.0
    return [x / norm for x in v]


def produce(worker):
    for b in range(worker, BATCHES, THREADS):
        rng = random.Random(b)
        texts = ["".join(rng.choice(LETTERS) for _ in range(rng.randint(80, 160)))
                 for _ in range(BATCH)]
        rows = [features(text) for text in texts]
        labels = [sum(text.count(c) for c in "aeiou") % CLASSES for text in texts]
        ready.put((torch.tensor(rows), torch.tensor(labels)))
    ready.put(None)


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(DIM, 2048), nn.GELU(), nn.Linear(2048, 2048), nn.GELU(),
                      nn.Linear(2048, CLASSES)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
producers = [threading.Thread(target=produce, args=(w,), daemon=True) for w in range(THREADS)]
for p in producers:
    p.start()
done = steps = 0
waited, start = 0.0, time.perf_counter()
while done < THREADS:
    t = time.perf_counter()
    item = ready.get()
    waited += time.perf_counter() - t
    if item is None:
        done += 1
        continue
    x, y = item[0].cuda(non_blocking=True), item[1].cuda(non_blocking=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(model(x).float(), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    steps += 1
total = time.perf_counter() - start
print(f"steps {steps} loss {loss.item():.3f}; ready.get() {waited:.2f} s of {total:.2f} s")
