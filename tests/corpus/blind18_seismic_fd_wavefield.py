"""3D acoustic wave propagation for a seismic survey (finite differences, 8th order in space).

The pressure field lives on a 448^3 grid with a layered velocity model, a salt body and a Cerjan
sponge at the edges. Each time step evaluates the eighth-order Laplacian as a sum of shifted
slices of the field (the way a NumPy prototype ported to PyTorch does it), advances the field with
the second-order leapfrog, damps the sponge and injects a Ricker wavelet. Receivers along the
surface are recorded every step into a GPU buffer. Three shots are fired; each shot's gather is
written to /tmp, and a wavefield slice is copied out for a QC plot every 100 steps.
"""
import math
import os
import time

import numpy as np
import torch

DEVICE = "cuda"
N = 448
H = 4
DX = 10.0
DT = 0.0008
STEPS_PER_SHOT = 380
SHOTS = 3
SPONGE = 24
SNAP_EVERY = 100
RX_STRIDE = 4
F_PEAK = 12.0
OUT_DIR = "/tmp/blind18_seismic"
# eighth-order central-difference weights for the second derivative
C = [-205.0 / 72.0, 8.0 / 5.0, -1.0 / 5.0, 8.0 / 315.0, -1.0 / 560.0]


def velocity_model(n):
    z = torch.arange(n, device=DEVICE, dtype=torch.float32)[:, None, None]
    y = torch.arange(n, device=DEVICE, dtype=torch.float32)[None, :, None]
    x = torch.arange(n, device=DEVICE, dtype=torch.float32)[None, None, :]
    v = 1500.0 + 2.2 * z + 40.0 * torch.sin(x / 37.0) * torch.cos(y / 53.0)  # gently dipping
    v = v + 300.0 * (z > n * 0.35).float() + 500.0 * (z > n * 0.7).float()
    salt = ((z - n * 0.5) / (n * 0.12)) ** 2 + ((y - n * 0.45) / (n * 0.2)) ** 2 + \
        ((x - n * 0.55) / (n * 0.25)) ** 2 < 1.0
    v = torch.where(salt, torch.full_like(v, 4500.0), v)
    return v.expand(n, n, n).contiguous()


def sponge(n):
    d = torch.ones(n, device=DEVICE)
    ramp = torch.arange(SPONGE, device=DEVICE, dtype=torch.float32)
    prof = torch.exp(-(0.015 * (SPONGE - ramp)) ** 2)
    d[:SPONGE] = prof
    d[-SPONGE:] = prof.flip(0)
    top = torch.ones(n, device=DEVICE)
    top[-SPONGE:] = prof.flip(0)  # free surface at z=0: no sponge on top
    return (top[:, None, None] * d[None, :, None] * d[None, None, :]).contiguous()


def ricker(t, f):
    a = (math.pi * f * (t - 1.2 / f)) ** 2
    return (1 - 2 * a) * math.exp(-a)


def main():
    t_start = time.perf_counter()
    os.makedirs(OUT_DIR, exist_ok=True)
    vel = velocity_model(N)
    cfl = float(vel.max()) * DT / DX
    print(f"grid {N}^3 ({N ** 3 * 4 / 2 ** 20:.0f} MiB per field), "
          f"vmax {float(vel.max()):.0f} m/s, CFL {cfl:.3f}", flush=True)
    inner = (slice(H, N - H),) * 3
    v2 = (vel[inner] * DT / DX) ** 2
    del vel
    damp = sponge(N)
    p = torch.zeros(N, N, N, device=DEVICE)
    p_old = torch.zeros_like(p)
    lap = torch.empty(N - 2 * H, N - 2 * H, N - 2 * H, device=DEVICE)
    rx = torch.arange(H, N - H, RX_STRIDE, device=DEVICE)
    n_rx = rx.numel()
    rec_z = H + 2
    events = []
    snaps = []
    torch.cuda.synchronize()
    loop_t0 = time.perf_counter()
    for shot in range(SHOTS):
        p.zero_()
        p_old.zero_()
        gather = torch.zeros(STEPS_PER_SHOT, n_rx, n_rx, device=DEVICE)
        sy = N // 2 + (shot - 1) * N // 5
        sx = N // 2
        sz = H + 3
        for it in range(STEPS_PER_SHOT):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            core = p[inner]
            torch.mul(core, 3.0 * C[0], out=lap)
            for k in range(1, 5):
                lo, hi = H - k, N - H - k
                lo2, hi2 = H + k, N - H + k
                lap.add_(p[lo2:hi2, H:N - H, H:N - H], alpha=C[k])
                lap.add_(p[lo:hi, H:N - H, H:N - H], alpha=C[k])
                lap.add_(p[H:N - H, lo2:hi2, H:N - H], alpha=C[k])
                lap.add_(p[H:N - H, lo:hi, H:N - H], alpha=C[k])
                lap.add_(p[H:N - H, H:N - H, lo2:hi2], alpha=C[k])
                lap.add_(p[H:N - H, H:N - H, lo:hi], alpha=C[k])
            # leapfrog: p_new = 2 p - p_old + v^2 dt^2/dx^2 lap, written over p_old
            nxt = p_old[inner]
            nxt.mul_(-1.0).add_(core, alpha=2.0).addcmul_(v2, lap)
            p_old.mul_(damp)
            p.mul_(damp)
            p_old[sz, sy, sx] += ricker(it * DT, F_PEAK) * DT * DT * 1e6
            p, p_old = p_old, p
            gather[it] = p[rec_z][rx][:, rx]
            e1.record()
            events.append((e0, e1))
            if it % SNAP_EVERY == 0:
                snaps.append(p[:, N // 2, ::2].cpu().numpy())
        g = gather.cpu().numpy()
        np.save(os.path.join(OUT_DIR, f"shot_{shot}.npy"), g)
        rms = float(np.sqrt((g ** 2).mean()))
        print(f"shot {shot}: {STEPS_PER_SHOT} steps, gather {g.shape}, rms {rms:.3e}, "
              f"elapsed {time.perf_counter() - loop_t0:.1f} s", flush=True)
    torch.cuda.synchronize()
    loop = time.perf_counter() - loop_t0
    gpu = sum(a.elapsed_time(b) for a, b in events) / 1e3
    np.save(os.path.join(OUT_DIR, "qc_snapshots.npy"), np.stack(snaps))
    steps = SHOTS * STEPS_PER_SHOT
    traffic = steps * 31 * 3 * lap.numel() * 4 / gpu / 1e12
    print(f"done: {steps} time steps, {1e3 * gpu / steps:.2f} ms GPU per step "
          f"(~{traffic:.1f} TB/s effective), total {time.perf_counter() - t_start:.1f} s")
    print(f"GROUND TRUTH: GPU seconds in wave-equation time steps (cudaEvent spans, "
          f"memory-bound slice arithmetic) {gpu:.2f} of loop {loop:.2f} ({100 * gpu / loop:.1f}%)")


if __name__ == "__main__":
    main()
