"""Day-ahead load forecasting for a utility's substations with a TCN; features built per substation.

A year of 15-minute load for 480 substations and hourly temperatures for 40 weather stations are
loaded at start-up. Every training step picks a forecast origin and builds the feature tensor on
the host, substation by substation, the way the analysts' notebook did: daily/weekly lags,
rolling means (np.convolve), an exponentially smoothed load in a Python loop, temperature
interpolated to 15 minutes (np.interp), heating/cooling degree terms, calendar and holiday flags
via datetime, per-substation scaling. The TCN step on the GPU takes a few milliseconds; the GPU
waits for the host. Validation every 40 steps (also built on the host), a checkpoint at the end.
"""
import datetime as dt
import io
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SMALL = os.environ.get("BLIND_SMALL") == "1"
dev = "cuda"
torch.manual_seed(0)
Q_PER_DAY = 96
LOOKBACK, HORIZON, N_FEAT = 192, 96, 24
if SMALL:
    N_SUB, N_STATIONS, STEPS, WARMUP, VAL_EVERY, LOG_EVERY = 24, 4, 6, 1, 3, 2
else:
    N_SUB, N_STATIONS, STEPS, WARMUP, VAL_EVERY, LOG_EVERY = 480, 40, 120, 3, 40, 10
YEAR_Q = 365 * Q_PER_DAY
HOLIDAYS = {dt.date(2025, 1, 1), dt.date(2025, 4, 18), dt.date(2025, 4, 21), dt.date(2025, 5, 1),
            dt.date(2025, 5, 29), dt.date(2025, 6, 9), dt.date(2025, 10, 3), dt.date(2025, 12, 25),
            dt.date(2025, 12, 26)}
T0 = dt.datetime(2025, 1, 1)

