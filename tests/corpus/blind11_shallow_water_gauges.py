"""Corpus (blind, batch 11): a shallow-water tsunami solver with an adaptive time step and gauges.

Program: the 2D shallow-water equations (conservative h, hu, hv) on an 8192 x 8192 grid of 100 m
cells (fp32, ~270 MB a field) with a Lax-Friedrichs scheme written in plain PyTorch slicing, a
Gaussian hump of water released in a closed basin. Each time step: the wave speed max(|u| + sqrt(g
h), |v| + sqrt(g h)) reduced to one number and read with .item() to choose dt from a CFL number of
0.4 (a sync every step); the fluxes and the three Lax-Friedrichs updates (~55 memory-bound
elementwise kernels over the whole grid, each 0.5-0.8 GB of traffic); the reflective walls, 12
edge-row and edge-column copies (4 of them negated: the column copies and the negations are tiny
kernels, the contiguous row copies device-to-device cudaMemcpyAsync); and 48 tide gauges, each
recorded with its own `series[k, n] = h[y, x]` (48 one-element device-to-device cudaMemcpyAsync a
step). So about half of the GPU operations are tiny, many of them memcpy, the CPU sits in .item()
most of its time, and every step has a sync; yet the grid-wide kernels hold ~10-15 ms of GPU time a
step against ~1-2 ms of CPU to launch everything, and the .item() only costs the refill gap before
the next step's first kernel. Diagnostics (mass, energy, maximum height) read back every 100 steps.
NVTX: one range a step named after the simulated time ("t=1234s"), a different name every step. 600
steps after 5 warm-up steps; one line printed at the end: the GPU-timeline span of the 600 steps by
CUDA events (which includes idle gaps, not busy time), the seconds the CPU spent inside the per-step
.item() (mostly waiting for queued work) and the loop's total, measured in-program.

Expected, written before it was recorded (2026-11-26): gpu-bound, 88-97% of the steady step,
memory-bound elementwise kernels (the add/sub/mul/div of the Lax-Friedrichs updates and fluxes over
the full grid, sqrt/abs/maximum of the wave speed, the max reduction), the GPU busy nearly all the
time; 605 steps (600 after the warm-up; the per-step ranges, whatever their names; within 5).
Misses: sync-stall (the .item() waits for work the GPU must do anyway; the refill gap after it is
~0.05-0.2 ms of a ~12 ms step), launch-bound (the tiny edge and gauge operations are half the count
but ~1-3% of the time), copies (the ~54 device-to-device memcpy a step are one element or one 32 KB
row each: no host memory, microseconds), cpu-work, allocator.
Advice that helps: fewer bytes per step (fuse the update into one kernel with torch.compile or a
hand-written stencil, bf16 or fewer temporaries, compute dt every few steps from a bound); the
gauges and walls may stay as they are (batching them gains ~1-3%).
"""
import time

import torch

NX = NY = 8192
DX = 100.0  # m
G = 9.81
CFL = 0.4
DEPTH, HUMP, HUMP_SIGMA_CELLS = 50.0, 5.0, 40.0
STEPS, WARMUP_STEPS, DIAG_EVERY, GAUGES = 600, 5, 100, 48


def initial_state():
    y = torch.arange(NY, device="cuda", dtype=torch.float32).view(-1, 1)
    x = torch.arange(NX, device="cuda", dtype=torch.float32).view(1, -1)
    r2 = ((x - 0.4 * NX) ** 2 + (y - 0.55 * NY) ** 2) / HUMP_SIGMA_CELLS ** 2
    h = DEPTH + HUMP * torch.exp(-r2)
    return h, torch.zeros_like(h), torch.zeros_like(h)


def wave_speed(h, hu, hv):
    c = torch.sqrt(G * h)
    u = hu / h
    v = hv / h
    return torch.maximum(u.abs() + c, v.abs() + c).max()


def lax_friedrichs(h, hu, hv, dt):
    u = hu / h
    v = hv / h
    p = 0.5 * G * h * h
    f_h, f_hu, f_hv = hu, hu * u + p, hu * v
    g_h, g_hu, g_hv = hv, hv * u, hv * v + p
    c = dt / (2 * DX)

    def update(q, f, g):
        new = torch.empty_like(q)
        new[1:-1, 1:-1] = (0.25 * (q[2:, 1:-1] + q[:-2, 1:-1] + q[1:-1, 2:] + q[1:-1, :-2])
                           - c * (f[1:-1, 2:] - f[1:-1, :-2])
                           - c * (g[2:, 1:-1] - g[:-2, 1:-1]))
        return new

    return update(h, f_h, g_h), update(hu, f_hu, g_hu), update(hv, f_hv, g_hv)


def reflective_walls(h, hu, hv):
    h[0, :] = h[1, :]
    h[-1, :] = h[-2, :]
    h[:, 0] = h[:, 1]
    h[:, -1] = h[:, -2]
    hu[0, :] = hu[1, :]
    hu[-1, :] = hu[-2, :]
    hu[:, 0] = -hu[:, 1]
    hu[:, -1] = -hu[:, -2]
    hv[0, :] = -hv[1, :]
    hv[-1, :] = -hv[-2, :]
    hv[:, 0] = hv[:, 1]
    hv[:, -1] = hv[:, -2]


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(11)
    stations = torch.randint(16, NX - 16, (GAUGES, 2), generator=gen).tolist()
    series = torch.zeros(GAUGES, STEPS + WARMUP_STEPS, device="cuda")
    times = []

    h, hu, hv = initial_state()
    with torch.no_grad():
        mass0 = h.double().sum().item()
        t_model = 0.0
        in_item = 0.0
        start = ev0 = None
        ev1 = torch.cuda.Event(enable_timing=True)
        for n in range(STEPS + WARMUP_STEPS):
            if n == WARMUP_STEPS:
                torch.cuda.synchronize()
                ev0 = torch.cuda.Event(enable_timing=True)
                ev0.record()
                start = time.perf_counter()
                in_item = 0.0
            torch.cuda.nvtx.range_push(f"t={t_model:.0f}s")
            smax = wave_speed(h, hu, hv)
            t0 = time.perf_counter()
            dt = CFL * DX / smax.item()
            in_item += time.perf_counter() - t0

            h, hu, hv = lax_friedrichs(h, hu, hv, dt)
            reflective_walls(h, hu, hv)
            for k, (gy, gx) in enumerate(stations):
                series[k, n] = h[gy, gx]
            t_model += dt
            times.append(t_model)
            torch.cuda.nvtx.range_pop()

            if (n + 1) % DIAG_EVERY == 0:
                mass = h.double().sum().item()
                energy = (0.5 * (hu * hu + hv * hv) / h + 0.5 * G * h * h).double().sum().item()
                print(f"step {n + 1}: t {t_model:8.1f} s, dt {dt:.3f} s, mass drift "
                      f"{(mass - mass0) / mass0:+.2e}, energy {energy * DX * DX:.4e}, "
                      f"max h {h.max().item():.3f} m")
        ev1.record()
        torch.cuda.synchronize()
        total = time.perf_counter() - start

    peak = series[:, WARMUP_STEPS:].amax(dim=1).cpu()
    print(f"gauges: highest reading {peak.max().item():.3f} m, lowest peak "
          f"{peak.min().item():.3f} m, simulated {times[-1] / 60:.1f} min")
    print(f"steps {STEPS}; GPU span by CUDA events {ev0.elapsed_time(ev1) / 1e3:.2f} s, "
          f"inside the per-step .item() {in_item:.2f} s, of loop {total:.2f} s")


if __name__ == "__main__":
    main()
