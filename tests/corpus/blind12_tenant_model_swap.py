"""Corpus (blind, batch 12): a multi-tenant classifier service swapping models between host and GPU.

Program: a text-classification service for 6 tenants, each with its own fine-tuned BERT-base-sized
encoder (token and position embeddings, 12 nn.TransformerEncoderLayer of d_model 768, 12 heads, FFN
3072, a 16-class head; ~109 M parameters, fp16, ~218 MB; random weights standing in for the
checkpoints: one model built, the others deep copies with their heads re-drawn). The service was
written for a 16 GB card, so it keeps one model on the GPU at a time: when a request's tenant
differs from the resident one, it moves the resident model back with `model.to("cpu")` and the
requested one up with `model.to("cuda")`. Module.to copies parameter by parameter (150 tensors of 32
B-47 MB each way): host-to-device from pageable memory, device-to-host into newly allocated pageable
memory, each a blocking copy. Requests come from a seeded generator in arrival order (tenant 0
carries ~40% of the traffic, the others ~12% each, so ~75% of requests change the model), each a
batch of 8-32 texts of 64-256 tokens (padded to a multiple of 32); the service answers in order,
FIFO, without regrouping. Inference is eval + inference_mode (the encoder's fast path), softmax
probabilities copied back with .cpu() per request, and `torch.cuda.synchronize()` before each
request's latency is recorded (the service's p50/p99 metrics). The swap moves ~436 MB (~218 MB each
way) at ~5-20 GB/s pageable (not measured), ~25-90 ms, against ~2-6 ms of forward on the GPU. NVTX:
one range per request named after its tenant and number ("tenant3/req0057"). 6 warm-up requests
before the ranges (one per tenant: first loads, cuBLAS), then 150. One line printed at the end:
seconds inside the model moves (both directions), inside forward + .cpu(), inside the latency
synchronize, and the loop's total, measured in-program.

Expected, written before it was recorded (2026-11-27): copies, 75-95% of the steady request time,
naming the host-to-device and device-to-host parameter copies of Module.to (`_apply` -> Tensor.to ->
copy_) in `ensure_resident`, a few hundred medium copies per swap rather than one large one, the
GPU's compute idle during them; 150 steps (the tenant/request ranges; 156 counting the 6 warm-up
requests before them). Misses: sync-stall (each device-to-host copy blocks, and the latency
synchronize waits a few ms for the forward; both are the copies' and the model's own time),
allocator (the caching allocator reuses the resident model's freed blocks: same shapes each swap),
cpu-work (the page faults of the fresh host buffers are inside the copies), gpu-bound, launch-bound,
input-bound. Advice that helps: keep every model resident (109 M fp16 parameters x 6 is ~1.3 GB,
which fits), or at least never copy back (the host copy is already there: drop the GPU copy instead
of moving it), keep the host weights in pinned memory and upload asynchronously on a side stream,
group queued requests by tenant to swap less. Not a faster model, not a larger batch.
"""
import copy
import time

import numpy as np
import torch
from torch import nn

TENANTS, VOCAB, MAX_LEN, CLASSES = 6, 30522, 256, 16
D_MODEL, HEADS, FFN, LAYERS = 768, 12, 3072, 12
REQUESTS = 150
TENANT_WEIGHTS = np.array([0.4] + [0.12] * (TENANTS - 1))


class TextClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, D_MODEL, padding_idx=0)
        self.positions = nn.Embedding(MAX_LEN, D_MODEL)
        self.norm = nn.LayerNorm(D_MODEL)
        layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, FFN, dropout=0.1, activation="gelu",
                                           batch_first=True, norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(D_MODEL, CLASSES)

    def forward(self, ids, padding_mask):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.norm(self.tokens(ids) + self.positions(pos))
        x = self.encoder(x, src_key_padding_mask=padding_mask)
        keep = (~padding_mask).unsqueeze(-1).to(x.dtype)
        pooled = (x * keep).sum(1) / keep.sum(1)
        return self.head(pooled)