t_setup = time.perf_counter()
rng = np.random.default_rng(11)
tq = np.arange(YEAR_Q)
daily = 0.6 + 0.3 * np.sin(2 * np.pi * (tq % Q_PER_DAY) / Q_PER_DAY - 1.9)
weekly = np.where(((tq // Q_PER_DAY) % 7) >= 5, 0.85, 1.0)
seasonal = 1.0 + 0.25 * np.cos(2 * np.pi * tq / YEAR_Q)
scale = rng.uniform(5, 60, N_SUB)[:, None]
load = (scale * daily * weekly * seasonal * (1 + 0.05 * rng.standard_normal((N_SUB, YEAR_Q)))).astype(np.float32)
hours = np.arange(YEAR_Q // 4 + 1) * 4.0  # hourly stamps in quarter-hour units
temp = (10 - 12 * np.cos(2 * np.pi * hours / YEAR_Q)[None] + 4 * np.sin(2 * np.pi * hours / Q_PER_DAY)[None]
        + rng.normal(0, 1.5, (N_STATIONS, hours.size))).astype(np.float32)
station_of = rng.integers(0, N_STATIONS, N_SUB)
print(f"grid load: {N_SUB} substations x {YEAR_Q} quarter-hours, setup "
      f"{time.perf_counter() - t_setup:.1f}s", flush=True)


def ema(series, alpha=0.1):
    out = np.empty_like(series)
    acc = float(series[0])
    for i, v in enumerate(series):
        acc = alpha * float(v) + (1 - alpha) * acc
        out[i] = acc
    return out


def calendar_rows(origin):
    rows = np.zeros((LOOKBACK + HORIZON, 6), np.float32)
    for k in range(LOOKBACK + HORIZON):
        stamp = T0 + dt.timedelta(minutes=15 * (origin - LOOKBACK + k))
        rows[k, 0] = np.sin(2 * np.pi * (stamp.hour * 4 + stamp.minute // 15) / Q_PER_DAY)
        rows[k, 1] = np.cos(2 * np.pi * (stamp.hour * 4 + stamp.minute // 15) / Q_PER_DAY)
        rows[k, 2] = stamp.weekday() >= 5
        rows[k, 3] = stamp.date() in HOLIDAYS
        rows[k, 4] = np.sin(2 * np.pi * stamp.timetuple().tm_yday / 365)
        rows[k, 5] = np.cos(2 * np.pi * stamp.timetuple().tm_yday / 365)
    return rows


def build_features(origin):
    x = np.empty((N_SUB, N_FEAT, LOOKBACK), np.float32)
    yt = np.empty((N_SUB, HORIZON), np.float32)
    qs = np.arange(origin - LOOKBACK, origin + HORIZON, dtype=np.float64)
    cal = calendar_rows(origin)
    for s in range(N_SUB):
        hist = load[s, origin - LOOKBACK - 7 * Q_PER_DAY:origin]
        mu, sd = hist.mean(), hist.std() + 1e-6
        h = (hist - mu) / sd
        cur = h[-LOOKBACK:]
        x[s, 0] = cur
        x[s, 1] = h[-LOOKBACK - Q_PER_DAY:-Q_PER_DAY]
        x[s, 2] = h[:LOOKBACK]  # same quarter-hours one week earlier
        for j, w in enumerate((4, 16, 96)):
            x[s, 3 + j] = np.convolve(h, np.ones(w) / w, mode="valid")[-LOOKBACK:]
        x[s, 6] = ema(cur)
        x[s, 7] = np.diff(h[-LOOKBACK - 1:])
        tt = np.interp(qs, hours, temp[station_of[s]])
        x[s, 8] = (tt[:LOOKBACK] - 10) / 8
        x[s, 9] = np.maximum(15.5 - tt[:LOOKBACK], 0) / 10  # heating degrees
        x[s, 10] = np.maximum(tt[:LOOKBACK] - 22, 0) / 5  # cooling degrees
        x[s, 11] = np.resize((tt[LOOKBACK:] - 10) / 8, LOOKBACK)  # forecast temperature, tiled
        x[s, 12:18] = cal[:LOOKBACK].T
        x[s, 18:24] = np.resize(cal[LOOKBACK:].T, (6, LOOKBACK))
        yt[s] = (load[s, origin:origin + HORIZON] - mu) / sd
    return x, yt


class TCN(nn.Module):
    def __init__(self):
        super().__init__()
        chans = [N_FEAT, 96, 96, 128, 128, 128]
        self.convs = nn.ModuleList(nn.Conv1d(chans[i], chans[i + 1], 3, padding=2 ** i, dilation=2 ** i)
                                   for i in range(5))
        self.norms = nn.ModuleList(nn.GroupNorm(8, chans[i + 1]) for i in range(5))
        self.head = nn.Linear(128 * 8, HORIZON)

    def forward(self, x):
        for conv, norm in zip(self.convs, self.norms):
            x = F.gelu(norm(conv(x))) + (x if x.shape[1] == conv.out_channels else 0)
        return self.head(F.adaptive_avg_pool1d(x, 8).flatten(1))


model = TCN().to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=STEPS + WARMUP + 1)
first_origin = LOOKBACK + 7 * Q_PER_DAY
train_end = int(YEAR_Q * 0.8)
gen = np.random.default_rng(5)


def train_step(origin, feat_acc):
    t0 = time.perf_counter()
    x, yt = build_features(origin)
    feat_acc[0] += time.perf_counter() - t0
    xb, yb = torch.from_numpy(x).to(dev), torch.from_numpy(yt).to(dev)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        pred = model(xb)
    loss = F.huber_loss(pred.float(), yb, delta=1.0)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    return loss.detach()


@torch.no_grad()
def validate(feat_acc):
    model.eval()
    errs = []
    for origin in (train_end + 3 * Q_PER_DAY, train_end + 40 * Q_PER_DAY):
        t0 = time.perf_counter()
        x, yt = build_features(origin)
        feat_acc[0] += time.perf_counter() - t0
        with torch.autocast("cuda", dtype=torch.bfloat16):
            pred = model(torch.from_numpy(x).to(dev)).float()
        errs.append((pred - torch.from_numpy(yt).to(dev)).abs().mean())
    model.train()
    return torch.stack(errs).mean().item()


scratch = [0.0]
for w in range(WARMUP):
    train_step(int(gen.integers(first_origin, train_end - HORIZON)), scratch)
torch.cuda.synchronize()

feature_s = [0.0]
torch.cuda.synchronize()
loop_t0 = time.perf_counter()
for step in range(STEPS):
    loss = train_step(int(gen.integers(first_origin, train_end - HORIZON)), feature_s)
    if (step + 1) % LOG_EVERY == 0:
        print(f"step {step + 1:3d} huber {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}", flush=True)
    if (step + 1) % VAL_EVERY == 0:
        print(f"  val MAE (scaled) {validate(feature_s):.4f}", flush=True)
buf = io.BytesIO()
torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
torch.cuda.synchronize()
loop_s = time.perf_counter() - loop_t0
print(f"checkpoint {buf.tell() / 1e6:.1f} MB", flush=True)
print(f"GROUND TRUTH: cpu-work: host feature building per substation (NumPy + Python loops, "
      f"train and validation) {feature_s[0]:.2f} s = {100 * feature_s[0] / loop_s:.1f}% of the timed "
      f"loop {loop_s:.2f} s; {STEPS} timed steps after {WARMUP} warm-up steps", flush=True)
