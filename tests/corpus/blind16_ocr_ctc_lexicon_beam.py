"""Receipt-line OCR fine-tuning (CRNN + CTC) with a running character-error-rate that decodes
every training batch with a pure-Python CTC prefix beam search and a character bigram LM.

A user's trainer: the progress bar shows CER, so each batch's log-probabilities go to the host
and a Python prefix beam search (beam 6, top-6 characters per frame, bigram LM weight) decodes
every line, then a Python Levenshtein distance scores it. The GPU finishes a step in a few
milliseconds; the host decode takes several times that, and the GPU waits for it.
Steps: 6 warm-up batches, then 50 timed training steps; every 20th step an extra validation pass
(two batches, greedy decode only); the images are synthesized on the GPU (no loader).
"""
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEV = "cuda"
ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.,:-/$%#*() "
C = len(ALPHABET) + 1  # blank = 0
BATCH = 16
H, W = 32, 256
T_FRAMES = 64
WARMUP, STEPS, VAL_EVERY = 6, 50, 20
BEAM, TOPK_CHARS, LM_WEIGHT = 6, 6, 0.3

torch.manual_seed(0)
rng = np.random.default_rng(0)


class CRNN(nn.Module):
    def __init__(self):
        super().__init__()
        def block(i, o, pool):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(inplace=True),
                                 nn.MaxPool2d(pool))
        self.cnn = nn.Sequential(block(1, 64, (2, 2)), block(64, 128, (2, 2)), block(128, 256, (2, 1)),
                                 block(256, 256, (2, 1)), block(256, 384, (2, 1)))
        self.rnn = nn.LSTM(384, 256, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(512, C)

    def forward(self, x):
        f = self.cnn(x)                      # B, 384, 1, 64
        f = f.squeeze(2).transpose(1, 2)     # B, 64, 384
        y, _ = self.rnn(f)
        return self.head(y).log_softmax(-1)  # B, T, C


# Character bigram "LM" from a synthetic receipt vocabulary (host side, plain dicts).
VOCAB = ["total", "subtotal", "tax", "cash", "change", "visa", "item", "qty", "price", "store",
         "receipt", "thank", "you", "date", "time", "card", "amount", "due", "paid", "discount"]
bigram = {}
for w in VOCAB * 5:
    for a, b in zip(" " + w, w + " "):
        bigram[(a, b)] = bigram.get((a, b), 0) + 1
tot = sum(bigram.values())
LOGP_BIGRAM = {k: math.log(v / tot) for k, v in bigram.items()}
LOGP_FLOOR = math.log(0.5 / tot)


def logsumexp2(a, b):
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    m = a if a > b else b
    return m + math.log(math.exp(a - m) + math.exp(b - m))


def prefix_beam_search(lp):
    """lp: numpy (T, C) log-probs of one line. Returns the decoded string."""
    beams = {"": (0.0, -math.inf)}  # prefix -> (log p ending in blank, log p ending in non-blank)
    top = np.argpartition(-lp, TOPK_CHARS, axis=1)[:, :TOPK_CHARS]
    for t in range(lp.shape[0]):
        nxt = {}
        row = lp[t]
        for prefix, (pb, pnb) in beams.items():
            ptot = logsumexp2(pb, pnb)
            for c in top[t]:
                c = int(c)
                p = float(row[c])
                if c == 0:
                    b, nb = nxt.get(prefix, (-math.inf, -math.inf))
                    nxt[prefix] = (logsumexp2(b, ptot + p), nb)
                    continue
                ch = ALPHABET[c - 1]
                last = prefix[-1] if prefix else " "
                lm = LM_WEIGHT * LOGP_BIGRAM.get((last, ch), LOGP_FLOOR)
                new = prefix + ch
                b, nb = nxt.get(new, (-math.inf, -math.inf))
                if prefix and prefix[-1] == ch:
                    nxt[new] = (b, logsumexp2(nb, pb + p + lm))
                    b2, nb2 = nxt.get(prefix, (-math.inf, -math.inf))
                    nxt[prefix] = (b2, logsumexp2(nb2, pnb + p))
                else:
                    nxt[new] = (b, logsumexp2(nb, ptot + p + lm))
        beams = dict(sorted(nxt.items(), key=lambda kv: -logsumexp2(*kv[1]))[:BEAM])
    return max(beams.items(), key=lambda kv: logsumexp2(*kv[1]))[0]


def greedy(lp):
    best = lp.argmax(1)
    out, prev = [], 0
    for c in best:
        c = int(c)
        if c != prev and c != 0:
            out.append(ALPHABET[c - 1])
        prev = c
    return "".join(out)


def levenshtein(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def make_batch():
    """Synthetic line images: random glyph-like strokes rendered on the GPU, random labels."""
    lens = rng.integers(8, 28, size=BATCH)
    labels = [rng.integers(1, C, size=n) for n in lens]
    texts = ["".join(ALPHABET[c - 1] for c in lab) for lab in labels]
    x = torch.rand(BATCH, 1, H, W, device=DEV) * 0.2
    x[:, :, 8:24, :] += torch.rand(BATCH, 1, 16, W, device=DEV) * 0.8
    targets = torch.from_numpy(np.concatenate(labels)).to(DEV)
    target_lens = torch.from_numpy(lens.astype(np.int64))
    return x, targets, target_lens, texts


model = CRNN().to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
input_lens = torch.full((BATCH,), T_FRAMES, dtype=torch.int64)

decode_s = 0.0
val_s = 0.0
gpu_ms = 0.0
cer_hist = []
loop_t0 = None
for step in range(WARMUP + STEPS):
    if step == WARMUP:
        torch.cuda.synchronize()
        loop_t0 = time.perf_counter()
    timed = step >= WARMUP
    x, targets, target_lens, texts = make_batch()
    ev0 = torch.cuda.Event(enable_timing=True)
    ev1 = torch.cuda.Event(enable_timing=True)
    ev0.record()
    model.train()
    lp = model(x)
    loss = ctc(lp.transpose(0, 1), targets, input_lens, target_lens)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    opt.step()
    ev1.record()
    # Running CER for the progress bar: decode every line of this batch on the host.
    lp_host = lp.detach().float().cpu().numpy()
    t0 = time.perf_counter()
    errs = chars = 0
    for i in range(BATCH):
        hyp = prefix_beam_search(lp_host[i])
        errs += levenshtein(hyp, texts[i])
        chars += len(texts[i])
    cer_hist.append(errs / max(chars, 1))
    dt = time.perf_counter() - t0
    if timed:
        decode_s += dt
        gpu_ms += ev0.elapsed_time(ev1)
    if timed and (step - WARMUP + 1) % 10 == 0:
        print(f"step {step - WARMUP + 1:3d} loss {loss.item():.3f} cer {np.mean(cer_hist[-10:]):.3f}")
    if timed and (step - WARMUP + 1) % VAL_EVERY == 0:
        tv = time.perf_counter()
        model.eval()
        with torch.no_grad():
            for _ in range(2):
                xv, _, _, tv_texts = make_batch()
                lpv = model(xv).float().cpu().numpy()
                v_err = sum(levenshtein(greedy(lpv[i]), tv_texts[i]) for i in range(BATCH))
        val_s += time.perf_counter() - tv
torch.cuda.synchronize()
loop_s = time.perf_counter() - loop_t0
torch.save({k: v.cpu() for k, v in model.state_dict().items()}, "/tmp/blind16_crnn.pt")
print(f"GROUND TRUTH: host beam-search decode + CER {decode_s:.2f} s of {loop_s:.2f} s loop "
      f"({100 * decode_s / loop_s:.0f}%), GPU step time by CUDA events {gpu_ms / 1000:.2f} s "
      f"({100 * gpu_ms / 1000 / loop_s:.0f}%), validation {val_s:.2f} s, {STEPS} steps")
