"""Corpus (blind, batch 5): an inference server: four Python threads, each on its own CUDA stream.

Program: one model shared read-only (an embedding of 18,278 x 4096 and 12 Linear(4096, 4096) +
GELU layers, bf16); four threading.Thread workers each serve 40 requests on their own
torch.cuda.Stream under inference_mode: tokenise the request's 2,048 words with a pure-Python
greedy longest-match subword tokeniser (~5 ms of Python holding the GIL), copy the first 4,096
ids in from pinned memory, run the model (~2.5 ms of GEMMs) and read the answer back with .cpu(),
which waits for that thread's stream. No NVTX. 160 requests in all.
Expected, written before it was recorded (2026-11-26): the Python tokeniser leads, at least 40%
of the steady state, named by its loop in `tokenise`: input-bound (the GPU waits while the CPU
prepares each request's input, then copies it in, as blind_dict_collate.py's batches are judged)
or cpu-work; either is right. The four threads were meant to overlap one request's Python with
another's GPU work, but the GIL runs one tokeniser at a time, so the CPU needs ~5 ms a request
against the GPU's ~2.5 ms, whatever the number of threads: runs under torch.profiler (not
Warpline) saw kernels busy 31% of the loop with four threads and 35% with one. Not gpu-bound;
not sync (each .cpu() waits only for its own request's GEMMs); launch-bound at most second.
Steps: the requests, 160 in all or 40 of one thread; either is defensible.
"""
import itertools
import random
import string
import threading

import torch
from torch import nn

random.seed(0)
torch.manual_seed(0)
letters = string.ascii_lowercase
pieces = [''.join(p) for n in (1, 2, 3) for p in itertools.product(letters, repeat=n)]
vocabulary = {piece: i for i, piece in enumerate(pieces)}
model = nn.Sequential(nn.Embedding(len(vocabulary), 4096),
                      *[m for _ in range(12) for m in (nn.Linear(4096, 4096), nn.GELU())])
model = model.cuda().to(torch.bfloat16).eval()
words = ["".join(random.choice(letters) for _ in range(random.randint(2, 9)))
         for _ in range(5000)]
requests = [[" ".join(random.choices(words, k=2048)) for _ in range(40)] for _ in range(4)]
answers = [[] for _ in range(4)]


def tokenise(text):
    ids = []
    for word in text.lower().split():
        start = 0
        while start < len(word):
            end = len(word)
            while end > start + 1 and word[start:end] not in vocabulary:
                end -= 1
            ids.append(vocabulary.get(word[start:end], 0))
            start = end
    return ids


def serve(worker):
    stream = torch.cuda.Stream()
    with torch.inference_mode(), torch.cuda.stream(stream):
        for text in requests[worker]:
            ids = tokenise(text)[:4096]
            tokens = torch.tensor(ids).pin_memory().cuda(non_blocking=True)
            scores = model(tokens).float().mean(0)[:8]
            answers[worker].append(scores.cpu())


threads = [threading.Thread(target=serve, args=(w,)) for w in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("served", sum(len(a) for a in answers), "requests; last", float(answers[0][-1][0]))
