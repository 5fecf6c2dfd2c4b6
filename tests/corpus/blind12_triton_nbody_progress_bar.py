"""Corpus (blind, batch 12): a direct-summation N-body code in Triton with a chatty progress bar.

Program: a collision of two disc galaxies, 2 x 65,536 equal-mass stars (Plummer-softened gravity, G
= 1, each disc rotating, the pair approaching on a parabolic-ish orbit), integrated with
kick-drift-kick leapfrog. The O(N^2) accelerations are a hand-written Triton kernel (one program per
64 or 128 targets, a loop over all 131,072 sources in tiles of 32 or 64, rsqrt, the three sums
accumulated in registers: ~1.7e10 interactions a step, ~20 flops each); its three tile
configurations are autotuned on the first call. The drift and the two kicks are in-place PyTorch ops
on (N, 4) tensors. The loop carries the things a reader suspects first: a hand-rolled progress bar
redrawn every step (sys.stdout.write with "\\r", an ETA from a moving average), fed by `vmax.item()`
(a sync every step: the maximum speed for the bar and a Courant-style check), an energy audit every
50 steps (a second Triton kernel for the potential, O(N^2) as well, and two .item()), and a snapshot
of the positions every 100 steps (.cpu().numpy(), 2 MB, np.save into a temporary folder, removed at
exit). Expected on the device: ~8-20 ms a step for the accelerations (not measured: ~50-60% of the
FP32 rate with one MUFU rsqrt per interaction), against ~50-100 us of launches and progress-bar
Python a step. No NVTX. One warm-up step (JIT compile and autotune of both kernels) before 500
steps. One line printed at the end: the GPU time of the acceleration kernel by CUDA events around it
(every step), the seconds inside the per-step .item(), and the loop's total, measured in-program.

Expected, written before it was recorded (2026-11-27): gpu-bound, 93-99% of the steady step, naming
the Triton kernel accel_kernel (one launch a step holding nearly all the GPU time; potential_kernel
every 50 steps second); 500 steps (the autotuner's benchmark launches in the warm-up are not
steps). The trap: the CPU spends ~90-98% of the loop blocked inside
`.item()` (cudaMemcpy/stream synchronise), waiting for a GPU that is busy with work it must do
anyway; the gap that each sync opens is ~10-50 us of a ~10 ms step. Misses: sync-stall (removing the
.item() would gain <1%), cpu-work (the progress bar, ~1%), compile (Triton's JIT and autotune are in
the warm-up step, before the loop), copies (2 MB every 100 steps), launch-bound. Advice that helps:
less arithmetic per step or faster arithmetic: a tree code or FMM (Barnes-Hut), fewer particles, a
tuned tile size / shared-memory tiling, bf16 or mixed precision where the softening allows, larger
time steps with individual time steps; not removing the progress bar's sync.
"""
import math
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import torch
import triton
import triton.language as tl

