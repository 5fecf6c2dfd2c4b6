"""Corpus (blind, batch 7): a classification service held to 8 requests a second by a token bucket.

Program: a text classifier (token embedding, 12 pre-norm TransformerEncoderLayer of width 1024,
16 heads, feed-forward 4096, mean pooling and a 1,000-way head; bf16 weights, inference_mode)
serves requests of 16 sequences x 512 token ids. A quota towards a downstream service limits the
loop to 8 requests a second: before each request TokenBucket.acquire() (rate 8/s, burst 1) sleeps
in time.sleep until a token is free. Each request copies its ids in, runs the model (~6-12 ms of
GEMMs and attention) and reads the top-5 classes back with .cpu().tolist(), which waits for that
request's kernels. One warm-up request before the loop. No NVTX. 60 requests, one a step; one line
printed at the end (the time slept in the throttle, measured in-program).
"""
import time

import torch
from torch import nn

RATE, REQUESTS, BATCH, LENGTH, VOCAB, WIDTH = 8.0, 60, 16, 512, 32000, 1024


class TokenBucket:
    def __init__(self, rate, burst):
        self.rate, self.capacity, self.tokens = rate, burst, float(burst)
        self.last, self.slept = time.monotonic(), 0.0

    def acquire(self):
        while True:
            now = time.monotonic()
            self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.rate)
            self.last = now
            if self.tokens >= 1:
                self.tokens -= 1
                return
            wait = (1 - self.tokens) / self.rate
            time.sleep(wait)
            self.slept += time.monotonic() - now


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        layer = nn.TransformerEncoderLayer(WIDTH, 16, 4 * WIDTH, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
        self.head = nn.Linear(WIDTH, 1000)

    def forward(self, ids):
        return self.head(self.encoder(self.embed(ids)).mean(1))


torch.manual_seed(0)
model = Classifier().cuda().to(torch.bfloat16).eval()
generator = torch.Generator().manual_seed(0)
requests = [torch.randint(0, VOCAB, (BATCH, LENGTH), generator=generator) for _ in range(8)]


def serve(ids):
    logits = model(ids.cuda(non_blocking=True)).float()
    top = logits.softmax(-1).topk(5)
    return top.indices.cpu().tolist(), top.values.cpu().tolist()


with torch.inference_mode():
    serve(requests[0])  # warm-up before the service opens
    bucket, answers, start = TokenBucket(RATE, 1), [], time.perf_counter()
    for i in range(REQUESTS):
        bucket.acquire()
        classes, scores = serve(requests[i % len(requests)])
        answers.append((classes[0][0], scores[0][0]))
    total = time.perf_counter() - start
print(f"served {len(answers)} requests; slept {bucket.slept:.2f} s of {total:.2f} s")
