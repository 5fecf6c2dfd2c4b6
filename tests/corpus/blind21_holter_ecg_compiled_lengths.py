"""Holter ECG screening service: rhythm classification of 2-hour, 3-lead ambulatory recordings.

The clinic's nightly batch: recordings arrive from a mix of recorder models; each is uploaded as
raw int16 ADC counts, band-pass filtered (0.5-40 Hz FIR), cut into 10-second windows, z-scored per
window and classified (normal sinus, AF, flutter, VT, pause, noise ...) by a 1-D ResNet with
squeeze-excitation, compiled with torch.compile for throughput (static shapes: the last batch of
a recording is padded to the full batch). The rhythm burden per recording is written to the report
queue. Start-up (recorder templates, model, compile on the common 500 Hz recorder), warm-up
recordings, the timed recordings with a progress line every 20 recordings, teardown.
"""
import collections
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SMALL = os.environ.get("BLIND_SMALL") == "1"
DEV = "cuda"
LEADS, CLASSES = 3, 10
WINDOW_S = 10
HOURS = 0.02 if SMALL else 2.0
BATCH = 8 if SMALL else 64
WIDTH = 8 if SMALL else 64
WARMUP = 2 if SMALL else 3
RECORDS = 4 if SMALL else 100
# recorder models in the clinic's fleet: sampling rate (Hz); the 500 Hz one dominates
RECORDERS = {"CardioMem-5": 500, "Lifecard-CF": 360, "DR180+": 250, "SEER-1000": 1000}
nvtx = torch.cuda.nvtx


def recorder_template(fs, rng):
    """A synthetic 3-lead recording at sampling rate fs (int16 counts, 200 counts/mV): a
    ten-minute strip (heart-rate variability, baseline wander, noise) repeated for the duration."""
    reps = max(1, int(round(HOURS * 6)))
    n = int(HOURS * 3600 * fs) // reps
    t = np.arange(n, dtype=np.float64) / fs
    hr = 1.1 + 0.2 * np.sin(2 * np.pi * t / 600.0)
    phase = np.mod(np.cumsum(hr) / fs, 1.0)
    beat = (np.exp(-((phase - 0.3) / 0.012) ** 2) * 1.2 - np.exp(-((phase - 0.28) / 0.01) ** 2)
            * 0.2 + np.exp(-((phase - 0.55) / 0.05) ** 2) * 0.3)
    leads = np.stack([beat, 0.7 * beat, -0.4 * beat]) + 0.05 * np.sin(2 * np.pi * 0.3 * t)
    leads += rng.normal(0, 0.03, size=leads.shape)
    return np.tile((leads * 200).astype(np.int16), (1, reps))


def fir_bandpass(fs, taps=129):
    n = np.arange(taps) - (taps - 1) / 2
    def lp(fc):
        return 2 * fc / fs * np.sinc(2 * fc / fs * n)
    h = (lp(40.0) - lp(0.5)) * np.hamming(taps)
    return torch.tensor(h, dtype=torch.float32, device=DEV).view(1, 1, -1).repeat(LEADS, 1, 1)


