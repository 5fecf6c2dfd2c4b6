"""Blind batch 14: a small Trainer with callbacks, one of which logs weight and gradient histograms.

A GPT-style language model (8 layers, width 512, vocabulary 16,384, ~33 M parameters; bf16
autocast, AdamW) is trained by a Trainer in the style of Hugging Face's and Lightning's: a loop
that calls its callbacks at fixed points. Three callbacks are registered:

- LossLogger: reads the running loss every `logging_steps` (10) steps;
- HistogramLogger: every `logging_steps` steps, right after backward, writes a histogram of every
  parameter and every gradient, the way TensorBoard's `add_histogram` does it
  (`values.astype(float)`, 1,549 exponential "tensorflow" buckets, `np.histogram`, min, max, sum,
  sum of squares, empty buckets trimmed), to an events file;
- Throughput: tokens per second, from a timer.

The batches are synthetic token sequences made on the GPU. No NVTX.

Ground truth printed at the end: seconds inside HistogramLogger against the loop's seconds, and the
number of optimizer steps.
"""
import json
import math
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
dev = torch.device("cuda")

VOCAB, WIDTH, LAYERS, HEADS, SEQ, BATCH = 16384, 512, 8, 8, 512, 32
WARMUP_STEPS = 3
MAX_STEPS = 80
LOGGING_STEPS = 10


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.ln2 = nn.LayerNorm(WIDTH)
        self.fc1 = nn.Linear(WIDTH, 4 * WIDTH)
        self.fc2 = nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, WIDTH // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, WIDTH))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, WIDTH)
        self.pos = nn.Embedding(SEQ, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(WIDTH)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.ln_f(x) @ self.tok.weight.t()


# --- the events writer, after torch.utils.tensorboard's summary.histogram -------------------------
def _tensorflow_bins():
    v, buckets, neg = 1e-12, [], []
    while v < 1e20:
        buckets.append(v)
        neg.append(-v)
        v *= 1.1
    return neg[::-1] + [0] + buckets


TF_BINS = _tensorflow_bins()


def make_histogram(values, bins):
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    num_bins = len(counts)
    sum_sq = values.dot(values)
    cum_counts = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum_counts, [0, cum_counts[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    return {"min": float(values.min()), "max": float(values.max()), "num": int(values.shape[0]),
            "sum": float(values.sum()), "sum_squares": float(sum_sq), "bucket_limit": limits.tolist(),
            "bucket": counts.tolist(), "bins": num_bins}


class EventsWriter:
    def __init__(self, logdir):
        self.f = open(os.path.join(logdir, "events.jsonl"), "w")

    def add_scalar(self, tag, value, step):
        self.f.write(json.dumps({"tag": tag, "step": step, "value": value}) + "\n")

    def add_histogram(self, tag, tensor, step):
        values = tensor.detach().cpu().numpy().astype(float)
        self.f.write(json.dumps({"tag": tag, "step": step, "histo": make_histogram(values, TF_BINS)}) + "\n")

    def flush(self):
        self.f.flush()


# --- the trainer -----------------------------------------------------------------------------------
class TrainerState:
    def __init__(self):
        self.global_step = 0
        self.tokens = 0
        self.log_history = []


class Callback:
    def on_after_backward(self, trainer, model): pass
    def on_step_end(self, trainer, model): pass


class LossLogger(Callback):
    def on_step_end(self, trainer, model):
        s = trainer.state
        if s.global_step % trainer.logging_steps == 0:
            loss = (trainer.loss_sum / trainer.logging_steps).item()
            trainer.loss_sum.zero_()
            s.log_history.append({"step": s.global_step, "loss": loss})
            trainer.writer.add_scalar("train/loss", loss, s.global_step)
            print(f"step {s.global_step}: loss {loss:.4f}", flush=True)


class HistogramLogger(Callback):
    def __init__(self):
        self.seconds = 0.0
        self.calls = 0

    def on_after_backward(self, trainer, model):
        step = trainer.state.global_step + 1
        if step % trainer.logging_steps != 0:
            return
        t0 = time.perf_counter()
        for name, p in model.named_parameters():
            trainer.writer.add_histogram(f"weights/{name}", p, step)
            if p.grad is not None:
                trainer.writer.add_histogram(f"grads/{name}", p.grad, step)
        trainer.writer.flush()
        self.seconds += time.perf_counter() - t0
        self.calls += 1


class Throughput(Callback):
    def __init__(self):
        self.t = time.perf_counter()

    def on_step_end(self, trainer, model):
        s = trainer.state
        if s.global_step % trainer.logging_steps == 0:
            now = time.perf_counter()
            trainer.writer.add_scalar("train/tokens_per_s", trainer.logging_steps * BATCH * SEQ / (now - self.t),
                                      s.global_step)
            self.t = now


class Trainer:
    def __init__(self, model, optimizer, scheduler, writer, callbacks, logging_steps):
        self.model, self.optimizer, self.scheduler = model, optimizer, scheduler
        self.writer, self.callbacks, self.logging_steps = writer, callbacks, logging_steps
        self.state = TrainerState()
        self.loss_sum = torch.zeros((), device=dev)

    def training_step(self, batch):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = self.model(batch[:, :-1])
        return F.cross_entropy(logits.float().view(-1, VOCAB), batch[:, 1:].reshape(-1))

    def train(self, batches, max_steps):
        self.model.train()
        for batch in batches:
            loss = self.training_step(batch)
            loss.backward()
            for cb in self.callbacks:
                cb.on_after_backward(self, self.model)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.loss_sum += loss.detach()
            self.state.global_step += 1
            self.state.tokens += batch.numel()
            for cb in self.callbacks:
                cb.on_step_end(self, self.model)
            if self.state.global_step >= max_steps:
                break


def synthetic_batches(n):
    """Token sequences with some local structure (a noisy random walk over the vocabulary)."""
    for _ in range(n):
        steps = torch.randint(-40, 41, (BATCH, SEQ + 1), device=dev)
        yield (steps.cumsum(1) + torch.randint(0, VOCAB, (BATCH, 1), device=dev)) % VOCAB


model = TinyGPT().to(dev)
print(f"parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M", flush=True)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
total = WARMUP_STEPS + MAX_STEPS
scheduler = torch.optim.lr_scheduler.LambdaLR(
    optimizer, lambda s: min(1.0, (s + 1) / 20) * 0.5 * (1 + math.cos(math.pi * s / total)))
logdir = tempfile.mkdtemp(prefix="runs-")
writer = EventsWriter(logdir)
histograms = HistogramLogger()
trainer = Trainer(model, optimizer, scheduler, writer, [LossLogger(), histograms, Throughput()], LOGGING_STEPS)

# Warm-up (kernels, allocator, autotuning), not logged: the step counter starts after it.
warm = Trainer(model, optimizer, scheduler, writer, [], LOGGING_STEPS)
warm.train(synthetic_batches(WARMUP_STEPS), WARMUP_STEPS)
torch.cuda.synchronize()

t_loop = time.perf_counter()
trainer.train(synthetic_batches(MAX_STEPS), MAX_STEPS)
torch.cuda.synchronize()
loop = time.perf_counter() - t_loop
print(f"ground truth: histogram callback {histograms.seconds:.3f} s ({histograms.calls} calls) of {loop:.3f} s loop "
      f"({100 * histograms.seconds / loop:.1f}%); {trainer.state.global_step} steps", flush=True)
