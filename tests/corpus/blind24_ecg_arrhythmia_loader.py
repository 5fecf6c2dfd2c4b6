# blind24_ecg_arrhythmia_loader.py: 12-lead ECG arrhythmia classifier fed by a synthesising loader.
#
# Each dataset item is a 10 s, 12-lead, 500 Hz ECG synthesised on the fly in numpy: a beat
# template (P wave, QRS complex, T wave as Gaussian bumps) placed at RR intervals drawn for the
# record's rhythm class (sinus, atrial fibrillation, ventricular ectopy, bradycardia, tachycardia),
# projected onto the 12 leads, plus baseline wander, 50 Hz mains hum and EMG noise, then
# band-passed 0.5-40 Hz with an FFT filter, per-lead standardised, with a handful of heart-rate
# features (RR statistics from a crude R-peak detector). The classifier is a small 1D residual
# network. Three DataLoader workers cannot synthesise batches of 32 records as fast as the GPU
# trains on them: the training loop waits in next() for the loader.
#
# 3 warm-up steps, then 24 timed steps. GROUND TRUTH: time spent waiting for the next batch
# over the timed loop's wall time. BLIND_SMALL=1: fewer, shorter records for a CPU check.
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

SMALL = os.environ.get("BLIND_SMALL") == "1"
FS = 500
SECONDS = 4 if SMALL else 10
N_LEADS = 12
BATCH = 8 if SMALL else 32
WORKERS = 2 if SMALL else 3
WARMUP = 2 if SMALL else 3
TIMED = 4 if SMALL else 24
CLASSES = ["sinus", "afib", "pvc", "brady", "tachy"]
DEV = "cuda"

# lead projection of the cardiac dipole (rough Dower-like coefficients)
LEAD_DIR = np.array(
    [[0.63, -0.24, 0.09], [0.87, 0.37, -0.05], [0.25, 0.61, -0.14], [-0.75, -0.07, 0.02],
     [0.44, -0.43, 0.12], [0.56, 0.49, -0.10], [-0.48, 0.03, -0.68], [-0.01, 0.06, -0.82],
     [0.34, 0.12, -0.64], [0.76, 0.09, -0.31], [0.83, 0.10, 0.05], [0.72, 0.14, 0.27]],
    dtype=np.float64)


def _bump(t, centre, width, amp):
    return amp * np.exp(-0.5 * ((t - centre) / width) ** 2)


class SyntheticECG(Dataset):
    def __init__(self, n_items, seed):
        self.n = n_items
        self.seed = seed
        n = FS * SECONDS
        f = np.fft.rfftfreq(n, 1.0 / FS)
        # 4th-order-like Butterworth band-pass magnitude, 0.5-40 Hz
        hp = 1.0 / np.sqrt(1.0 + (0.5 / np.maximum(f, 1e-6)) ** 8)
        lp = 1.0 / np.sqrt(1.0 + (f / 40.0) ** 8)
        self.band = hp * lp

    def __len__(self):
        return self.n

    def _rr_intervals(self, rng, label):
        base = {"sinus": 0.85, "afib": 0.70, "pvc": 0.85, "brady": 1.35, "tachy": 0.45}[label]
        rr = []
        t = 0.0
        while t < SECONDS + 1.0:
            if label == "afib":
                r = base * rng.uniform(0.55, 1.45)
            else:
                r = base * (1.0 + 0.04 * np.sin(2 * np.pi * 0.25 * t) + 0.02 * rng.standard_normal())
            rr.append(r)
            t += r
        return np.array(rr)

    def __getitem__(self, idx):
        rng = np.random.default_rng(self.seed * 1_000_003 + idx)
        label_i = int(rng.integers(len(CLASSES)))
        label = CLASSES[label_i]
        n = FS * SECONDS
        t = np.arange(n) / FS
        rr = self._rr_intervals(rng, label)
        beats = np.cumsum(rr) - rr[0] * rng.uniform(0.2, 1.0)
        dipole = np.zeros((3, n))
        axis_jitter = rng.normal(0.0, 0.08, size=(3, 3)) + np.eye(3)
        for k, b in enumerate(beats):
            if b < -0.5 or b > SECONDS + 0.5:
                continue
            lo = max(0, int((b - 0.35) * FS))
            hi = min(n, int((b + 0.55) * FS))
            if hi <= lo:
                continue
            tt = t[lo:hi]
            ectopic = label == "pvc" and rng.random() < 0.25
            if ectopic:
                qrs = _bump(tt, b, 0.035, 1.6) - _bump(tt, b + 0.06, 0.04, 0.7)
                p = np.zeros_like(tt)
                tw = -_bump(tt, b + 0.32, 0.07, 0.45)
            else:
                qrs = (_bump(tt, b, 0.012, 1.1) - _bump(tt, b - 0.025, 0.01, 0.15)
                       - _bump(tt, b + 0.025, 0.012, 0.25))
                p = np.zeros_like(tt) if label == "afib" else _bump(tt, b - 0.17, 0.025, 0.15)
                tw = _bump(tt, b + 0.28, 0.06, 0.3)
            wave = np.stack([qrs + p + tw, 0.6 * qrs + 0.5 * p + 0.8 * tw, 0.3 * qrs - 0.2 * tw])
            dipole[:, lo:hi] += axis_jitter @ wave
        if label == "afib":
            dipole[0] += 0.05 * np.sin(2 * np.pi * rng.uniform(5, 8) * t + rng.uniform(0, 6))
        leads = LEAD_DIR @ dipole
        wander = 0.2 * np.sin(2 * np.pi * rng.uniform(0.1, 0.4) * t + rng.uniform(0, 6, size=(N_LEADS, 1)))
        mains = 0.03 * np.sin(2 * np.pi * 50.0 * t + rng.uniform(0, 6, size=(N_LEADS, 1)))
        emg = 0.02 * rng.standard_normal((N_LEADS, n))
        x = leads + wander + mains + emg
        # FFT band-pass, then standardise each lead
        spec = np.fft.rfft(x, axis=1) * self.band
        x = np.fft.irfft(spec, n=n, axis=1)
        x = (x - x.mean(axis=1, keepdims=True)) / (x.std(axis=1, keepdims=True) + 1e-6)
        # crude R-peak detector on lead II for RR features
        env = np.abs(np.gradient(x[1]))
        env = np.convolve(env, np.ones(40) / 40.0, mode="same")
        thr = 0.5 * env.max()
        peaks = []
        last = -FS
        for i in range(1, n - 1):
            if env[i] > thr and env[i] >= env[i - 1] and env[i] >= env[i + 1] and i - last > 0.25 * FS:
                peaks.append(i)
                last = i
        rr_obs = np.diff(np.array(peaks, dtype=np.float64)) / FS if len(peaks) > 2 else np.array([1.0, 1.0])
        feats = np.array([rr_obs.mean(), rr_obs.std(), np.abs(np.diff(rr_obs)).mean() if len(rr_obs) > 1 else 0.0,
                          len(peaks) / SECONDS], dtype=np.float32)
        return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(feats), label_i


