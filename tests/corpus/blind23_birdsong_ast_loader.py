"""Bird-song species classification (24 species) with an audio spectrogram transformer.

Clips are 5 s at 32 kHz, synthesised on the fly by the Dataset: each species has its own
song (chirp sweeps with harmonics, trills, buzzes), placed 2-5 times in the clip, over
pink noise, wind and rain drops, plus a quieter song of another species (a mix-in
augmentation). The Dataset then computes a 128-band log-mel spectrogram in numpy
(1024-sample Hann frames, hop 320, 500 frames) and applies SpecAugment masks. A
DataLoader with 6 worker processes feeds a 12-layer AST-style transformer (16x16 patches,
stride 10: 588 tokens, width 640) trained in bf16 autocast with AdamW.

NVTX: one range per training step, "e0/b000" ... "e1/b014" (epoch / batch), which covers
the wait for the batch too; a "val e0" range after each epoch. The first 3 steps of epoch
0 are warm-up (worker start-up). BLIND_SMALL=1 runs a tiny model on 2 workers.
"""
import math
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

SMALL = os.environ.get("BLIND_SMALL") == "1"
DEV = "cuda"
SR = 32000
CLIP_S = 1.0 if SMALL else 5.0
N_FFT = 1024
HOP = 320
N_MELS = 64 if SMALL else 128
SPECIES = 24
BATCH = 8 if SMALL else 48
BATCHES_PER_EPOCH = 3 if SMALL else 15
EPOCHS = 2 if SMALL else 2
WARMUP = 1 if SMALL else 3
WORKERS = 2 if SMALL else 6
WIDTH = 64 if SMALL else 640
DEPTH = 2 if SMALL else 12
HEADS = 4 if SMALL else 10
VAL_BATCHES = 1 if SMALL else 1


def mel_filterbank(n_fft=N_FFT, n_mels=N_MELS, sr=SR, fmin=150.0, fmax=15000.0):
    def hz_to_mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)

    def mel_to_hz(m):
        return 700.0 * (10 ** (m / 2595.0) - 1.0)

    mels = np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2)
    hz = mel_to_hz(mels)
    bins = np.fft.rfftfreq(n_fft, 1.0 / sr)
    fb = np.zeros((n_mels, bins.size), np.float32)
    for m in range(n_mels):
        lo, c, hi = hz[m], hz[m + 1], hz[m + 2]
        up = (bins - lo) / (c - lo)
        down = (hi - bins) / (hi - c)
        fb[m] = np.clip(np.minimum(up, down), 0.0, None)
    return fb


def species_song(sp):
    """Fixed per-species song parameters."""
    r = np.random.default_rng(1000 + sp)
    n_syl = int(r.integers(2, 6))
    syl = []
    for _ in range(n_syl):
        kind = int(r.integers(0, 3))               # 0 chirp sweep, 1 trill, 2 buzz
        f0 = r.uniform(1500, 7000)
        f1 = f0 * r.uniform(0.6, 1.8)
        dur = r.uniform(0.05, 0.35)
        harm = int(r.integers(1, 4))
        rate = r.uniform(15, 60)
        syl.append((kind, f0, f1, dur, harm, rate))
    gap = r.uniform(0.02, 0.12)
    return syl, gap


SONGS = [species_song(s) for s in range(SPECIES)]


def render_song(sp, rng, n):
    out = np.zeros(n, np.float32)
    syl, gap = SONGS[sp]
    t_pos = int(rng.uniform(0, 0.15) * n)
    for _ in range(int(rng.integers(2, 6))):
        pitch = rng.uniform(0.94, 1.06)
        for kind, f0, f1, dur, harm, rate in syl:
            m = int(dur * SR)
            if t_pos + m >= n:
                return out
            t = np.arange(m) / SR
            f = (f0 + (f1 - f0) * t / dur) * pitch
            phase = 2 * np.pi * np.cumsum(f) / SR
            env = np.sin(np.pi * t / dur) ** 2
            if kind == 1:
                env = env * (0.5 + 0.5 * np.sign(np.sin(2 * np.pi * rate * t)))
            sig = np.zeros(m)
            for h in range(1, harm + 1):
                sig += np.sin(h * phase) / h
            if kind == 2:
                sig = sig * (1 + 0.8 * rng.standard_normal(m))
            out[t_pos:t_pos + m] += (env * sig).astype(np.float32)
            t_pos += m + int(gap * SR)
        t_pos += int(rng.uniform(0.2, 0.8) * SR)
    return out


