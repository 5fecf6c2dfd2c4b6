"""Four-stem music source separation: a spectrogram-mask U-Net trained on synthesized multitracks.

Each training example is a 6 s multitrack rendered on the fly by the Dataset (drums, bass, vocals,
"other"): additive synthesis of note sequences, a formant filter for the voice, per-stem room
reverb by FFT convolution, random gains and time shifts. The network sees the STFT magnitude of the
mixture and predicts one soft mask per stem; the loss is L1 on masked magnitudes. A fixed
validation set is rendered once at start-up; SI-SDR on it is logged every VAL_EVERY steps, and a
checkpoint is written every CKPT_EVERY steps.
"""
import io
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = "cuda"
SR = 22050
SEG_SECONDS = 6.0
BATCH = 16
WORKERS = 4
STEPS = 90
WARMUP = 6
VAL_EVERY = 30
VAL_BATCHES = 3
CKPT_EVERY = 50
N_FFT = 1024
HOP = 256
WIDTH = 32
STEMS = ("drums", "bass", "vocals", "other")


def _fft_convolve(x, h):
    n = x.shape[-1] + h.shape[-1] - 1
    nfft = 1 << (n - 1).bit_length()
    y = np.fft.irfft(np.fft.rfft(x, nfft) * np.fft.rfft(h, nfft), nfft)
    return y[..., : x.shape[-1]]


