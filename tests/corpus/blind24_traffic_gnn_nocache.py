# blind24_traffic_gnn_nocache.py: road-traffic speed forecasting with a diffusion-convolution
# recurrent graph network, run with PyTorch's CUDA caching allocator turned off.
#
# 3000 loop-detector sensors on a synthetic road network (a perturbed grid of arterials plus a
# ring motorway, about 16k directed edges weighted by travel time). The model encodes 12 past
# five-minute intervals of speed with a GRU cell whose gates are 2-hop diffusion convolutions
# (message passing with index_add_ along the edges, forward and reverse direction), then decodes
# 6 future intervals. Every time step creates dozens of intermediate tensors, and backward as
# many again.
#
# The plant: a debugging setting left in the launcher, PYTORCH_NO_CUDA_MEMORY_CACHING=1, set in
# os.environ before torch is imported (it was used once to chase an illegal memory access with
# compute-sanitizer). With it every tensor allocation is a cudaMalloc and every free a cudaFree,
# which also synchronises the device: thousands of each per step.
#
# 3 warm-up steps, then 30 timed steps. GROUND TRUTH: after the timed loop one more step counts
# its allocations and frees (PyTorch's GPU trace callbacks), and the same number of
# cudaMalloc/cudaFree pairs of the step's typical sizes is timed directly through the CUDA
# runtime (ctypes) with the GPU idle; that estimate, a lower bound because in the loop each
# cudaFree also waits for the queued kernels, over the step time.
# BLIND_SMALL=1: a smaller network and fewer steps for a CPU check.
import os

os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"

import ctypes  # noqa: E402
import glob  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

SMALL = os.environ.get("BLIND_SMALL") == "1"
SIDE = 12 if SMALL else 55  # grid side: SIDE*SIDE sensors
HIST = 4 if SMALL else 12
HORIZON = 2 if SMALL else 6
HID = 16 if SMALL else 32
BATCH = 2 if SMALL else 8
WARMUP = 1 if SMALL else 3
TIMED = 3 if SMALL else 30
DEV = "cuda"


def road_network(rng):
    n = SIDE * SIDE
    src, dst, w = [], [], []
    for r in range(SIDE):
        for c in range(SIDE):
            i = r * SIDE + c
            for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0), (1, 1), (-1, -1)):
                rr, cc = r + dr, c + dc
                if 0 <= rr < SIDE and 0 <= cc < SIDE and rng.random() < 0.85:
                    src.append(i)
                    dst.append(rr * SIDE + cc)
                    w.append(rng.uniform(0.5, 2.0))
    ring = [r * SIDE + c for r, c in
            [(0, c) for c in range(SIDE)] + [(r, SIDE - 1) for r in range(1, SIDE)]
            + [(SIDE - 1, c) for c in range(SIDE - 2, -1, -1)] + [(r, 0) for r in range(SIDE - 2, 0, -1)]]
    for a, b in zip(ring, ring[1:] + ring[:1]):
        src += [a, b]
        dst += [b, a]
        w += [0.3, 0.3]
    src, dst, w = np.array(src), np.array(dst), np.exp(-np.array(w))
    # row-normalised transition weights (random walk), forward and reverse
    out_deg = np.bincount(src, weights=w, minlength=n)
    in_deg = np.bincount(dst, weights=w, minlength=n)
    return n, src, dst, w / out_deg[src], w / in_deg[dst]


