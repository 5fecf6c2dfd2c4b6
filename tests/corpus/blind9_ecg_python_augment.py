"""Corpus (blind, batch 9): ECG classification fed by two DataLoader workers running pure Python.

Program: a 12-lead ECG classifier in the style of PTB-XL baselines (records of 12 leads x 1000
samples, 10 s at 100 Hz, stored as little-endian int16 in one in-memory blob made at start-up,
as a loader reading a WFDB-like file would see it). The Dataset's __getitem__ is written in plain
Python, no NumPy: struct.unpack of the record, per lead a scaling to millivolts, baseline-wander
removal by a 101-sample running mean over the whole record, then a random 2.5 s crop with a
random time stretch (0.9-1.1, linear interpolation), a random gain, Gaussian noise from
random.gauss and a per-lead standardisation, returned with torch.tensor of nested lists (12 x
250). Timed here: ~7 ms a sample on a slower 2-core machine (~4-6 ms expected on the device), so
a batch of 32 costs a worker ~130-220 ms. The DataLoader has num_workers=2, pin_memory=True,
persistent_workers=True and prefetch_factor=4 (prefetching does not raise two workers'
throughput), so a batch arrives every ~65-110 ms; the model (a 1-D ResNet, 4 stages, 64-256
channels, bf16 autocast, AdamW, multi-label BCE over 5 superclasses) needs ~3-6 ms a batch.
No NVTX, no sync in the loop but a loss print every 10 steps. 60 steps; one line printed at the
end (seconds in next() on the loader against the loop's total).

Expected, written before it was recorded (2026-11-26): input-bound, 80-95% of the steady-state
step time, the main thread waiting in the DataLoader's next() (the pin-memory thread's queue)
for the two workers, whose time is the Python augmentation in __getitem__ (moving_average, the
interpolation loop, random.gauss); 60 steps (within 2); the first step also waits for the
workers to start and fill their first batches. Misses: cpu-work on the main thread (the main
thread is blocked, not running; the Python runs in the worker processes), gpu-bound,
launch-bound, copies (the pinned batches are 384 KB). Advice that helps: more workers (16
cores, 2 used), the signal processing vectorised (NumPy/torch, or on the GPU after the copy),
baseline removal once offline; not a larger prefetch_factor.
"""
import math
import random
import struct
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

LEADS, SAMPLES, CROP, CLASSES = 12, 1000, 250, 5
BATCH, STEPS, WORKERS = 32, 60, 2
RECORD_BYTES = LEADS * SAMPLES * 2


def make_blob(n, seed=0):
    """n synthetic records: a heartbeat-like waveform per lead, wander and noise, as int16 uV."""
    rng = np.random.default_rng(seed)
    t = np.arange(SAMPLES) / 100.0
    out = bytearray()
    for _ in range(n):
        hr = rng.uniform(0.8, 1.8)
        beat = np.sin(2 * np.pi * hr * t) ** 15
        sig = (beat[None] * rng.uniform(0.3, 1.5, (LEADS, 1))
               + 0.3 * np.sin(2 * np.pi * 0.2 * t + rng.uniform(0, 6, (LEADS, 1)))
               + 0.03 * rng.standard_normal((LEADS, SAMPLES)))
        out += (sig * 1000).astype("<i2").tobytes()
    return bytes(out), rng.integers(0, 2, (n, CLASSES)).astype(np.float32)


def moving_average(x, width):
    half, n = width // 2, len(x)
    out = [0.0] * n
    s, count = sum(x[: half + 1]), half + 1
    for i in range(n):
        out[i] = s / count
        hi, lo = i + half + 1, i - half
        if hi < n:
            s += x[hi]
            count += 1
        if lo >= 0:
            s -= x[lo]
            count -= 1
    return out


class ECGRecords(Dataset):
    def __init__(self, blob, labels):
        self.blob, self.labels = blob, labels
        self.record = struct.Struct(f"<{LEADS * SAMPLES}h")

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        r = random.Random(i)
        raw = self.record.unpack_from(self.blob, i * RECORD_BYTES)
        stretch = r.uniform(0.9, 1.1)
        offset = r.uniform(0, SAMPLES - CROP * 1.1 - 1)
        leads = []
        for lead in range(LEADS):
            x = [v * 0.001 for v in raw[lead * SAMPLES:(lead + 1) * SAMPLES]]
            wander = moving_average(x, 101)
            x = [a - b for a, b in zip(x, wander)]
            gain, last = r.uniform(0.8, 1.25), SAMPLES - 1
            y = []
            for k in range(CROP):
                p = min(offset + k * stretch, last - 1e-6)
                j = int(p)
                f = p - j
                y.append(gain * (x[j] * (1.0 - f) + x[j + 1] * f) + r.gauss(0.0, 0.01))
            mean = sum(y) / CROP
            std = math.sqrt(sum((v - mean) ** 2 for v in y) / CROP) + 1e-6
            leads.append([(v - mean) / std for v in y])
        return torch.tensor(leads), torch.from_numpy(self.labels[i])


class ResBlock1d(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv1d(cin, cout, 7, stride, 3, bias=False)
        self.bn1 = nn.BatchNorm1d(cout)
        self.conv2 = nn.Conv1d(cout, cout, 7, 1, 3, bias=False)
        self.bn2 = nn.BatchNorm1d(cout)
        self.skip = nn.Identity()
        if stride != 1 or cin != cout:
            self.skip = nn.Sequential(nn.Conv1d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm1d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.skip(x))


def build_model():
    return nn.Sequential(
        nn.Conv1d(LEADS, 64, 15, 2, 7, bias=False), nn.BatchNorm1d(64), nn.ReLU(),
        ResBlock1d(64, 64, 1), ResBlock1d(64, 128, 2), ResBlock1d(128, 128, 1),
        ResBlock1d(128, 256, 2), ResBlock1d(256, 256, 1),
        nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(256, CLASSES))


if __name__ == "__main__":
    torch.manual_seed(0)
    blob, labels = make_blob(BATCH * STEPS)
    loader = DataLoader(ECGRecords(blob, labels), batch_size=BATCH, shuffle=True, drop_last=True,
                        num_workers=WORKERS, pin_memory=True, persistent_workers=True,
                        prefetch_factor=4)
    model = build_model().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    waited, start = 0.0, time.perf_counter()
    batches = iter(loader)
    for step in range(STEPS):
        t = time.perf_counter()
        x, y = next(batches)
        waited += time.perf_counter() - t
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    print(f"steps {STEPS}; next(loader) {waited:.2f} s of {total:.2f} s")