class MultitrackRenderer(torch.utils.data.Dataset):
    """Renders one random multitrack per index (deterministic in the index)."""

    def __init__(self, n_items, seed):
        self.n_items = n_items
        self.seed = seed
        self.n = int(SR * SEG_SECONDS)
        self.t = np.arange(self.n) / SR

    def __len__(self):
        return self.n_items

    def _notes(self, rng, lo, hi, count):
        midi = rng.integers(lo, hi, size=count)
        return 440.0 * 2.0 ** ((midi - 69) / 12.0)

    def _room(self, rng):
        length = int(SR * rng.uniform(0.25, 0.6))
        decay = np.exp(-np.arange(length) / (SR * rng.uniform(0.05, 0.18)))
        ir = rng.standard_normal(length) * decay
        ir[0] = 1.0 / rng.uniform(0.3, 0.9)
        return ir / np.abs(ir).sum() * 4.0

    def _drums(self, rng):
        out = np.zeros(self.n)
        bpm = rng.uniform(80, 160)
        beat = int(SR * 60.0 / bpm)
        kick_t = np.arange(int(SR * 0.25)) / SR
        kick = np.sin(2 * np.pi * (50 + 90 * np.exp(-kick_t * 30)) * kick_t) * np.exp(-kick_t * 12)
        snare = rng.standard_normal(int(SR * 0.2)) * np.exp(-np.arange(int(SR * 0.2)) / (SR * 0.04))
        hat = rng.standard_normal(int(SR * 0.05)) * np.exp(-np.arange(int(SR * 0.05)) / (SR * 0.008))
        for k, pos in enumerate(range(int(rng.integers(0, beat)), self.n, beat // 2)):
            hit = kick if k % 4 == 0 else snare if k % 4 == 2 else hat
            end = min(self.n, pos + hit.shape[0])
            out[pos:end] += hit[: end - pos] * rng.uniform(0.6, 1.0)
        return out

    def _harmonic_line(self, rng, lo, hi, n_notes, n_harm, vibrato):
        freqs = np.repeat(self._notes(rng, lo, hi, n_notes), self.n // n_notes + 1)[: self.n]
        freqs = freqs * (1 + vibrato * np.sin(2 * np.pi * rng.uniform(4, 7) * self.t))
        phase = 2 * np.pi * np.cumsum(freqs) / SR
        out = np.zeros(self.n)
        for h in range(1, n_harm + 1):
            out += np.sin(h * phase + rng.uniform(0, 2 * np.pi)) / h ** rng.uniform(0.8, 1.6)
        env = np.minimum(1.0, (np.arange(self.n) % (self.n // n_notes + 1)) / (0.02 * SR))
        return out * env

    def _formants(self, rng, x):
        spec = np.fft.rfft(x)
        f = np.fft.rfftfreq(x.shape[0], 1 / SR)
        shape = np.zeros_like(f)
        for center, bw in ((rng.uniform(500, 900), 120), (rng.uniform(1100, 1900), 160),
                           (rng.uniform(2300, 3200), 220)):
            shape += np.exp(-0.5 * ((f - center) / bw) ** 2)
        return np.fft.irfft(spec * (0.05 + shape), x.shape[0])

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed * 1_000_003 + i)
        drums = self._drums(rng)
        bass = self._harmonic_line(rng, 28, 52, 12, 10, 0.0)
        vocals = self._formants(rng, self._harmonic_line(rng, 55, 79, 9, 24, 0.012))
        other = sum(self._harmonic_line(rng, 48, 84, 6, 8, 0.003) for _ in range(3))
        stems = np.stack([drums, bass, vocals, other])
        stems = np.stack([_fft_convolve(s, self._room(rng)) for s in stems])
        stems *= rng.uniform(0.3, 1.0, size=(4, 1)) / (np.abs(stems).max(axis=1, keepdims=True) + 1e-6)
        shift = rng.integers(0, SR // 4)
        stems = np.roll(stems, shift, axis=1) * rng.choice([-1.0, 1.0])
        stems = stems.astype(np.float32)
        return torch.from_numpy(stems.sum(0)), torch.from_numpy(stems)


def conv_block(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.GroupNorm(8, cout), nn.GELU(),
                         nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.GroupNorm(8, cout), nn.GELU())


class MaskUNet(nn.Module):
    def __init__(self, w=WIDTH):
        super().__init__()
        self.e1 = conv_block(1, w)
        self.e2 = conv_block(w, 2 * w, 2)
        self.e3 = conv_block(2 * w, 4 * w, 2)
        self.u2 = nn.ConvTranspose2d(4 * w, 2 * w, 2, 2)
        self.d2 = conv_block(4 * w, 2 * w)
        self.u1 = nn.ConvTranspose2d(2 * w, w, 2, 2)
        self.d1 = conv_block(2 * w, w)
        self.head = nn.Conv2d(w, len(STEMS), 1)

    def forward(self, logmag):
        h, w = logmag.shape[-2:]
        x = F.pad(logmag, (0, (-w) % 4, 0, (-h) % 4))
        e1 = self.e1(x)
        e2 = self.e2(e1)
        e3 = self.e3(e2)
        d2 = self.d2(torch.cat([self.u2(e3), e2], 1))
        d1 = self.d1(torch.cat([self.u1(d2), e1], 1))
        return torch.sigmoid(self.head(d1))[..., :h, :w]


def stft_mag(wave, window):
    spec = torch.stft(wave, N_FFT, HOP, window=window, return_complex=True)
    return spec.abs()


def si_sdr(est, ref):
    ref = ref - ref.mean(-1, keepdim=True)
    est = est - est.mean(-1, keepdim=True)
    proj = (est * ref).sum(-1, keepdim=True) / (ref.pow(2).sum(-1, keepdim=True) + 1e-8) * ref
    return 10 * torch.log10(proj.pow(2).sum(-1) / ((est - proj).pow(2).sum(-1) + 1e-8) + 1e-8)


def separate(model, mix, window):
    spec = torch.stft(mix, N_FFT, HOP, window=window, return_complex=True)
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        masks = model(torch.log1p(spec.abs()).unsqueeze(1)).float()
    est = torch.istft((masks * spec.unsqueeze(1)).flatten(0, 1), N_FFT, HOP, window=window,
                      length=mix.shape[-1])
    return est.view(mix.shape[0], len(STEMS), -1), masks, spec


def main():
    torch.manual_seed(0)
    t_start = time.perf_counter()
    window = torch.hann_window(N_FFT, device=DEVICE)
    model = MaskUNet().to(DEVICE).to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=6e-4, total_steps=STEPS + WARMUP + 1)

    val_set = MultitrackRenderer(VAL_BATCHES * BATCH, seed=7)
    val = [torch.utils.data.default_collate([val_set[j] for j in range(b * BATCH, (b + 1) * BATCH)])
           for b in range(VAL_BATCHES)]
    val = [(m.to(DEVICE), s.to(DEVICE)) for m, s in val]

    train_set = MultitrackRenderer(BATCH * (STEPS + WARMUP + 4), seed=1)
    loader = torch.utils.data.DataLoader(train_set, batch_size=BATCH, shuffle=True, num_workers=WORKERS,
                                         pin_memory=True, drop_last=True, persistent_workers=False,
                                         prefetch_factor=2)
    it = iter(loader)
    print(f"setup {time.perf_counter() - t_start:.1f} s, {sum(p.numel() for p in model.parameters())} params")

    wait_s = 0.0
    loss_hist = []
    t_loop = None
    for step in range(STEPS + WARMUP):
        if step == WARMUP:
            torch.cuda.synchronize()
            t_loop = time.perf_counter()
            wait_s = 0.0
        t0 = time.perf_counter()
        mix, stems = next(it)
        wait_s += time.perf_counter() - t0
        mix = mix.to(DEVICE, non_blocking=True)
        stems = stems.to(DEVICE, non_blocking=True)

        model.train()
        spec = torch.stft(mix, N_FFT, HOP, window=window, return_complex=True)
        target = stft_mag(stems.flatten(0, 1), window).view(BATCH, len(STEMS), *spec.shape[-2:])
        logmag = torch.log1p(spec.abs()).unsqueeze(1).contiguous(memory_format=torch.channels_last)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            masks = model(logmag)
        loss = F.l1_loss(masks.float() * spec.abs().unsqueeze(1), target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        sched.step()
        loss_hist.append(loss.detach())

        if (step + 1) % VAL_EVERY == 0:
            model.eval()
            scores = []
            with torch.no_grad():
                for vmix, vstems in val:
                    est, _, _ = separate(model, vmix, window)
                    scores.append(si_sdr(est, vstems).mean(0))
            sdr = torch.stack(scores).mean(0).tolist()
            recent = torch.stack(loss_hist[-VAL_EVERY:]).mean().item()
            print(f"step {step + 1} loss {recent:.4f} SI-SDR " +
                  " ".join(f"{n}={v:.2f}" for n, v in zip(STEMS, sdr)))
        if (step + 1) % CKPT_EVERY == 0:
            buf = io.BytesIO()
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1}, buf)
            print(f"checkpoint {buf.tell() / 1e6:.1f} MB")

    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t_loop
    del it
    print(f"final loss {torch.stack(loss_hist[-10:]).mean().item():.4f}")
    print(f"GROUND TRUTH: waiting for batches from the loader {wait_s:.2f} s of {loop_s:.2f} s timed loop "
          f"({100 * wait_s / loop_s:.0f}%), {STEPS} steps")


if __name__ == "__main__":
    main()