class ResBlock1d(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv1d(cin, cout, 15, stride=stride, padding=7, bias=False)
        self.b1 = nn.BatchNorm1d(cout)
        self.c2 = nn.Conv1d(cout, cout, 15, padding=7, bias=False)
        self.b2 = nn.BatchNorm1d(cout)
        self.skip = nn.Conv1d(cin, cout, 1, stride=stride, bias=False) if (cin != cout or stride != 1) else nn.Identity()

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + self.skip(x))


class ECGNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv1d(N_LEADS, 64, 31, stride=2, padding=15, bias=False),
                                  nn.BatchNorm1d(64), nn.ReLU())
        chans = [64, 64, 128, 128, 256, 256]
        blocks = []
        for i in range(1, len(chans)):
            blocks.append(ResBlock1d(chans[i - 1], chans[i], 2 if chans[i] != chans[i - 1] else 1))
        self.blocks = nn.Sequential(*blocks)
        self.feat = nn.Linear(4, 32)
        self.head = nn.Linear(256 + 32, len(CLASSES))

    def forward(self, x, f):
        h = self.blocks(self.stem(x))
        h = h.mean(dim=2)
        return self.head(torch.cat([h, F.relu(self.feat(f))], dim=1))


def worker_init(_):
    torch.set_num_threads(1)


def main():
    torch.manual_seed(0)
    ds = SyntheticECG((WARMUP + TIMED) * BATCH, seed=7)
    loader = DataLoader(ds, batch_size=BATCH, shuffle=False, num_workers=WORKERS,
                        pin_memory=True, worker_init_fn=worker_init, prefetch_factor=2)
    model = ECGNet().to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    it = iter(loader)
    wait_s = 0.0
    loop_t0 = None
    correct = 0
    seen = 0
    for step in range(WARMUP + TIMED):
        if step == WARMUP:
            torch.cuda.synchronize()
            loop_t0 = time.perf_counter()
            wait_s = 0.0
        t0 = time.perf_counter()
        x, f, y = next(it)
        wait_s += time.perf_counter() - t0
        x = x.to(DEV, non_blocking=True)
        f = f.to(DEV, non_blocking=True)
        y = y.to(DEV, non_blocking=True)
        logits = model(x, f)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        lv = loss.item()
        correct += int((logits.argmax(1) == y).sum())
        seen += y.numel()
        if step % 8 == 0:
            print(f"step {step:3d} loss {lv:.4f} acc {correct / max(seen, 1):.3f}", flush=True)
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - loop_t0
    print(f"timed loop: {TIMED} steps in {loop_s:.3f} s ({1e3 * loop_s / TIMED:.1f} ms/step), "
          f"batch {BATCH}, {WORKERS} workers")
    print(f"GROUND TRUTH: waiting for the DataLoader = {wait_s:.3f} s of {loop_s:.3f} s "
          f"= {100.0 * wait_s / loop_s:.1f}% of the timed loop (input-bound)")


if __name__ == "__main__":
    main()
