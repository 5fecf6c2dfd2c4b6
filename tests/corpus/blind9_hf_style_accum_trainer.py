"""Corpus (blind, batch 9): a hand-written Hugging Face-style training loop for a causal LM.

Program: the loop a user writes after reading the transformers "train without Trainer" guide,
with no transformers library: a GPT-style decoder written by hand (8 pre-LN blocks, d_model
1024, 16 heads, SDPA attention with dropout, GELU MLP, tied 32k-vocabulary head, the model
returning a dict with "loss" and "logits" when given labels), bf16 autocast, AdamW with the
usual no-decay parameter groups, a linear warm-up/decay schedule (LambdaLR), micro-batches of
8 x 512 tokens from a DataLoader (num_workers=0, pin_memory=True, dict batches moved with
non_blocking=True) accumulated 4 times per optimizer step, torch.nn.utils.clip_grad_norm_
before each step, a progress line every optimizer step that reads the accumulated loss and the
gradient norm with .item(), and an evaluation on 4 held-out batches every 20 steps (.item() per
batch). Each micro-batch is ~3.5 TFLOP of bf16 GEMMs and attention (~9-14 ms on an H100), so an
optimizer step is ~40-60 ms of GPU work queued by ~15-30 ms of CPU. No NVTX. 60 optimizer
steps; one line printed at the end (the GPU time of the steps and of the evaluations by CUDA
events, against the loop's wall time).

Expected, written before it was recorded (2026-11-26): gpu-bound, 85-97% of the steady-state
step time, the finding naming the forward/backward GEMM kernels (the QKV, projection, MLP and
tied-head matmuls; flash attention next) as holding the time; 60 steps (within 2), one per
optimizer step (not the 240 micro-batches); the steps that end with an evaluation (20, 40,
60) are longer. Misses: sync-stall (the progress line syncs every step, but the GPU is busy up
to the sync and the CPU refills the queue within a fraction of a millisecond of the next step:
removing the .item() calls would save ~1-3%), launch-bound, input-bound (the DataLoader collates
8 rows of token ids in well under a millisecond), cpu-work.
"""
import math
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

VOCAB, D_MODEL, LAYERS, HEADS, SEQ = 32000, 1024, 8, 16, 512
MICRO_BATCH, ACCUM, STEPS, EVAL_EVERY, EVAL_BATCHES = 8, 4, 60, 20, 4
LR, WARMUP, WEIGHT_DECAY, MAX_GRAD_NORM = 3e-4, 10, 0.01, 1.0


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(D_MODEL)
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = nn.Linear(D_MODEL, D_MODEL)
        self.ln_2 = nn.LayerNorm(D_MODEL)
        self.fc_in = nn.Linear(D_MODEL, 4 * D_MODEL)
        self.fc_out = nn.Linear(4 * D_MODEL, D_MODEL)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        b, t, _ = x.shape
        qkv = self.qkv(self.ln_1(x)).view(b, t, 3, HEADS, D_MODEL // HEADS)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=0.1 if self.training else 0.0)
        x = x + self.dropout(self.proj(a.transpose(1, 2).reshape(b, t, D_MODEL)))
        return x + self.dropout(self.fc_out(F.gelu(self.fc_in(self.ln_2(x)))))


class CausalLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D_MODEL)
        self.wpe = nn.Embedding(SEQ, D_MODEL)
        self.drop = nn.Dropout(0.1)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, input_ids, labels=None):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.drop(self.wte(input_ids) + self.wpe(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = F.cross_entropy(logits.float().view(-1, VOCAB), labels.view(-1),
                                          ignore_index=-100)
        return out


class TokenChunks(Dataset):
    """Pre-tokenized text cut into chunks of SEQ + 1 tokens (synthetic ids here)."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.chunks = torch.randint(0, VOCAB, (n, SEQ + 1), generator=g)

    def __len__(self):
        return len(self.chunks)

    def __getitem__(self, i):
        chunk = self.chunks[i]
        return {"input_ids": chunk[:-1], "labels": chunk[1:]}


def linear_schedule_with_warmup(optimizer, warmup, total):
    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    losses = []
    for batch in loader:
        batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
        with torch.autocast("cuda", dtype=torch.bfloat16):
            losses.append(model(**batch)["loss"].item())
    model.train()
    return sum(losses) / len(losses)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda")
    model = CausalLM().to(device)
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or "ln_" in name else decay).append(p)
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=LR)
    scheduler = linear_schedule_with_warmup(optimizer, WARMUP, STEPS)
    train_loader = DataLoader(TokenChunks(MICRO_BATCH * ACCUM * STEPS, 0), batch_size=MICRO_BATCH,
                              shuffle=True, drop_last=True, pin_memory=True)
    eval_loader = DataLoader(TokenChunks(MICRO_BATCH * EVAL_BATCHES, 1), batch_size=MICRO_BATCH,
                             pin_memory=True)
    print(f"parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M")

    model.train()
    step_spans, eval_spans = [], []
    tr_loss = torch.zeros((), device=device)
    step, micro = 0, 0
    start = time.perf_counter()
    for batch in train_loader:
        if micro == 0:
            begin = torch.cuda.Event(enable_timing=True)
            begin.record()
        batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(**batch)["loss"] / ACCUM
        loss.backward()
        tr_loss += loss.detach()
        micro += 1
        if micro < ACCUM:
            continue
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_GRAD_NORM)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        step_spans.append((begin, end))
        step += 1
        micro = 0
        print(f"step {step}/{STEPS} | loss {tr_loss.item():.4f} | grad_norm {grad_norm.item():.3f} "
              f"| lr {scheduler.get_last_lr()[0]:.2e}")
        tr_loss.zero_()
        if step % EVAL_EVERY == 0:
            b, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            b.record()
            eval_loss = evaluate(model, eval_loader, device)
            e.record()
            eval_spans.append((b, e))
            ppl = math.exp(min(eval_loss, 20))
            print(f"step {step} | eval_loss {eval_loss:.4f} | ppl {ppl:.1f}")
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    gpu_steps = sum(b.elapsed_time(e) for b, e in step_spans) / 1e3
    gpu_eval = sum(b.elapsed_time(e) for b, e in eval_spans) / 1e3
    print(f"steps {step}; GPU time (CUDA events) of the optimizer steps {gpu_steps:.2f} s and of "
          f"the evaluations {gpu_eval:.2f} s, of loop {total:.2f} s")


if __name__ == "__main__":
    main()