def make_requests(rng, n):
    requests = []
    for _ in range(n):
        tenant = int(rng.choice(TENANTS, p=TENANT_WEIGHTS))
        batch = int(rng.integers(8, 33))
        lengths = rng.integers(64, MAX_LEN + 1, size=batch)
        width = int(-(-lengths.max() // 32) * 32)
        ids = np.zeros((batch, width), dtype=np.int64)
        for i, length in enumerate(lengths):
            ids[i, :length] = rng.integers(1000, VOCAB, size=length)
        requests.append((tenant, ids, lengths))
    return requests


class Service:
    def __init__(self, models, device):
        self.models, self.device = models, device
        self.resident = None
        self.swaps = 0

    def ensure_resident(self, tenant):
        """Only one model fits on the card (as written for 16 GB): move the old one out first."""
        if self.resident == tenant:
            return
        if self.resident is not None:
            self.models[self.resident].to("cpu")
        self.models[tenant].to(self.device)
        self.resident = tenant
        self.swaps += 1

    def classify(self, tenant, ids_np, lengths):
        model = self.models[tenant]
        ids = torch.from_numpy(ids_np).to(self.device)
        positions = torch.arange(ids.shape[1], device=self.device)
        padding_mask = positions[None, :] >= torch.from_numpy(lengths).to(self.device)[:, None]
        with torch.inference_mode():
            probs = model(ids, padding_mask).float().softmax(-1)
        return probs.cpu().numpy()


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = torch.device("cuda")
    t = time.perf_counter()
    base = TextClassifier().half().eval()
    models = [base]
    for k in range(1, TENANTS):
        m = copy.deepcopy(base)
        nn.init.normal_(m.head.weight, std=0.02)
        nn.init.zeros_(m.head.bias)
        models.append(m)
    n_params = sum(p.numel() for p in base.parameters())
    print(f"{TENANTS} tenant models of {n_params / 1e6:.1f} M parameters "
          f"({n_params * 2 / 1e6:.0f} MB fp16 each) built in {time.perf_counter() - t:.1f} s")

    service = Service(models, device)
    requests = make_requests(rng, TENANTS + REQUESTS)
    # Warm-up: every tenant once (first loads, cuBLAS handles, the fast path's kernels).
    for tenant, (_, ids, lengths) in enumerate(requests[:TENANTS]):
        service.ensure_resident(tenant)
        service.classify(tenant, ids, lengths)
    torch.cuda.synchronize()

    in_move = in_infer = in_sync = 0.0
    latencies = []
    swaps0 = service.swaps
    predicted = np.zeros(CLASSES, dtype=np.int64)
    start = time.perf_counter()
    for n, (tenant, ids, lengths) in enumerate(requests[TENANTS:]):
        torch.cuda.nvtx.range_push(f"tenant{tenant}/req{n:04d}")
        t0 = time.perf_counter()
        service.ensure_resident(tenant)
        t1 = time.perf_counter()
        probs = service.classify(tenant, ids, lengths)
        t2 = time.perf_counter()
        torch.cuda.synchronize()  # the latency metric must include all GPU work
        t3 = time.perf_counter()
        torch.cuda.nvtx.range_pop()
        in_move += t1 - t0
        in_infer += t2 - t1
        in_sync += t3 - t2
        latencies.append(t3 - t0)
        np.add.at(predicted, probs.argmax(1), 1)
        if (n + 1) % 25 == 0:
            lat = np.array(latencies[-25:]) * 1e3
            print(f"request {n + 1}/{REQUESTS}: p50 {np.percentile(lat, 50):.1f} ms, "
                  f"p99 {np.percentile(lat, 99):.1f} ms, swaps {service.swaps - swaps0}")
    total = time.perf_counter() - start
    print(f"requests {REQUESTS}, swaps {service.swaps - swaps0}: inside the model moves "
          f"(.to cpu/cuda) {in_move:.2f} s ({100 * in_move / total:.0f}%), forward + .cpu() "
          f"{in_infer:.2f} s, latency synchronize {in_sync:.2f} s, of loop {total:.2f} s; "
          f"predicted class histogram {predicted.tolist()}")


if __name__ == "__main__":
    main()
