"""Handwritten text-line recognition: a CRNN (conv feature extractor + BiLSTM) trained with CTC.

Line images are synthesized on the GPU from random stroke "glyphs" so the script needs no dataset;
their widths follow the text length, so every batch has a different width and, to keep the padding
small, a different batch size (a token budget of about MAX_PIXELS pixels). Because the shapes never
repeat, an earlier out-of-memory report led to `torch.cuda.empty_cache()` after every step. Every
EVAL_EVERY steps greedy CTC decoding on a held-out batch reports the character error rate.

The ground truth is the loop time minus the same step shapes replayed afterwards with the cache
kept (REPLAY steps spread over the run), scaled to the whole loop.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = "cuda"
HEIGHT = 64
VOCAB = 80
MIN_CHARS = 12
MAX_CHARS = 70
PX_PER_CHAR = 32
MAX_PIXELS = 64 * 2200 * 28
STEPS = 340
WARMUP = 10
EVAL_EVERY = 60
REPLAY = 40


def synth_lines(gen, batch, n_chars):
    """Random glyph strokes: each character is a sum of a few oriented Gaussian strokes."""
    width = n_chars * PX_PER_CHAR
    labels = torch.randint(1, VOCAB, (batch, n_chars), generator=gen, device=DEVICE)
    lengths = torch.randint(max(MIN_CHARS, n_chars * 3 // 4), n_chars + 1, (batch,), generator=gen, device=DEVICE)
    y = torch.linspace(-1, 1, HEIGHT, device=DEVICE)[:, None]
    x = torch.linspace(-1, 1, PX_PER_CHAR, device=DEVICE)[None, :]
    code = labels.float()[..., None, None]
    a = torch.sin(code * 1.7) * 0.6
    b = torch.cos(code * 2.3) * 0.6
    glyph = torch.exp(-((x - a) * torch.cos(code) + (y - b) * torch.sin(code)) ** 2 * 18.0)
    glyph = glyph + torch.exp(-((x + b) ** 2 + (y - a) ** 2) * 10.0)
    glyph = glyph * (torch.arange(n_chars, device=DEVICE)[None, :] < lengths[:, None]).float()[..., None, None]
    img = glyph.permute(0, 2, 1, 3).reshape(batch, 1, HEIGHT, width)
    img = img + 0.1 * torch.randn(img.shape, generator=gen, device=DEVICE)
    return img, labels, lengths


class CRNN(nn.Module):
    def __init__(self):
        super().__init__()

        def blk(cin, cout, pool):
            return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)] + (
                [nn.MaxPool2d(pool)] if pool else [])

        self.cnn = nn.Sequential(*blk(1, 32, 2), *blk(32, 64, 2), *blk(64, 128, None), *blk(128, 128, (2, 1)),
                                 *blk(128, 192, None), *blk(192, 192, (2, 1)), *blk(192, 256, (2, 1)))
        self.proj = nn.Linear(256 * 2, 256)
        self.rnn = nn.LSTM(256, 256, num_layers=1, bidirectional=True)
        self.head = nn.Linear(512, VOCAB)

    def forward(self, img):
        f = self.cnn(img)  # (B, 256, 2, W/4)
        f = f.flatten(1, 2).permute(2, 0, 1)  # (T, B, 512)
        out, _ = self.rnn(self.proj(f))
        return self.head(out).log_softmax(-1)


def train_step(model, opt, img, labels, lengths):
    logp = model(img)
    t = logp.shape[0]
    in_len = torch.full((img.shape[0],), t, dtype=torch.long, device=DEVICE)
    loss = F.ctc_loss(logp.float(), labels, in_len, lengths, blank=0, zero_infinity=True)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    opt.step()
    return loss.detach()


def greedy_cer(logp, labels, lengths):
    best = logp.argmax(-1).t().cpu().numpy()
    labels, lengths = labels.cpu().numpy(), lengths.cpu().numpy()
    errs = total = 0
    for seq, lab, n in zip(best, labels, lengths):
        dec = [c for i, c in enumerate(seq) if c != 0 and (i == 0 or c != seq[i - 1])]
        ref = list(lab[:n])
        d = np.arange(len(dec) + 1)
        for r in ref:
            prev, d[0] = d[0], d[0] + 1
            for j in range(1, len(dec) + 1):
                prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (dec[j - 1] != r))
        errs += d[-1]
        total += len(ref)
    return errs / max(1, total)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(0)
    model = CRNN().to(DEVICE)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    shapes = []
    for _ in range(STEPS + WARMUP):
        n_chars = int(rng.integers(MIN_CHARS, MAX_CHARS + 1))
        batch = max(4, min(64, MAX_PIXELS // (HEIGHT * n_chars * PX_PER_CHAR)))
        shapes.append((batch, n_chars))
    eval_img, eval_lab, eval_len = synth_lines(gen, 32, 40)

    step_s = []
    t_loop = None
    for step, (batch, n_chars) in enumerate(shapes):
        if step == WARMUP:
            torch.cuda.synchronize()
            t_loop = time.perf_counter()
        t0 = time.perf_counter()
        model.train()
        img, labels, lengths = synth_lines(gen, batch, n_chars)
        loss = train_step(model, opt, img, labels, lengths)
        del img, labels, lengths
        torch.cuda.empty_cache()
        if step >= WARMUP:
            step_s.append(time.perf_counter() - t0)
        if (step + 1) % EVAL_EVERY == 0:
            model.eval()
            with torch.no_grad():
                cer = greedy_cer(model(eval_img), eval_lab, eval_len)
            print(f"step {step + 1} batch {batch}x{n_chars * PX_PER_CHAR}px loss {loss.item():.3f} CER {cer:.3f}")
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t_loop

    # Reference: the same shapes with the allocator cache kept.
    model.train()
    picks = np.linspace(0, STEPS - 1, REPLAY).astype(int)
    for p in picks[:3]:
        train_step(model, opt, *synth_lines(gen, *shapes[WARMUP + p]))
    torch.cuda.synchronize()
    ref_s = 0.0
    for p in picks:
        batch, n_chars = shapes[WARMUP + p]
        t0 = time.perf_counter()
        train_step(model, opt, *synth_lines(gen, batch, n_chars))
        torch.cuda.synchronize()
        ref_s += time.perf_counter() - t0
    picked_s = sum(step_s[p] for p in picks)
    planted = max(0.0, (picked_s - ref_s) / picked_s) * loop_s
    print(f"replayed {REPLAY} shapes: {picked_s:.2f} s with empty_cache, {ref_s:.2f} s cached")
    print(f"GROUND TRUTH: allocator churn (empty_cache each step, new shapes) {planted:.2f} s of {loop_s:.2f} s "
          f"timed loop ({100 * planted / loop_s:.0f}%), {STEPS} steps")


if __name__ == "__main__":
    main()
