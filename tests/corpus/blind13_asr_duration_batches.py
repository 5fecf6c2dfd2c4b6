"""Corpus (blind, batch 13): CTC speech recognition fed by duration-packed batches.

Expected verdict: tests/corpus/BLIND13_EXPECTED.md.

A CTC acoustic model (2 strided convolutions, 12 Transformer encoder layers of width 512, a
character head) is trained on 720 synthetic utterances of 1-16 s. The input pipeline is the usual
one for speech: a DataLoader with 2 worker processes whose Dataset "decodes" each utterance (here:
synthesises a 16 kHz waveform of voiced segments with a drifting pitch, harmonics, formant-like
resonances and noise), then computes 80-band log-mel features in NumPy (pre-emphasis, 25 ms Hann
frames every 10 ms, 512-point rFFT, mel filterbank, log, per-utterance mean/variance
normalisation) and applies SpecAugment. A batch sampler packs utterances of similar length into
batches of at most 240 s of audio, so the number of steps per epoch depends on the drawn durations.
The workers are not persistent: each epoch starts new ones. bf16 autocast, AdamW, CTC loss; the
loss is read every 10 steps. Two epochs; the first 3 batches of the first epoch are a warm-up.

The last line printed gives the seconds the training loop spent waiting in next() on the
DataLoader iterator against the loop's total, and the number of steps.
"""
import math
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

DEVICE = "cuda"
SAMPLE_RATE = 16000
N_UTTERANCES = 720
MAX_BATCH_SECONDS = 240.0
EPOCHS = 2
WARMUP_BATCHES = 3
NUM_WORKERS = 2
N_FFT, HOP, WIN = 512, 160, 400
N_MELS = 80
ALPHABET = " abcdefghijklmnopqrstuvwxyz'"     # index 0 is the CTC blank
CHARS_PER_SECOND = 14


