"""Backtesting a DeepLOB-style limit-order-book model over one day of replayed snapshots.

The day's order-book windows (100 snapshots x 40 price/size levels per instrument tick) are held in
an ordinary NumPy array loaded at start-up. Each step slices the next block of windows and moves
it to the GPU with .to("cuda") from that pageable array: ~100-160 MB per step through the driver's
staging buffers, while the small conv + GRU model needs ~2 ms. The signals come back, a vectorised
NumPy backtest books the P&L, with a log line every 100 steps and a risk report every 250.
"""
import os
import time

import numpy as np
import torch
import torch.nn as nn

SMALL = os.environ.get("BLIND_SMALL") == "1"
dev = "cuda"
torch.manual_seed(0)
WIN, LEVELS = 100, 40
if SMALL:
    DAY_WINDOWS, STEPS, WARMUP, LOG_EVERY, RISK_EVERY = 3000, 12, 2, 4, 6
    SIZES = (160, 256, 320)
else:
    DAY_WINDOWS, STEPS, WARMUP, LOG_EVERY, RISK_EVERY = 96_000, 800, 10, 100, 250
    SIZES = (6144, 8192, 10240)

t_setup = time.perf_counter()
rng = np.random.default_rng(42)
# "Loaded" day: normalised price/size levels per snapshot; a mid-price path for the P&L.
book = np.empty((DAY_WINDOWS, WIN, LEVELS), np.float32)
quarter = DAY_WINDOWS // 4
base = rng.standard_normal((quarter, WIN, LEVELS), dtype=np.float32)
base[:, :, :20] *= 0.5
for k in range(4):  # four replayed hours, each rescaled
    np.multiply(base, 1.0 + 0.1 * k, out=book[k * quarter:(k + 1) * quarter])
del base
mid = 100.0 + np.cumsum(rng.standard_normal(DAY_WINDOWS + 1) * 0.01)
level_mu = torch.zeros(1, 1, LEVELS, device=dev)
level_sd = torch.ones(1, 1, LEVELS, device=dev)
print(f"lob-backtest: day of {DAY_WINDOWS} windows, {book.nbytes / 1e9:.2f} GB on the host, "
      f"setup {time.perf_counter() - t_setup:.1f}s", flush=True)


class DeepLOBLite(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(LEVELS, 64, 5, padding=2), nn.LeakyReLU(0.01),
            nn.Conv1d(64, 64, 5, padding=2), nn.LeakyReLU(0.01),
            nn.Conv1d(64, 64, 3, padding=1), nn.LeakyReLU(0.01))
        self.gru = nn.GRU(64, 64, batch_first=True)
        self.head = nn.Linear(64, 3)  # down / flat / up over the next horizon

    def forward(self, x):  # x: (n, WIN, LEVELS)
        h = self.conv(x.transpose(1, 2)).transpose(1, 2)
        _, last = self.gru(h)
        return self.head(last[-1])


model = DeepLOBLite().to(dev).eval()


def session_size(step):
    # Busier near the open and the close: more ticks per step.
    frac = step / STEPS
    if frac < 0.15 or frac > 0.85:
        return SIZES[2]
    if 0.4 < frac < 0.6:
        return SIZES[0]
    return SIZES[1]


def run_step(step, cursor, copy_acc):
    n = session_size(step)
    if cursor + n > DAY_WINDOWS:
        cursor = 0
    t0 = time.perf_counter()
    x = torch.from_numpy(book[cursor:cursor + n]).to(dev)  # pageable host -> device
    torch.cuda.synchronize()
    copy_acc[0] += time.perf_counter() - t0
    with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
        x = (x - level_mu) / level_sd
        probs = model(x).float().softmax(-1)
    sig = probs.cpu().numpy()
    conf = sig.max(1) > 0.36
    position = np.where(conf, sig[:, 2] - sig[:, 0], 0.0)
    ret = mid[cursor + 1:cursor + n + 1] - mid[cursor:cursor + n]
    pnl = float((position * ret).sum() - 0.0002 * np.abs(np.diff(position, prepend=0.0)).sum())
    return cursor + n, pnl, n


cursor = 0
dummy = [0.0]
for w in range(WARMUP):
    cursor, _, _ = run_step(w, cursor, dummy)
torch.cuda.synchronize()

copy_s = [0.0]
pnl_hist = []
bytes_moved = 0
torch.cuda.synchronize()
loop_t0 = time.perf_counter()
for step in range(STEPS):
    cursor, pnl, n = run_step(step, cursor, copy_s)
    pnl_hist.append(pnl)
    bytes_moved += n * WIN * LEVELS * 4
    if (step + 1) % LOG_EVERY == 0:
        print(f"step {step + 1:4d} cum pnl {sum(pnl_hist):+.3f} "
              f"H2D {bytes_moved / copy_s[0] / 1e9:.1f} GB/s", flush=True)
    if (step + 1) % RISK_EVERY == 0:
        curve = np.cumsum(pnl_hist)
        dd = float((np.maximum.accumulate(curve) - curve).max())
        sharpe = float(np.mean(pnl_hist) / (np.std(pnl_hist) + 1e-12) * np.sqrt(len(pnl_hist)))
        print(f"  risk: max drawdown {dd:.3f} sharpe {sharpe:.2f}", flush=True)
torch.cuda.synchronize()
loop_s = time.perf_counter() - loop_t0
print(f"GROUND TRUTH: copies: pageable host-to-device window copies (.to('cuda') of a NumPy "
      f"slice, synchronised) {copy_s[0]:.2f} s = {100 * copy_s[0] / loop_s:.1f}% of the timed "
      f"loop {loop_s:.2f} s ({bytes_moved / 1e9:.1f} GB); {STEPS} timed steps after {WARMUP} "
      f"warm-up steps", flush=True)
