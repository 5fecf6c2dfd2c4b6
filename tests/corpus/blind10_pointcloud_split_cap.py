"""Corpus (blind, batch 10): a point-cloud segmentation service whose allocator cannot reuse blocks.

Program: a LiDAR semantic-segmentation service (a PointNet-style network: per-point MLPs 4-64-64
and 64-128-256, a global max-pool, and a per-point head 320-256-128-20 on the points' local
features concatenated with the global one; random weights standing in for a checkpoint; bf16,
inference_mode). Each request is a cropped multi-sweep cloud of 100k to 1M points (uniform, a
slice of a recording held in host memory as fp16), uploaded with .cuda(), labelled, and the
labels read back as uint8 with .cpu() with a per-class histogram in NumPy. The GPU is shared
with other services, so the script caps this process at a 2.5 GB budget with
torch.cuda.set_per_process_memory_fraction; and after an out-of-memory error that reported
"reserved but unallocated" memory, someone set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 at
the top of the script, as the error message advised. With that setting the caching allocator
never splits a cached block of 128 MB or more and reuses one only for a request within 20 MB of
its size; the per-point activations are 13-640 MB and their sizes change with every cloud, so
most of each request's large tensors find no cached block, and under the 2.5 GB cap each new
segment first needs a cached one released: a cudaFree (which synchronises the device) and a
cudaMalloc, ~4-6 of each per request (a simulation of the allocator's policy over this program's
allocation sequence gave ~4.6 of each), for blocks of ~130-640 MB. The request's own GPU work is
memory-bound GEMMs and ReLUs, ~0.4-4 ms (~2 ms on average); the upload ~0.5 ms; the per-call
cost of cudaMalloc and cudaFree for blocks this size was not measured (guessed ~0.1-0.5 ms
each). No NVTX. 60 requests (steps); one line printed at the end (the seconds spent inside the
model() calls, which on this allocator hold every cudaMalloc and cudaFree of the forward and the
waits of the frees' device synchronisations, normally ~0.5 ms of launches a request; the seconds
in .cpu(); the allocator's cudaMalloc/cudaFree counts and retries from torch.cuda.memory_stats;
against the loop's total; no CUDA events: an event span measures time on the GPU timeline
including idle gaps, not busy time).

Expected, written before it was recorded (2026-11-26): allocator, 35-65% of the steady-state
step time, naming cudaMalloc and cudaFree called from the forward's Linear/ReLU/cat allocations
(PointSeg.forward) as the calls that hold the time, with the GPU idle during them, and naming
the cause as the allocator configuration (max_split_size_mb:128 under the per-process memory
cap), not as a call the program makes; 60 steps (within 2); the first ~5 requests warm the pool.
If the trace's cudaMalloc and cudaFree come to less than ~25% of the step (the calls much
cheaper on this driver than guessed), the plant failed and gpu-bound (memory-bound GEMM and ReLU
kernels over the per-point activations) is the right reading for that recording. Misses:
sync-stall (the cudaFree calls synchronise the device, but the cause is the allocator, not a
read-back; the .cpu() of the labels waits for ~1 ms of tail), gpu-bound while the allocator
calls hold more than ~30%, copies (~4 MB up, ~0.5 MB down a request), launch-bound, cpu-work.
Advice that helps: drop max_split_size_mb (or use expandable_segments:True), raise the budget,
or pad/bucket the clouds to a few sizes so blocks are reused; not empty_cache (the program never
calls it).
"""
import os

# Added after an OOM that reported "reserved but unallocated" memory, as the message advised.
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "max_split_size_mb:128"

import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

MEMORY_BUDGET_GB = 2.5  # this service's share of the GPU
REQUESTS, MIN_POINTS, MAX_POINTS, CLASSES = 60, 100_000, 1_000_000, 20


class PointSeg(nn.Module):
    def __init__(self):
        super().__init__()
        self.local = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.feat = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 256), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(320, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                                  nn.Linear(128, CLASSES))

    def forward(self, points):
        local = self.local(points)
        glob = self.feat(local).amax(dim=0)
        return self.head(torch.cat([local, glob.expand(local.shape[0], -1)], dim=1))


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    total_memory = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(MEMORY_BUDGET_GB * 2**30 / total_memory)

    # A recorded drive: x, y, z, intensity for up to MAX_POINTS points, as fp16.
    xyz = rng.normal(0, 15, size=(MAX_POINTS, 3))
    xyz[:, 2] = np.abs(xyz[:, 2]) * 0.1 - 1.7
    intensity = rng.uniform(0, 1, size=(MAX_POINTS, 1))
    recording = np.concatenate([xyz, intensity], axis=1).astype(np.float16)
    sizes = rng.integers(MIN_POINTS, MAX_POINTS + 1, size=REQUESTS)

    model = PointSeg().cuda().to(torch.bfloat16).eval()
    with torch.inference_mode():
        warm = torch.from_numpy(recording[:MIN_POINTS]).cuda().to(torch.bfloat16)
        model(warm).argmax(dim=1).cpu()
        del warm

        before = torch.cuda.memory_stats()
        in_model = in_readback = 0.0
        histogram = np.zeros(CLASSES, dtype=np.int64)
        start = time.perf_counter()
        for r, n in enumerate(sizes.tolist()):
            points = torch.from_numpy(recording[:n]).cuda().to(torch.bfloat16)
            t0 = time.perf_counter()
            logits = model(points)
            t1 = time.perf_counter()
            labels = logits.argmax(dim=1).to(torch.uint8).cpu().numpy()
            t2 = time.perf_counter()
            histogram += np.bincount(labels, minlength=CLASSES)
            in_model += t1 - t0
            in_readback += t2 - t1
            del logits, points
            if r % 20 == 0:
                print(f"request {r}: {n} points, reserved "
                      f"{torch.cuda.memory_reserved() / 2**30:.2f} GB")
        torch.cuda.synchronize()
        total = time.perf_counter() - start
        after = torch.cuda.memory_stats()

    def delta(key):
        return after.get(key, 0) - before.get(key, 0)

    print(f"requests {REQUESTS}; inside model() {in_model:.2f} s, in .cpu() {in_readback:.2f} s, "
          f"of loop {total:.2f} s; cudaMalloc {delta('num_device_alloc')}, "
          f"cudaFree {delta('num_device_free')}, alloc retries {delta('num_alloc_retries')}")


if __name__ == "__main__":
    main()