def synth_speeds(rng, n, steps):
    t = np.arange(steps)[:, None]
    base = 60 + 10 * rng.standard_normal(n)
    daily = 15 * np.sin(2 * np.pi * (t / 288.0) + rng.uniform(0, 0.5, n))
    jams = np.zeros((steps, n))
    for _ in range(steps // 20):
        c = rng.integers(n)
        s = rng.integers(steps)
        jams[s:s + 12, max(0, c - 20):c + 20] -= rng.uniform(10, 30)
    return (base + daily + jams + 2 * rng.standard_normal((steps, n))).astype(np.float32)


class DiffConv(nn.Module):
    def __init__(self, cin, cout, src, dst, wf, wr, k=2):
        super().__init__()
        self.k = k
        self.src, self.dst, self.wf, self.wr = src, dst, wf, wr
        self.lin = nn.Linear(cin * (2 * k + 1), cout)

    def _prop(self, x, w, a, b):
        # x: (B, N, C); y[b] += w * x[a]
        msg = x[:, a, :] * w[None, :, None]
        return torch.zeros_like(x).index_add_(1, b, msg)

    def forward(self, x):
        outs = [x]
        xf = xr = x
        for _ in range(self.k):
            xf = self._prop(xf, self.wf, self.src, self.dst)
            xr = self._prop(xr, self.wr, self.dst, self.src)
            outs += [xf, xr]
        return self.lin(torch.cat(outs, -1))


class DCGRUCell(nn.Module):
    def __init__(self, cin, hid, graph):
        super().__init__()
        self.gates = DiffConv(cin + hid, 2 * hid, *graph)
        self.cand = DiffConv(cin + hid, hid, *graph)

    def forward(self, x, h):
        zr = torch.sigmoid(self.gates(torch.cat([x, h], -1)))
        z, r = zr.chunk(2, -1)
        c = torch.tanh(self.cand(torch.cat([x, r * h], -1)))
        return z * h + (1 - z) * c


class DCRNN(nn.Module):
    def __init__(self, graph):
        super().__init__()
        self.enc = DCGRUCell(2, HID, graph)
        self.dec = DCGRUCell(1, HID, graph)
        self.out = nn.Linear(HID, 1)

    def forward(self, hist, tod):
        b, t, n = hist.shape
        h = torch.zeros(b, n, HID, device=hist.device)
        for i in range(t):
            x = torch.stack([hist[:, i], tod[:, i]], -1)
            h = self.enc(x, h)
        y = hist[:, -1, :, None]
        preds = []
        for _ in range(HORIZON):
            h = self.dec(y, h)
            y = self.out(h)
            preds.append(y[..., 0])
        return torch.stack(preds, 1)


def cudart():
    names = ["libcudart.so.13", "libcudart.so.12", "libcudart.so"]
    base = os.path.dirname(torch.__file__)
    names += sorted(glob.glob(os.path.join(base, "..", "nvidia", "*", "lib", "libcudart.so*")))
    names += sorted(glob.glob(os.path.join(base, "lib", "libcudart*.so*")))
    for nm in names:
        try:
            lib = ctypes.CDLL(nm)
            lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
            lib.cudaFree.argtypes = [ctypes.c_void_p]
            return lib
        except OSError:
            continue
    return None


def main():
    rng = np.random.default_rng(11)
    torch.manual_seed(0)
    n, src, dst, wf, wr = road_network(rng)
    speeds = synth_speeds(rng, n, 2000)
    mu, sd = speeds.mean(), speeds.std()
    sp = torch.from_numpy((speeds - mu) / sd).to(DEV)
    tod_all = torch.from_numpy(np.tile(((np.arange(2000) % 288) / 288.0)[:, None], (1, n)).astype(np.float32)).to(DEV)
    graph = (torch.from_numpy(src).to(DEV), torch.from_numpy(dst).to(DEV),
             torch.from_numpy(wf.astype(np.float32)).to(DEV), torch.from_numpy(wr.astype(np.float32)).to(DEV))
    model = DCRNN(graph).to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    print(f"road network: {n} sensors, {len(src)} directed edges; caching allocator "
          f"{'OFF' if os.environ.get('PYTORCH_NO_CUDA_MEMORY_CACHING') else 'on'}")

    def step_fn(step):
        starts = torch.from_numpy(rng.integers(0, 2000 - HIST - HORIZON, BATCH)).to(DEV)
        idx = starts[:, None] + torch.arange(HIST + HORIZON, device=DEV)[None, :]
        win = sp[idx]
        tod = tod_all[idx]
        pred = model(win[:, :HIST], tod[:, :HIST])
        loss = (pred - win[:, HIST:]).abs().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for step in range(WARMUP):
        step_fn(step).item()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for step in range(TIMED):
        loss = step_fn(step)
        if step % 5 == 0:
            print(f"step {step:3d} MAE {loss.item() * sd:.2f} km/h", flush=True)
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t0
    per_step = loop_s / TIMED
    print(f"timed loop: {TIMED} steps in {loop_s:.3f} s ({1e3 * per_step:.1f} ms/step)")

    # ---- ground truth: count one step's allocations, time that many malloc/free pairs ---------
    counts = {"alloc": 0, "free": 0}
    try:
        from torch.cuda import _gpu_trace
        torch._C._activate_gpu_trace()
        _gpu_trace.register_callback_for_memory_allocation(lambda p: counts.__setitem__("alloc", counts["alloc"] + 1))
        _gpu_trace.register_callback_for_memory_deallocation(lambda p: counts.__setitem__("free", counts["free"] + 1))
        step_fn(TIMED).item()
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001
        print(f"allocation count unavailable: {exc}")
    n_alloc, n_free = counts["alloc"], counts["free"]
    lib = cudart()
    unit = None
    if lib is not None and n_alloc > 0:
        torch.cuda.nvtx.range_push("control: timed cudaMalloc/cudaFree pairs")
        # typical sizes of this model's tensors: node features (B*N*HID floats), edge messages
        # (B*E*C floats) and small ones (gate splits, parameters' gradients, scalars)
        sizes = [BATCH * n * HID * 4, BATCH * len(src) * (HID + 2) * 4, BATCH * n * 3 * HID * 4, 512, 4 * HID * HID]
        ptr = ctypes.c_void_p()
        reps = max(1, n_alloc // len(sizes))
        t1 = time.perf_counter()
        done = 0
        for _ in range(reps):
            for s in sizes:
                if lib.cudaMalloc(ctypes.byref(ptr), s) != 0:
                    break
                lib.cudaFree(ptr)
                done += 1
        dt = time.perf_counter() - t1
        torch.cuda.nvtx.range_pop()
        unit = dt / max(done, 1)
    if unit is None:
        print(f"GROUND TRUTH: {n_alloc} cudaMalloc and {n_free} cudaFree per step "
              f"(allocator); pair time not measurable here; step {1e3 * per_step:.1f} ms")
        return
    est = unit * max(n_alloc, n_free)
    print(f"one step: {n_alloc} cudaMalloc, {n_free} cudaFree; one malloc/free pair with the GPU "
          f"idle = {1e6 * unit:.1f} us")
    print(f"GROUND TRUTH: cudaMalloc/cudaFree >= {1e3 * est:.1f} ms of a {1e3 * per_step:.1f} ms step "
          f"= {100.0 * est / per_step:.1f}% of the timed loop at least (allocator)")


if __name__ == "__main__":
    main()