class SEBlock(nn.Module):
    def __init__(self, c, stride):
        super().__init__()
        self.c1 = nn.Conv1d(c if stride == 1 else c // 2, c, 7, stride, 3, bias=False)
        self.b1 = nn.BatchNorm1d(c)
        self.c2 = nn.Conv1d(c, c, 7, 1, 3, bias=False)
        self.b2 = nn.BatchNorm1d(c)
        self.se1, self.se2 = nn.Linear(c, c // 8), nn.Linear(c // 8, c)
        self.short = (nn.Sequential(nn.Conv1d(c // 2, c, 1, stride, bias=False),
                                    nn.BatchNorm1d(c)) if stride > 1 else nn.Identity())

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        w = torch.sigmoid(self.se2(F.relu(self.se1(y.mean(-1)))))[..., None]
        return F.relu(y * w + self.short(x))


class RhythmNet(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv1d(LEADS, w, 15, 2, 7, bias=False), nn.BatchNorm1d(w),
                                  nn.ReLU())
        blocks = [SEBlock(w, 1)]
        c = w
        for _ in range(3):
            c *= 2
            blocks += [SEBlock(c, 2), SEBlock(c, 1)]
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(c, CLASSES)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean(-1))


def main():
    rng = np.random.default_rng(8)
    torch.manual_seed(8)
    templates = {name: recorder_template(fs, rng) for name, fs in RECORDERS.items()}
    filters = {fs: fir_bandpass(fs) for fs in RECORDERS.values()}
    model = RhythmNet(WIDTH).to(DEV).eval()
    cmodel = torch.compile(model, dynamic=False)

    # tonight's worklist: mostly the 500 Hz recorder; the other models show up now and then
    names = list(RECORDERS)
    order = ["CardioMem-5"] * (WARMUP + RECORDS)
    first = {"Lifecard-CF": WARMUP + RECORDS // 10, "DR180+": WARMUP + 2 * RECORDS // 5,
             "SEER-1000": WARMUP + 7 * RECORDS // 10}
    for name, at in first.items():
        for k in range(at, WARMUP + RECORDS, 6 + names.index(name)):
            order[k] = name
    worklist = collections.deque((i, name, int(rng.integers(0, 1 << 20)))
                                 for i, name in enumerate(order))
    seen_lengths = set()
    compile_s = 0.0
    compiles = 0
    reports = []

    @torch.no_grad()
    def analyse(rec_id, name, shift, timed):
        nonlocal compile_s, compiles
        fs = RECORDERS[name]
        L = WINDOW_S * fs
        nvtx.range_push(f"recording {rec_id} {name}")
        raw = torch.from_numpy(templates[name]).to(DEV)
        x = torch.roll(raw.float() / 200.0, shift % raw.shape[1], 1)
        x = F.conv1d(x[None], filters[fs], padding=filters[fs].shape[-1] // 2, groups=LEADS)[0]
        n_win = x.shape[1] // L
        win = x[:, :n_win * L].reshape(LEADS, n_win, L).transpose(0, 1)
        win = (win - win.mean(-1, keepdim=True)) / (win.std(-1, keepdim=True) + 1e-3)
        counts = torch.zeros(CLASSES, device=DEV)
        for b0 in range(0, n_win, BATCH):
            xb = win[b0:b0 + BATCH]
            valid = xb.shape[0]
            if valid < BATCH:
                xb = F.pad(xb, (0, 0, 0, 0, 0, BATCH - valid))
            xb = xb.contiguous()
            if L not in seen_lengths:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                nvtx.range_push(f"first batch at {L} samples")
                logits = cmodel(xb)
                torch.cuda.synchronize()
                nvtx.range_pop()
                if timed:
                    compile_s += time.perf_counter() - t0
                    compiles += 1
                seen_lengths.add(L)
            else:
                logits = cmodel(xb)
            counts += torch.bincount(logits[:valid].argmax(1), minlength=CLASSES).float()
        burden = (counts / counts.sum()).cpu().numpy()
        nvtx.range_pop()
        return burden

    for _ in range(WARMUP):
        analyse(*worklist.popleft(), timed=False)
    torch.cuda.synchronize()

    t_loop = time.perf_counter()
    done = 0
    while worklist:
        rec_id, name, shift = worklist.popleft()
        burden = analyse(rec_id, name, shift, timed=True)
        reports.append((rec_id, name, float(burden[1])))
        done += 1
        if done % 20 == 0:
            print(f"{done:4d} recordings  {time.perf_counter() - t_loop:6.1f} s  "
                  f"last AF burden {reports[-1][2]:.3f}")
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t_loop
    mix = collections.Counter(n for _, n, _ in reports)
    print(f"recorder mix {dict(mix)}; window lengths compiled {sorted(seen_lengths)}")
    print(f"GROUND TRUTH: compilation: first call of the compiled model at each new window length "
          f"({compiles} recompiles, dynamic=False) {compile_s:.2f} s of the {loop_s:.2f} s timed "
          f"loop ({100 * compile_s / loop_s:.0f}%); {RECORDS} timed recordings after {WARMUP} "
          f"warm-up recordings")


if __name__ == "__main__":
    main()
