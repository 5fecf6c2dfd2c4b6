"""Blind batch 14: k-means over an embedding set kept in host memory and streamed in chunks.

A product team clusters 8,388,608 image embeddings (64-dim fp32, 2 GiB) into 256 clusters to build
an index. The clustering code was written for a small GPU: the embeddings stay in a NumPy array in
host memory, and every Lloyd iteration streams them to the GPU in chunks of 524,288 rows (128 MiB)
with `torch.from_numpy(X[s:e]).to("cuda")`: squared distances to the centroids (one matrix
product), argmin, `index_add_` of the rows into per-cluster sums, `bincount`, and the inertia. At the
end of each iteration the centroids are updated on the GPU and the shift is read on the host
(`.item()`) to test convergence (tol 1e-4, which these data do not reach within 20 iterations).

The embeddings are synthetic (a mixture of 200 anisotropic Gaussian blobs), generated on the GPU
and stored into the NumPy array once, as if loaded from disk. Forgy initialisation from a 65,536-row
sample. NVTX: one `lloyd_iteration` range per iteration (torch.cuda.nvtx).

Ground truth printed at the end: seconds inside the chunks' `.to("cuda")` calls against the loop's
seconds, the gigabytes moved, and the number of iterations.
"""
import time

import numpy as np
import torch

torch.manual_seed(0)
dev = torch.device("cuda")

N, D, K = 8_388_608, 64, 256
CHUNK = 524_288
MAX_ITER, TOL = 20, 1e-4
TRUE_CLUSTERS = 200


def load_embeddings():
    """Stands in for reading the embedding shards from disk into one host array."""
    g = torch.Generator(device=dev).manual_seed(1)
    centres = torch.randn(TRUE_CLUSTERS, D, device=dev, generator=g) * 3.0
    scales = torch.rand(TRUE_CLUSTERS, D, device=dev, generator=g) * 1.5 + 0.25
    X = np.empty((N, D), dtype=np.float32)
    for s in range(0, N, CHUNK):
        lab = torch.randint(0, TRUE_CLUSTERS, (CHUNK,), device=dev, generator=g)
        x = centres[lab] + torch.randn(CHUNK, D, device=dev, generator=g) * scales[lab]
        X[s:s + CHUNK] = x.cpu().numpy()
    return X


t0 = time.perf_counter()
X = load_embeddings()
print(f"embeddings: {X.shape} {X.dtype}, {X.nbytes / 2**30:.1f} GiB in host memory ({time.perf_counter() - t0:.1f} s)",
      flush=True)

rng = np.random.default_rng(0)
sample = torch.from_numpy(X[np.sort(rng.choice(N, 65_536, replace=False))]).to(dev)
C = sample[torch.randperm(sample.shape[0], device=dev)[:K]].clone()
del sample

copy_s = 0.0
bytes_moved = 0
torch.cuda.synchronize()
t_loop = time.perf_counter()
iters = 0
for it in range(MAX_ITER):
    torch.cuda.nvtx.range_push("lloyd_iteration")
    sums = torch.zeros(K, D, device=dev)
    counts = torch.zeros(K, device=dev)
    inertia = torch.zeros((), device=dev, dtype=torch.float64)
    c_sq = (C * C).sum(1)
    for s in range(0, N, CHUNK):
        c0 = time.perf_counter()
        xb = torch.from_numpy(X[s:s + CHUNK]).to(dev)
        copy_s += time.perf_counter() - c0
        bytes_moved += xb.numel() * xb.element_size()
        d = (xb * xb).sum(1, keepdim=True) - 2.0 * (xb @ C.T) + c_sq
        dmin, lab = d.min(1)
        inertia += dmin.clamp(min=0).sum(dtype=torch.float64)
        sums.index_add_(0, lab, xb)
        counts += torch.bincount(lab, minlength=K)
    new_C = torch.where((counts > 0)[:, None], sums / counts.clamp(min=1)[:, None], C)
    shift = ((new_C - C).norm() / C.norm()).item()
    C = new_C
    iters += 1
    torch.cuda.nvtx.range_pop()
    print(f"iteration {it}: inertia {inertia.item() / N:.4f}, relative shift {shift:.2e}", flush=True)
    if shift < TOL:
        break
torch.cuda.synchronize()
loop = time.perf_counter() - t_loop
print(f"ground truth: chunk uploads {copy_s:.3f} s of {loop:.3f} s loop ({100 * copy_s / loop:.1f}%); "
      f"{bytes_moved / 1e9:.1f} GB host-to-device; {iters} iterations", flush=True)