def mel_filterbank(n_fft, n_mels, sr, fmin=20.0, fmax=7600.0):
    def hz_to_mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)

    def mel_to_hz(m):
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)

    mels = np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2)
    bins = np.floor((n_fft + 1) * mel_to_hz(mels) / sr).astype(int)
    fb = np.zeros((n_mels, n_fft // 2 + 1), dtype=np.float32)
    for m in range(1, n_mels + 1):
        lo, mid, hi = bins[m - 1], bins[m], bins[m + 1]
        for k in range(lo, mid):
            fb[m - 1, k] = (k - lo) / max(1, mid - lo)
        for k in range(mid, hi):
            fb[m - 1, k] = (hi - k) / max(1, hi - mid)
    return fb


class SyntheticSpeech(Dataset):
    """Utterance i: its duration and transcript are fixed at construction; audio made on access."""

    def __init__(self, n, seed=0):
        rng = np.random.default_rng(seed)
        self.durations = np.clip(rng.lognormal(mean=math.log(5.5), sigma=0.55, size=n), 1.0, 16.0)
        self.transcripts = []
        for d in self.durations:
            length = max(4, int(d * CHARS_PER_SECOND * rng.uniform(0.8, 1.1)))
            self.transcripts.append(rng.integers(1, len(ALPHABET), size=length))
        self.seed = seed
        self.window = np.hanning(WIN).astype(np.float32)
        self.mel = mel_filterbank(N_FFT, N_MELS, SAMPLE_RATE)

    def __len__(self):
        return len(self.durations)

    def decode_audio(self, i, rng):
        n = int(self.durations[i] * SAMPLE_RATE)
        t = np.arange(n, dtype=np.float32) / SAMPLE_RATE
        # Voiced segments with a drifting pitch; formant-ish resonances weight the harmonics.
        pitch = 110 + 40 * np.sin(2 * np.pi * rng.uniform(0.2, 0.7) * t + rng.uniform(0, 6.28))
        phase = (2 * np.pi / SAMPLE_RATE) * np.cumsum(pitch, dtype=np.float64)
        formants = rng.uniform([500, 1200, 2400], [800, 1800, 3200])
        audio = np.zeros(n, dtype=np.float32)
        f0 = float(pitch.mean())
        for h in range(1, 6):
            gain = sum(math.exp(-((h * f0 - fm) / 400.0) ** 2) for fm in formants) + 0.3 / h
            audio += np.float32(gain) * np.sin(h * phase).astype(np.float32)
        # Syllable-rate on/off envelope, smoothed with a 25 ms moving average.
        envelope = (np.sin(2 * np.pi * rng.uniform(2, 5) * t) > -0.3).astype(np.float32)
        c = np.concatenate(([0.0], np.cumsum(envelope, dtype=np.float64)))
        smooth = (c[np.minimum(np.arange(n) + 200, n)] - c[np.maximum(np.arange(n) - 200, 0)]) / 400
        audio = audio * smooth.astype(np.float32)
        audio += 0.02 * rng.standard_normal(n, dtype=np.float32)
        return audio

    def log_mel(self, audio):
        audio = np.append(audio[0], audio[1:] - 0.97 * audio[:-1])
        n_frames = 1 + max(0, len(audio) - WIN) // HOP
        frames = np.lib.stride_tricks.as_strided(
            audio, shape=(n_frames, WIN), strides=(audio.strides[0] * HOP, audio.strides[0]))
        spec = np.fft.rfft(frames * self.window, n=N_FFT)
        power = (spec.real ** 2 + spec.imag ** 2).astype(np.float32)
        feats = np.log(power @ self.mel.T + 1e-6)
        return (feats - feats.mean(0)) / (feats.std(0) + 1e-5)

    def spec_augment(self, feats, rng):
        feats = feats.copy()
        for _ in range(2):
            w = rng.integers(0, 15)
            f0 = rng.integers(0, N_MELS - w)
            feats[:, f0:f0 + w] = 0
        for _ in range(2):
            w = rng.integers(0, min(40, max(1, len(feats) // 5)))
            t0 = rng.integers(0, max(1, len(feats) - w))
            feats[t0:t0 + w, :] = 0
        return feats

    def __getitem__(self, i):
        rng = np.random.default_rng((self.seed, i, torch.initial_seed() % 2**32))
        feats = self.spec_augment(self.log_mel(self.decode_audio(i, rng)), rng)
        return torch.from_numpy(feats), torch.from_numpy(self.transcripts[i])


class DurationBatchSampler(Sampler):
    """Sorts utterances by duration inside shuffled pools, then packs batches up to a total
    duration; the batches are shuffled. The batch count depends on the durations."""

    def __init__(self, durations, max_seconds, pool=96, seed=0):
        self.durations = durations
        self.max_seconds = max_seconds
        self.pool = pool
        self.seed = seed
        self.epoch = 0

    def batches(self):
        rng = np.random.default_rng(self.seed + self.epoch)
        order = rng.permutation(len(self.durations))
        out = []
        for p in range(0, len(order), self.pool):
            pool = sorted(order[p:p + self.pool], key=lambda i: self.durations[i])
            batch, longest = [], 0.0
            for i in pool:
                d = self.durations[i]
                # Padded cost: every utterance padded to the longest in the batch.
                if batch and max(longest, d) * (len(batch) + 1) > self.max_seconds:
                    out.append(batch)
                    batch, longest = [], 0.0
                batch.append(int(i))
                longest = max(longest, d)
            if batch:
                out.append(batch)
        rng.shuffle(out)
        return out

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        return iter(self.batches())

    def __len__(self):
        return len(self.batches())


def collate(items):
    feats, targets = zip(*items)
    feat_lens = torch.tensor([len(f) for f in feats])
    target_lens = torch.tensor([len(t) for t in targets])
    x = nn.utils.rnn.pad_sequence(feats, batch_first=True)
    return x, feat_lens, torch.cat(targets), target_lens


class ConvSubsample(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 64, 3, 2), nn.GELU(), nn.Conv2d(64, 64, 3, 2), nn.GELU())
        self.proj = nn.Linear(64 * (((N_MELS - 1) // 2 - 1) // 2), d_model)

    def forward(self, x):                       # (B, T, F)
        x = self.conv(x.unsqueeze(1))           # (B, C, T', F')
        b, c, t, f = x.shape
        return self.proj(x.permute(0, 2, 1, 3).reshape(b, t, c * f))


class CTCModel(nn.Module):
    def __init__(self, d_model=512, layers=12):
        super().__init__()
        self.sub = ConvSubsample(d_model)
        layer = nn.TransformerEncoderLayer(d_model, 8, 2048, dropout=0.1, batch_first=True,
                                           norm_first=True, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, len(ALPHABET))

    def forward(self, x, lens):
        h = self.sub(x)
        out_lens = ((lens - 1) // 2 - 1) // 2
        pad = torch.arange(h.shape[1], device=h.device)[None] >= out_lens[:, None]
        h = self.encoder(h, src_key_padding_mask=pad)
        return self.head(h), out_lens


def main():
    torch.manual_seed(0)
    dataset = SyntheticSpeech(N_UTTERANCES)
    sampler = DurationBatchSampler(dataset.durations, MAX_BATCH_SECONDS)
    model = CTCModel().to(DEVICE)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01)
    ctc = nn.CTCLoss(blank=0, zero_infinity=True)

    step = 0
    wait_s = 0.0
    loop_s = 0.0
    steps = 0
    loop_start = None
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        loader = DataLoader(dataset, batch_sampler=sampler, num_workers=NUM_WORKERS,
                            collate_fn=collate, pin_memory=True)
        it = iter(loader)
        n_batches = len(sampler)
        for b in range(n_batches):
            t0 = time.perf_counter()
            x, x_lens, targets, target_lens = next(it)
            t1 = time.perf_counter()
            if loop_start is None and step == WARMUP_BATCHES:
                loop_start = t0
            if loop_start is not None:
                wait_s += t1 - t0
                steps += 1
            x = x.to(DEVICE, non_blocking=True)
            x_lens = x_lens.to(DEVICE, non_blocking=True)
            targets = targets.to(DEVICE, non_blocking=True)
            target_lens = target_lens.to(DEVICE, non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits, out_lens = model(x, x_lens)
            log_probs = F.log_softmax(logits.float(), dim=-1).transpose(0, 1)
            loss = ctc(log_probs, targets, out_lens, target_lens)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            if step % 10 == 0:
                print(f"epoch {epoch} step {step} ({b + 1}/{n_batches}): batch {x.shape[0]}x"
                      f"{x.shape[1]} frames, loss {loss.item():.3f}", flush=True)
            step += 1
        del it, loader
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - loop_start
    print(f"input: waiting in next() on the DataLoader {wait_s:.2f} s of loop {loop_s:.2f} s; "
          f"{steps} steps after {WARMUP_BATCHES} warm-up batches ({step} in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