N_PER_GALAXY, STEPS, DT, EPS = 65536, 500, 2.0e-3, 0.02
ENERGY_EVERY, SNAPSHOT_EVERY = 50, 100


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_I": 64, "BLOCK_J": 32}, num_warps=4),
        triton.Config({"BLOCK_I": 128, "BLOCK_J": 32}, num_warps=8),
        triton.Config({"BLOCK_I": 64, "BLOCK_J": 64}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def accel_kernel(pos_ptr, acc_ptr, n, eps2, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr):
    """acc_i = sum_j m_j (x_j - x_i) / (|x_j - x_i|^2 + eps^2)^(3/2); pos is (n, 4) = x, y, z, m."""
    pid = tl.program_id(0)
    offs_i = pid * BLOCK_I + tl.arange(0, BLOCK_I)
    mask_i = offs_i < n
    xi = tl.load(pos_ptr + offs_i * 4 + 0, mask=mask_i, other=0.0)
    yi = tl.load(pos_ptr + offs_i * 4 + 1, mask=mask_i, other=0.0)
    zi = tl.load(pos_ptr + offs_i * 4 + 2, mask=mask_i, other=0.0)
    ax = tl.zeros([BLOCK_I, BLOCK_J], dtype=tl.float32)
    ay = tl.zeros([BLOCK_I, BLOCK_J], dtype=tl.float32)
    az = tl.zeros([BLOCK_I, BLOCK_J], dtype=tl.float32)
    for j0 in range(0, n, BLOCK_J):
        offs_j = j0 + tl.arange(0, BLOCK_J)
        mask_j = offs_j < n
        xj = tl.load(pos_ptr + offs_j * 4 + 0, mask=mask_j, other=0.0)
        yj = tl.load(pos_ptr + offs_j * 4 + 1, mask=mask_j, other=0.0)
        zj = tl.load(pos_ptr + offs_j * 4 + 2, mask=mask_j, other=0.0)
        mj = tl.load(pos_ptr + offs_j * 4 + 3, mask=mask_j, other=0.0)  # 0 for padding
        dx = xj[None, :] - xi[:, None]
        dy = yj[None, :] - yi[:, None]
        dz = zj[None, :] - zi[:, None]
        inv_r = tl.rsqrt(dx * dx + dy * dy + dz * dz + eps2)
        s = mj[None, :] * inv_r * inv_r * inv_r
        ax += dx * s
        ay += dy * s
        az += dz * s
    tl.store(acc_ptr + offs_i * 4 + 0, tl.sum(ax, axis=1), mask=mask_i)
    tl.store(acc_ptr + offs_i * 4 + 1, tl.sum(ay, axis=1), mask=mask_i)
    tl.store(acc_ptr + offs_i * 4 + 2, tl.sum(az, axis=1), mask=mask_i)


@triton.jit
def potential_kernel(pos_ptr, out_ptr, n, eps2, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr):
    """out_i = -m_i / 2 sum_{j != i} m_j / sqrt(|x_j - x_i|^2 + eps^2), the softened potential."""
    pid = tl.program_id(0)
    offs_i = pid * BLOCK_I + tl.arange(0, BLOCK_I)
    mask_i = offs_i < n
    xi = tl.load(pos_ptr + offs_i * 4 + 0, mask=mask_i, other=0.0)
    yi = tl.load(pos_ptr + offs_i * 4 + 1, mask=mask_i, other=0.0)
    zi = tl.load(pos_ptr + offs_i * 4 + 2, mask=mask_i, other=0.0)
    mi = tl.load(pos_ptr + offs_i * 4 + 3, mask=mask_i, other=0.0)
    acc = tl.zeros([BLOCK_I, BLOCK_J], dtype=tl.float32)
    for j0 in range(0, n, BLOCK_J):
        offs_j = j0 + tl.arange(0, BLOCK_J)
        mask_j = offs_j < n
        xj = tl.load(pos_ptr + offs_j * 4 + 0, mask=mask_j, other=0.0)
        yj = tl.load(pos_ptr + offs_j * 4 + 1, mask=mask_j, other=0.0)
        zj = tl.load(pos_ptr + offs_j * 4 + 2, mask=mask_j, other=0.0)
        mj = tl.load(pos_ptr + offs_j * 4 + 3, mask=mask_j, other=0.0)
        dx = xj[None, :] - xi[:, None]
        dy = yj[None, :] - yi[:, None]
        dz = zj[None, :] - zi[:, None]
        inv_r = tl.rsqrt(dx * dx + dy * dy + dz * dz + eps2)
        not_self = offs_j[None, :] != offs_i[:, None]
        acc += tl.where(not_self, mj[None, :] * inv_r, 0.0)
    tl.store(out_ptr + offs_i, -0.5 * mi * tl.sum(acc, axis=1), mask=mask_i)


def accelerations(pos, acc):
    n = pos.shape[0]
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_I"]),)
    accel_kernel[grid](pos, acc, n, EPS * EPS)


def potential_energy(pos, scratch):
    n = pos.shape[0]
    potential_kernel[(triton.cdiv(n, 64),)](pos, scratch, n, EPS * EPS, BLOCK_I=64, BLOCK_J=32,
                                            num_warps=4)
    return scratch.sum()


def make_disc(n, centre, velocity, spin, gen):
    """An exponential disc of n stars (total mass 0.5) with near-circular velocities."""
    r = -0.25 * torch.log(1 - torch.rand(n, generator=gen) * 0.98)  # scale length 0.25
    phi = 2 * math.pi * torch.rand(n, generator=gen)
    z = 0.02 * torch.randn(n, generator=gen)
    mass = torch.full((n,), 0.5 / n)
    enclosed = 0.5 * (1 - (1 + r / 0.25) * torch.exp(-r / 0.25)) + 0.05
    v_circ = torch.sqrt(enclosed / torch.sqrt(r * r + EPS * EPS))
    x = torch.stack([r * torch.cos(phi), r * torch.sin(phi), z], 1)
    v = spin * torch.stack([-v_circ * torch.sin(phi), v_circ * torch.cos(phi), torch.zeros(n)], 1)
    v += 0.03 * torch.randn(n, 3, generator=gen)
    pos = torch.cat([x + torch.tensor(centre), mass[:, None]], 1)
    vel = torch.cat([v + torch.tensor(velocity), torch.zeros(n, 1)], 1)
    return pos, vel


class ProgressBar:
    def __init__(self, total, width=40):
        self.total, self.width = total, width
        self.start = time.perf_counter()
        self.rate = None

    def update(self, done, **fields):
        now = time.perf_counter()
        inst = done / max(now - self.start, 1e-9)
        self.rate = inst if self.rate is None else 0.9 * self.rate + 0.1 * inst
        filled = int(self.width * done / self.total)
        eta = (self.total - done) / max(self.rate, 1e-9)
        extra = " ".join(f"{k}={v:.4g}" for k, v in fields.items())
        sys.stdout.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {done}/{self.total} "
                         f"{self.rate:5.1f} steps/s ETA {eta:5.1f}s {extra}")
        sys.stdout.flush()