class BirdsongClips(Dataset):
    def __init__(self, n_items, seed):
        self.n_items = n_items
        self.seed = seed
        self.fb = mel_filterbank()
        self.window = np.hanning(N_FFT).astype(np.float32)

    def __len__(self):
        return self.n_items

    def __getitem__(self, i):
        rng = np.random.default_rng([self.seed, i])
        n = int(CLIP_S * SR)
        sp = int(rng.integers(0, SPECIES))
        x = render_song(sp, rng, n) * rng.uniform(0.3, 1.0)
        other = int(rng.integers(0, SPECIES))
        x += render_song(other, rng, n) * rng.uniform(0.05, 0.2)
        # pink noise by spectral shaping, low-passed wind, rain impulses
        spec = np.fft.rfft(rng.standard_normal(n))
        freqs = np.fft.rfftfreq(n, 1.0 / SR)
        spec /= np.sqrt(np.maximum(freqs, 20.0))
        pink = np.fft.irfft(spec, n)
        x += (pink / (np.abs(pink).max() + 1e-9) * rng.uniform(0.02, 0.2)).astype(np.float32)
        wind = np.cumsum(rng.standard_normal(n)) * 1e-3
        c = np.concatenate([[0.0], np.cumsum(wind)])
        smooth = np.empty(n)
        smooth[400:n - 400] = (c[801:] - c[:-801]) / 801.0            # 801-sample moving mean
        smooth[:400], smooth[n - 400:] = smooth[400], smooth[n - 401]
        x += (wind - smooth).astype(np.float32)
        if rng.uniform() < 0.3:
            drops = rng.integers(0, n - 200, int(rng.integers(20, 200)))
            for d in drops:
                x[d:d + 200] += np.exp(-np.arange(200) / 30.0) * rng.uniform(-0.3, 0.3)
        # log-mel spectrogram
        xp = np.pad(x, (N_FFT // 2, N_FFT // 2), mode="reflect")
        frames = np.lib.stride_tricks.sliding_window_view(xp, N_FFT)[::HOP][: n // HOP]
        power = np.abs(np.fft.rfft(frames * self.window, axis=1)) ** 2
        mel = np.log10(power @ self.fb.T + 1e-6).T                   # (mels, frames)
        mel = (mel - mel.mean()) / (mel.std() + 1e-6)
        # SpecAugment: two frequency and two time masks
        for _ in range(2):
            w = int(rng.integers(0, N_MELS // 8))
            f0 = int(rng.integers(0, N_MELS - w))
            mel[f0:f0 + w] = 0.0
            w = int(rng.integers(0, mel.shape[1] // 10))
            t0 = int(rng.integers(0, mel.shape[1] - w))
            mel[:, t0:t0 + w] = 0.0
        return torch.from_numpy(mel.astype(np.float32)).unsqueeze(0), sp


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.n1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.n2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.n2(x))


class AST(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(1, WIDTH, kernel_size=16, stride=10)
        n_tok = ((N_MELS - 16) // 10 + 1) * ((int(CLIP_S * SR) // HOP - 16) // 10 + 1)
        self.cls = nn.Parameter(torch.zeros(1, 1, WIDTH))
        self.pos = nn.Parameter(torch.randn(1, n_tok + 1, WIDTH) * 0.02)
        self.blocks = nn.ModuleList([Block(WIDTH, HEADS) for _ in range(DEPTH)])
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, SPECIES)
        self.n_tok = n_tok

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x[:, 0]))


def main():
    t_start = time.perf_counter()
    torch.manual_seed(0)
    train_set = BirdsongClips(BATCH * BATCHES_PER_EPOCH, seed=11)
    loader = DataLoader(train_set, batch_size=BATCH, shuffle=True, num_workers=WORKERS,
                        pin_memory=True, persistent_workers=True, prefetch_factor=4,
                        drop_last=True)
    val_set = BirdsongClips(BATCH * VAL_BATCHES, seed=12)
    val = [(x.to(DEV), y.to(DEV)) for x, y in DataLoader(val_set, batch_size=BATCH, num_workers=0)]
    model = AST().to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4, weight_decay=0.05)
    nparam = sum(p.numel() for p in model.parameters())
    print(f"AST: {DEPTH} layers, width {WIDTH}, {model.n_tok} tokens, {nparam / 1e6:.1f} M parameters; "
          f"{WORKERS} loader workers, batch {BATCH}")

    wait_s = 0.0
    step_events = []
    steps_done = 0
    timed_steps = 0
    t_loop = None
    for ep in range(EPOCHS):
        it = iter(loader)
        for bi in range(BATCHES_PER_EPOCH):
            if steps_done == WARMUP:
                torch.cuda.synchronize()
                t_loop = time.perf_counter()
            timed = steps_done >= WARMUP
            torch.cuda.nvtx.range_push(f"e{ep}/b{bi:03d}")
            t0 = time.perf_counter()
            x, y = next(it)
            t1 = time.perf_counter()
            x = x.to(DEV, non_blocking=True)
            y = y.to(DEV, non_blocking=True)
            if timed:
                wait_s += t1 - t0
                e0 = torch.cuda.Event(enable_timing=True)
                e1 = torch.cuda.Event(enable_timing=True)
                e0.record()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(x)
                loss = F.cross_entropy(logits.float(), y, label_smoothing=0.1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if timed:
                e1.record()
                step_events.append((e0, e1))
                timed_steps += 1
            torch.cuda.nvtx.range_pop()
            steps_done += 1
            if bi % 10 == 9:
                print(f"e{ep}/b{bi:03d}: loss {loss.item():.3f}")
        torch.cuda.nvtx.range_push(f"val e{ep}")
        model.eval()
        correct = 0
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            for xv, yv in val:
                correct += int((model(xv).argmax(1) == yv).sum().item())
        model.train()
        torch.cuda.nvtx.range_pop()
        print(f"epoch {ep}: validation accuracy {correct / (len(val) * BATCH):.3f}")
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t_loop
    gpu_s = sum(a.elapsed_time(b) for a, b in step_events) / 1000.0
    print(f"timed loop: {timed_steps} steps in {loop_s:.2f} s ({loop_s / timed_steps * 1e3:.0f} ms/step); "
          f"total {time.perf_counter() - t_start:.1f} s")
    print(f"GROUND TRUTH: planted=input-bound share={wait_s / loop_s:.3f} wait_s={wait_s:.2f} "
          f"loop_s={loop_s:.2f} gpu_step_share={gpu_s / loop_s:.3f} steps={timed_steps} "
          f"warmup={WARMUP} workers={WORKERS}")


if __name__ == "__main__":
    main()
