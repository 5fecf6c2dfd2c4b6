"""Corpus (blind, batch 2): a CuPy simulation stepped with many small element-wise kernels.

Program: a 2-D diffusion-reaction grid of 256x256 float32 values advanced by CuPy: each time
step runs about 20 element-wise operations and rolls (a few microseconds of GPU work each); no
PyTorch, no NVTX, one synchronize per 50 time steps when the mean is printed. 300 time steps.
Expected, written before it was recorded (2026-11-26): launch-bound, at least 40% of the steady
step; steps are the time steps (about 300) or the 50-step blocks (6).
"""
import cupy as cp

cp.random.seed(0)
u = cp.random.random((256, 256), dtype=cp.float32)
v = cp.random.random((256, 256), dtype=cp.float32)
for t in range(300):
    lap_u = cp.roll(u, 1, 0) + cp.roll(u, -1, 0) + cp.roll(u, 1, 1) + cp.roll(u, -1, 1) - 4 * u
    lap_v = cp.roll(v, 1, 0) + cp.roll(v, -1, 0) + cp.roll(v, 1, 1) + cp.roll(v, -1, 1) - 4 * v
    uvv = u * v * v
    u = u + 0.1 * (0.16 * lap_u - uvv + 0.06 * (1 - u))
    v = v + 0.1 * (0.08 * lap_v + uvv - 0.122 * v)
    if t % 50 == 49:
        print("t", t, "mean u", float(u.mean()))