def main():
    device = torch.device("cuda")
    gen = torch.Generator().manual_seed(12)
    p1, v1 = make_disc(N_PER_GALAXY, (-0.8, -0.15, 0.0), (0.35, 0.0, 0.0), 1.0, gen)
    p2, v2 = make_disc(N_PER_GALAXY, (0.8, 0.15, 0.0), (-0.35, 0.0, 0.0), -1.0, gen)
    pos = torch.cat([p1, p2]).to(device).contiguous()
    vel = torch.cat([v1, v2]).to(device).contiguous()
    acc = torch.zeros_like(pos)
    scratch = torch.zeros(pos.shape[0], device=device)
    snapdir = tempfile.mkdtemp(prefix="nbody-", dir=os.getcwd())

    def energy():
        kinetic = 0.5 * (pos[:, 3] * (vel[:, :3] ** 2).sum(1)).sum()
        return kinetic.item(), potential_energy(pos, scratch).item()

    try:
        # Warm-up: Triton JIT-compiles both kernels and autotunes accel_kernel's three configs.
        t = time.perf_counter()
        accelerations(pos, acc)
        e0_kin, e0_pot = energy()
        torch.cuda.synchronize()
        print(f"N = {pos.shape[0]}: warm-up (JIT, autotune) {time.perf_counter() - t:.1f} s, "
              f"E0 = {e0_kin + e0_pot:.6f} (K {e0_kin:.4f}, W {e0_pot:.4f}), "
              f"config {accel_kernel.best_config}")

        bar = ProgressBar(STEPS)
        in_item = 0.0
        events = []
        start = time.perf_counter()
        for step in range(1, STEPS + 1):
            vel.add_(acc, alpha=0.5 * DT)  # kick
            pos[:, :3].add_(vel[:, :3], alpha=DT)  # drift
            ev0 = torch.cuda.Event(enable_timing=True)
            ev1 = torch.cuda.Event(enable_timing=True)
            ev0.record()
            accelerations(pos, acc)
            ev1.record()
            events.append((ev0, ev1))
            vel.add_(acc, alpha=0.5 * DT)  # kick
            t0 = time.perf_counter()
            vmax = vel[:, :3].norm(dim=1).max().item()
            in_item += time.perf_counter() - t0
            if vmax * DT > 0.5 * EPS * 10:
                print(f"\nwarning: step {step}: vmax {vmax:.3f}, dt may be too large")
            fields = {"vmax": vmax}
            if step % ENERGY_EVERY == 0:
                k, w = energy()
                fields["dE/E0"] = (k + w - e0_kin - e0_pot) / abs(e0_kin + e0_pot)
            if step % SNAPSHOT_EVERY == 0:
                np.save(os.path.join(snapdir, f"snap_{step:05d}.npy"), pos.cpu().numpy())
            bar.update(step, **fields)
        torch.cuda.synchronize()
        total = time.perf_counter() - start
        kernel_ms = sum(a.elapsed_time(b) for a, b in events)
        sys.stdout.write("\n")
        print(f"steps {STEPS}: accel_kernel GPU time {kernel_ms / 1e3:.2f} s by CUDA events "
              f"({100 * kernel_ms / 1e3 / total:.0f}%), "
              f"inside the per-step .item() {in_item:.2f} s "
              f"({100 * in_item / total:.0f}%), of loop {total:.2f} s")
    finally:
        shutil.rmtree(snapdir, ignore_errors=True)


if __name__ == "__main__":
    main()
