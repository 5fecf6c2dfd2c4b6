"""Wind-farm power forecasting service: autoregressive rollouts for 256 turbines.

A producer thread plays the request queue: each request carries 8 hours of 10-minute SCADA
history for the farm's 256 turbines (wind speed and direction, yaw, pitch, rotor speed,
power, temperatures: 16 channels, with gaps) and the forecast horizon the caller wants, in
10-minute steps. The serving thread cleans and scales the history on the GPU (eager ops),
runs the forecaster, a convolutional encoder followed by a GRU-style decoder unrolled for
`horizon` steps that emits five power quantiles per step, then clips to rated power, fixes
quantile crossing, and serialises the answer as JSON.

The forecaster is torch.compile'd with mode="reduce-overhead" (CUDA graphs) and
dynamic=False, and `horizon` is a Python int that drives the decoder loop, so every horizon
not seen before is a new graph: dynamo, inductor and a CUDA-graph recording. The operators
raised the recompile limit to 64 to silence the warning. Most requests ask for 1, 2 or 4
hours (6, 12, 24 steps); now and then one asks for something else.

NVTX: one range per request named by its id, "req 3fa9-0017". The first 12 requests are
warm-up. BLIND_SMALL=1 runs 16 turbines and a handful of requests.
"""
import json
import os
import queue
import threading
import time
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SMALL = os.environ.get("BLIND_SMALL") == "1"
DEV = "cuda"
TURBINES = 16 if SMALL else 256
HIST = 48
CH = 16
HIDDEN = 64 if SMALL else 256
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
RATED_KW = 3600.0
MAX_H = 48
WARMUP = 6 if SMALL else 12
REQUESTS = 10 if SMALL else 320
STANDARD = (6, 12, 24)
# horizons nobody asked for before, and the timed request at which each first appears
RARE = (18, 9) if SMALL else (18, 9, 15, 30, 10, 20, 14, 8)
RARE_AT = {WARMUP + 3 + 5 * i: h for i, h in enumerate(RARE)} if SMALL else \
    {WARMUP + 16 + 36 * i: h for i, h in enumerate(RARE)}

torch._dynamo.config.cache_size_limit = 64
if hasattr(torch._dynamo.config, "recompile_limit"):
    torch._dynamo.config.recompile_limit = 64


# ---------------------------------------------------------------- request producer (thread)
def make_history(rng):
    """SCADA history for the farm: (turbines, HIST, CH) float32 with NaN gaps."""
    base = rng.weibull(2.2) * 8.0
    gust = np.cumsum(rng.normal(0, 0.4, (TURBINES, HIST)), axis=1)
    ws = np.clip(base + 0.3 * gust + rng.normal(0, 0.5, (TURBINES, 1)), 0, 30)
    wd = (rng.uniform(0, 360) + np.cumsum(rng.normal(0, 2, (TURBINES, HIST)), axis=1)) % 360
    power = RATED_KW * np.clip(((ws - 3.0) / 9.0) ** 3, 0, 1)
    feats = [ws, np.sin(np.radians(wd)), np.cos(np.radians(wd)),
             rng.normal(0, 3, (TURBINES, HIST)),                      # yaw misalignment
             np.clip((ws - 12) * 2, 0, 25),                           # pitch
             np.clip(ws * 1.1, 0, 14) + rng.normal(0, 0.1, (TURBINES, HIST)),  # rotor rpm
             power / RATED_KW]
    for k in range(CH - len(feats)):
        feats.append(20 + 5 * np.sin(np.arange(HIST) / 7 + k) + rng.normal(0, 1, (TURBINES, HIST)))
    h = np.stack(feats, -1).astype(np.float32)
    gaps = rng.uniform(0, 1, (TURBINES, HIST)) < 0.02
    h[gaps] = np.nan
    return h


def producer(q, horizons, stop):
    rng = np.random.default_rng(17)
    for seq, horizon in enumerate(horizons):
        rid = f"{zlib.crc32(seq.to_bytes(4, 'little')) & 0xffff:04x}-{seq:04d}"
        item = (rid, horizon, make_history(rng), rng.uniform(0, 24))
        while not stop.is_set():
            try:
                q.put(item, timeout=0.5)
                break
            except queue.Full:
                continue
    q.put(None)


# ---------------------------------------------------------------- the forecaster
class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(CH, 64, 5, padding=2)
        self.conv2 = nn.Conv1d(64, 64, 5, padding=2)
        self.enc = nn.Linear(64 * HIST, HIDDEN)
        self.x_in = nn.Linear(len(QUANTILES) + 4, 3 * HIDDEN)
        self.h_in = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.head = nn.Sequential(nn.Linear(HIDDEN, HIDDEN), nn.GELU(),
                                  nn.Linear(HIDDEN, len(QUANTILES)))

    def forward(self, hist, calendar, horizon: int):
        z = F.gelu(self.conv1(hist.transpose(1, 2)))
        z = F.gelu(self.conv2(z))
        h = torch.tanh(self.enc(z.flatten(1)))
        y = hist[:, -1, 6:7].expand(-1, len(QUANTILES))
        outs = []
        for k in range(horizon):                    # unrolled: horizon is a Python int
            x = torch.cat([y, calendar[:, k]], 1)
            gx = self.x_in(x)
            gh = self.h_in(h)
            r = torch.sigmoid(gx[:, :HIDDEN] + gh[:, :HIDDEN])
            u = torch.sigmoid(gx[:, HIDDEN:2 * HIDDEN] + gh[:, HIDDEN:2 * HIDDEN])
            n = torch.tanh(gx[:, 2 * HIDDEN:] + r * gh[:, 2 * HIDDEN:])
            h = (1 - u) * n + u * h
            y = y + 0.1 * self.head(h)
            outs.append(y)
        return torch.stack(outs, 1)                 # (turbines, horizon, quantiles)


