# blind24_piv_pageable_frames.py: particle image velocimetry of a wind-tunnel wake, frames
# streamed from pageable host memory.
#
# A double-frame sCMOS camera delivers image pairs of 4096x4096 16-bit pixels (synthetic here:
# Gaussian particle images displaced by a Karman-vortex-street velocity field). Every step takes
# four pairs, uploads them (torch.from_numpy(frames).to("cuda"): pageable memory, a synchronous
# copy), subtracts the pair-minimum background and normalises the intensities, cuts 32x32
# interrogation windows with 50% overlap (255x255 windows per frame), cross-correlates them by
# FFT, finds each correlation peak with a 3-point Gaussian sub-pixel fit, and copies back the
# preprocessed first frames as float16 for the quality-control archive plus the vector fields
# (copy_ into numpy arrays: pageable again, synchronous). The copies are most of each step; the
# GPU's correlation work is short.
#
# 3 warm-up steps, then 40 timed steps. GROUND TRUTH: CUDA-event time of the host-device copies
# (upload and downloads) over the timed loop's wall time, and the host time blocked in the
# upload call. BLIND_SMALL=1: 512x512 frames, fewer steps for a CPU check.
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

SMALL = os.environ.get("BLIND_SMALL") == "1"
SIZE = 512 if SMALL else 4096
TILE = SIZE // 2
PAIRS = 2 if SMALL else 4
WIN = 32
STRIDE = 16
NW = (SIZE - WIN) // STRIDE + 1
WARMUP = 1 if SMALL else 3
TIMED = 3 if SMALL else 40
DEV = "cuda"


