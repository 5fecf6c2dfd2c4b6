"""Corpus (blind, batch 9): an embedding service replaying requests through per-bucket CUDA graphs.

Program: a text-embedding server (a BERT-style encoder written by hand: 12 pre-LN layers,
d_model 1024, 16 heads, SDPA attention, GELU MLP, mean pooling, a 768-wide normalised
projection; bf16 weights, no_grad) answers a replayed log of 80 requests of 1 to 48 sequences of
256 tokens each (sizes drawn uniformly from a fixed seed, token ids prepared as NumPy arrays
before the loop, as a load-test replayer does). At start-up the server warms the model up on a
side stream and captures one CUDA graph per bucket size (8, 16, 32, 48 sequences), each with its
own static input; every request is copied into the smallest bucket that holds it (the rest of
the bucket filled with padding ids), the bucket's graph is replayed, and the pooled embeddings
of the real rows are copied back with .cpu() to answer. Launch cost is gone (one graph launch a
request); the graphs hold ~2-10 ms of GEMMs and flash attention each (~25% of it padding rows on
average), and the CPU needs ~0.1-0.3 ms between the end of one replay and the start of the next.
No NVTX. 80 requests (steps); one line printed at the end (the GPU time of the graph replays by
CUDA events, against the loop's wall time).

Expected, written before it was recorded (2026-11-26): gpu-bound, 80-95% of the steady-state
step time, the finding naming the kernels inside the graph replays (the encoder's GEMMs, then
flash attention), launched by cudaGraphLaunch from the replay line; 80 steps (within 2), one per
request, of uneven length (four bucket sizes). Misses: sync-stall (every request ends with a
.cpu() that waits for its graph, but the GPU is busy until then and idles only for the ~0.1-0.3
ms the CPU needs to start the next request), launch-bound (graphs: ~one launch a request),
copies (a ~100 KB upload and a <150 KB read-back per request), cpu-work. Advice that helps:
finer buckets or dynamic batching to cut the padded rows, a smaller or quantised encoder; not
CUDA graphs (already there) and not fewer syncs.
"""
import random
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

VOCAB, D_MODEL, LAYERS, HEADS, SEQ, OUT_DIM, PAD_ID = 30522, 1024, 12, 16, 256, 768, 0
BUCKETS = (8, 16, 32, 48)
REQUESTS, MAX_BATCH = 80, 48


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(D_MODEL)
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.out = nn.Linear(D_MODEL, D_MODEL)
        self.norm2 = nn.LayerNorm(D_MODEL)
        self.ff1 = nn.Linear(D_MODEL, 4 * D_MODEL)
        self.ff2 = nn.Linear(4 * D_MODEL, D_MODEL)

    def forward(self, x):
        b, t, _ = x.shape
        qkv = self.qkv(self.norm1(x)).view(b, t, 3, HEADS, D_MODEL // HEADS)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, D_MODEL))
        return x + self.ff2(F.gelu(self.ff1(self.norm2(x))))


class TextEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL, padding_idx=PAD_ID)
        self.pos = nn.Embedding(SEQ, D_MODEL)
        self.layers = nn.ModuleList(EncoderLayer() for _ in range(LAYERS))
        self.norm = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, OUT_DIM)

    def forward(self, ids):
        x = self.tok(ids) + self.pos.weight[: ids.shape[1]]
        for layer in self.layers:
            x = layer(x)
        pooled = self.norm(x).mean(dim=1)
        return F.normalize(self.head(pooled).float(), dim=-1)


def bucket_for(n):
    for b in BUCKETS:
        if n <= b:
            return b
    raise ValueError(f"request of {n} sequences is larger than the largest bucket")


def main():
    torch.manual_seed(0)
    model = TextEncoder().cuda().to(torch.bfloat16).eval()

    # The replayed traffic: request sizes and token ids, prepared before serving.
    rnd = random.Random(7)
    rng = np.random.default_rng(7)
    requests = []
    for _ in range(REQUESTS):
        n = rnd.randint(1, MAX_BATCH)
        requests.append(rng.integers(1000, VOCAB, (n, SEQ), dtype=np.int64))

    # Start-up: warm up on a side stream, then capture one graph per bucket.
    static_ids = {b: torch.full((b, SEQ), PAD_ID, dtype=torch.long, device="cuda") for b in BUCKETS}
    static_out, graphs = {}, {}
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for b in BUCKETS:
                for _ in range(3):
                    model(static_ids[b])
        torch.cuda.current_stream().wait_stream(side)
        for b in BUCKETS:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                static_out[b] = model(static_ids[b])
            graphs[b] = g
    torch.cuda.synchronize()
    print(f"captured {len(graphs)} graphs for buckets {BUCKETS}")

    spans, responses, padded_rows = [], [], 0
    start = time.perf_counter()
    for i, req in enumerate(requests):
        n = req.shape[0]
        b = bucket_for(n)
        ids = static_ids[b]
        ids[:n].copy_(torch.from_numpy(req))
        if n < b:
            ids[n:].fill_(PAD_ID)
        padded_rows += b - n
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        graphs[b].replay()
        end.record()
        spans.append((begin, end))
        emb = static_out[b][:n].cpu()
        responses.append(emb.numpy())
        if i % 20 == 0:
            norm = float(np.linalg.norm(responses[-1][0]))
            print(f"request {i}: {n} sequences (bucket {b}), first norm {norm:.3f}")
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    gpu = sum(b.elapsed_time(e) for b, e in spans) / 1e3
    served = sum(r.shape[0] for r in requests)
    print(f"requests {REQUESTS} ({served} sequences, {padded_rows} padded rows); GPU time of the "
          f"graph replays (CUDA events) {gpu:.2f} s of loop {total:.2f} s")


if __name__ == "__main__":
    main()