def clean_history(h):
    """Fill gaps by carrying the last value forward, then robust per-turbine scaling."""
    valid = ~torch.isnan(h)
    idx = torch.where(valid, torch.arange(HIST, device=h.device).view(1, -1, 1), 0)
    idx = torch.cummax(idx, dim=1).values
    h = torch.gather(torch.nan_to_num(h, nan=0.0), 1, idx)
    med = h.median(dim=1, keepdim=True).values
    q75 = torch.quantile(h, 0.75, dim=1, keepdim=True)
    q25 = torch.quantile(h, 0.25, dim=1, keepdim=True)
    scaled = (h - med) / (q75 - q25 + 1e-3)
    scaled[:, :, 6] = h[:, :, 6]                     # keep normalised power as it is
    return scaled.clamp(-6, 6)


def calendar_features(hour0):
    steps = torch.arange(MAX_H, device=DEV, dtype=torch.float32)
    hour = (hour0 + steps / 6.0) % 24
    cal = torch.stack([torch.sin(hour / 24 * 6.2832), torch.cos(hour / 24 * 6.2832),
                       steps / MAX_H, torch.ones_like(steps)], 1)
    return cal.unsqueeze(0).expand(TURBINES, -1, -1).contiguous()


def serialise(rid, fc):
    """The JSON answer: per turbine, per quantile, kW rounded to one decimal."""
    turbines = []
    for t in range(fc.shape[0]):
        turbines.append({"turbine": f"WTG{t + 1:03d}",
                         "quantiles": {f"p{int(q * 100):02d}": [round(float(v), 1) for v in fc[t, :, i]]
                                       for i, q in enumerate(QUANTILES)}})
    farm = fc.sum(0)
    return json.dumps({"request": rid, "steps": fc.shape[1], "turbines": turbines,
                       "farm_kw": {f"p{int(q * 100):02d}": [round(float(v), 1) for v in farm[:, i]]
                                   for i, q in enumerate(QUANTILES)}})


def main():
    t_start = time.perf_counter()
    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    total = WARMUP + REQUESTS
    horizons = []
    seen = set()
    for r in range(total):
        if r in RARE_AT:
            h = RARE_AT[r]
        elif r < WARMUP:
            h = STANDARD[r % 3]
        else:
            pool = list(STANDARD) * 6 + sorted(seen - set(STANDARD))
            h = int(rng.choice(pool))
        seen.add(h)
        horizons.append(h)

    model = Forecaster().to(DEV).eval()
    forecast = torch.compile(model, mode="reduce-overhead", dynamic=False)
    q = queue.Queue(maxsize=16)
    stop = threading.Event()
    th = threading.Thread(target=producer, args=(q, horizons, stop), daemon=True)
    th.start()

    first_seen = set()
    call_s = []          # (request index, horizon, first time seen, seconds in the forecaster)
    serial_s = 0.0
    farm_mean = []
    t_loop = None
    r = 0
    with torch.no_grad():
        while True:
            item = q.get()
            if item is None:
                break
            rid, horizon, hist_np, hour0 = item
            if r == WARMUP:
                torch.cuda.synchronize()
                t_loop = time.perf_counter()
            torch.cuda.nvtx.range_push(f"req {rid}")
            hist = clean_history(torch.from_numpy(hist_np).to(DEV))
            cal = calendar_features(hour0)
            torch.compiler.cudagraph_mark_step_begin()
            t0 = time.perf_counter()
            out = forecast(hist, cal, horizon)
            t1 = time.perf_counter()
            kw = (out * RATED_KW).clamp(0, RATED_KW)
            kw = torch.sort(kw, dim=2).values                  # no quantile crossing
            fc = kw.cpu().numpy()
            t2 = time.perf_counter()
            body = serialise(rid, fc)
            t3 = time.perf_counter()
            torch.cuda.nvtx.range_pop()
            if r >= WARMUP:
                call_s.append((r, horizon, horizon not in first_seen, t1 - t0))
                serial_s += t3 - t2
                farm_mean.append(float(fc[:, :, 2].sum(0).mean()))
            first_seen.add(horizon)
            if r >= WARMUP and (r - WARMUP + 1) % 40 == 0:
                print(f"request {r - WARMUP + 1}: {rid}, {horizon} steps, {len(body) / 1e3:.0f} kB answer, "
                      f"farm p50 {farm_mean[-1] / 1e3:.1f} MW")
            r += 1
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t_loop
    stop.set()
    th.join()

    cached = sorted(s for (_, _, new, s) in call_s if not new)
    typical = cached[len(cached) // 2] if cached else 0.0
    excess = sum(max(0.0, s - 3 * typical) for (_, _, _, s) in call_s)
    new_calls = [(i, h, s) for (i, h, new, s) in call_s if new]
    graphs = None
    try:
        from torch._dynamo.utils import counters
        graphs = counters["stats"].get("unique_graphs")
    except Exception:
        pass
    for i, h, s in new_calls:
        print(f"  request {i - WARMUP + 1}: new horizon {h}: {s:.2f} s in the forecaster")
    print(f"timed loop: {REQUESTS} requests in {loop_s:.2f} s, {len(new_calls)} new horizons, "
          f"cached forecaster call {typical * 1e3:.2f} ms, dynamo graphs {graphs}; "
          f"total {time.perf_counter() - t_start:.1f} s")
    print(f"GROUND TRUTH: planted=compilation share={excess / loop_s:.3f} compile_s={excess:.2f} "
          f"loop_s={loop_s:.2f} new_horizons={len(new_calls)} serialise_share={serial_s / loop_s:.3f} "
          f"requests={REQUESTS} warmup={WARMUP}")


if __name__ == "__main__":
    main()