def particle_tile(rng, n, density=0.02, sigma=1.3):
    img = np.zeros((n, n), dtype=np.float32)
    k = int(density * n * n)
    y = rng.integers(0, n, k)
    x = rng.integers(0, n, k)
    np.add.at(img, (y, x), rng.uniform(0.5, 1.0, k).astype(np.float32))
    f = np.fft.fftfreq(n).astype(np.float32)
    g = np.exp(-2.0 * (np.pi * sigma * f) ** 2)
    return np.fft.irfft2(np.fft.rfft2(img) * np.outer(g, g[: n // 2 + 1]), s=(n, n)).astype(np.float32)


def karman_shift(phase):
    """Mean displacement of each quadrant (px), a crude vortex-street wake sampled in 4 places."""
    return [(int(round(6 + 2 * math.sin(phase + q))), int(round(3 * math.cos(phase + 1.3 * q)))) for q in range(4)]


def make_stack(rng, tile, phase):
    """PAIRS image pairs as one (2*PAIRS, SIZE, SIZE) uint16 array, frame A then frame B."""
    out = np.empty((2 * PAIRS, SIZE, SIZE), dtype=np.uint16)
    sensor_noise = rng.standard_normal((TILE, TILE)).astype(np.float32) * 0.01
    for p in range(PAIRS):
        shifts = karman_shift(phase + 0.4 * p)
        for q in range(4):
            r0, c0 = (q // 2) * TILE, (q % 2) * TILE
            base = np.roll(tile, (37 * q + 11 * p, 53 * q + 7 * p), axis=(0, 1))
            dy, dx = shifts[q]
            a = base
            b = np.roll(base, (dy, dx), axis=(0, 1))
            n0 = np.roll(sensor_noise, (int(rng.integers(TILE)), int(rng.integers(TILE))), axis=(0, 1))
            n1 = np.roll(sensor_noise, (int(rng.integers(TILE)), int(rng.integers(TILE))), axis=(0, 1))
            out[2 * p, r0:r0 + TILE, c0:c0 + TILE] = np.clip((a + n0 + 0.05) * 30000, 0, 65535)
            out[2 * p + 1, r0:r0 + TILE, c0:c0 + TILE] = np.clip((b + n1 + 0.05) * 30000, 0, 65535)
    return out


def windows(img):  # (P, H, W) -> (P, NW, NW, WIN, WIN)
    return img.unfold(1, WIN, STRIDE).unfold(2, WIN, STRIDE)


def correlate(stack_gpu):
    # the frames travel as int16 bit patterns of the camera's uint16 pixels
    x = (stack_gpu.to(torch.int32) & 0xFFFF).float().view(PAIRS, 2, SIZE, SIZE)
    bg = x.amin(1, keepdim=True)
    x = x - bg
    x = x / x.mean((2, 3), keepdim=True).clamp_min(1.0)
    a, b = x[:, 0], x[:, 1]
    wa = windows(a)
    wb = windows(b)
    wa = wa - wa.mean((-1, -2), keepdim=True)
    wb = wb - wb.mean((-1, -2), keepdim=True)
    fa = torch.fft.rfft2(wa)
    fb = torch.fft.rfft2(wb)
    corr = torch.fft.irfft2(fa.conj() * fb, s=(WIN, WIN))
    corr = torch.fft.fftshift(corr, dim=(-2, -1))
    flat = corr.flatten(-2)
    idx = flat.argmax(-1)
    py, px = idx // WIN, idx % WIN
    py = py.clamp(1, WIN - 2)
    px = px.clamp(1, WIN - 2)

    def at(dy, dx):
        return torch.gather(flat, -1, ((py + dy) * WIN + (px + dx)).unsqueeze(-1)).squeeze(-1).clamp_min(1e-6)

    c0, cym, cyp, cxm, cxp = at(0, 0), at(-1, 0), at(1, 0), at(0, -1), at(0, 1)
    sy = (torch.log(cym) - torch.log(cyp)) / (2 * (torch.log(cym) + torch.log(cyp) - 2 * torch.log(c0)))
    sx = (torch.log(cxm) - torch.log(cxp)) / (2 * (torch.log(cxm) + torch.log(cxp) - 2 * torch.log(c0)))
    vy = py.float() + torch.nan_to_num(sy) - WIN // 2
    vx = px.float() + torch.nan_to_num(sx) - WIN // 2
    preview = a.to(torch.float16)
    return torch.stack([vy, vx], 1), preview


def main():
    rng = np.random.default_rng(21)
    tile = particle_tile(rng, TILE)
    pool = [make_stack(rng, tile, 0.7 * i) for i in range(2)]
    preview_host = np.empty((PAIRS, SIZE, SIZE), dtype=np.float16)
    field_host = np.empty((PAIRS, 2, NW, NW), dtype=np.float32)
    print(f"{PAIRS} pairs of {SIZE}x{SIZE} uint16 per step: "
          f"{pool[0].nbytes / 2**20:.0f} MiB up, {(preview_host.nbytes + field_host.nbytes) / 2**20:.0f} MiB down")
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(6)]
    copy_ms = 0.0
    up_s = 0.0
    t0 = None
    for step in range(WARMUP + TIMED):
        if step == WARMUP:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            copy_ms = up_s = 0.0
        frames = pool[step % len(pool)]
        tu = time.perf_counter()
        ev[0].record()
        stack = torch.from_numpy(frames.view(np.int16)).to(DEV)
        ev[1].record()
        up_s += time.perf_counter() - tu
        field, preview = correlate(stack)
        ev[2].record()
        torch.from_numpy(preview_host).copy_(preview)
        ev[3].record()
        ev[4].record()
        torch.from_numpy(field_host).copy_(field)
        ev[5].record()
        # host: mean displacement per pair for the run log
        mean_disp = field_host.reshape(PAIRS, 2, -1).mean(-1)
        torch.cuda.synchronize()
        if step >= WARMUP:
            copy_ms += ev[0].elapsed_time(ev[1]) + ev[2].elapsed_time(ev[3]) + ev[4].elapsed_time(ev[5])
        if step % 10 == 0:
            print(f"step {step:3d} mean displacement (dy, dx) pair 0: "
                  f"({mean_disp[0, 0]:.2f}, {mean_disp[0, 1]:.2f}) px", flush=True)
    loop_s = time.perf_counter() - t0
    print(f"timed loop: {TIMED} steps in {loop_s:.3f} s ({1e3 * loop_s / TIMED:.1f} ms/step)")
    print(f"GROUND TRUTH: host-device copies (CUDA events) = {copy_ms / 1e3:.3f} s of {loop_s:.3f} s "
          f"= {100.0 * copy_ms / 1e3 / loop_s:.1f}% of the timed loop (copies, pageable); host blocked "
          f"in the upload call {100.0 * up_s / loop_s:.1f}%")


if __name__ == "__main__":
    main()
