"""LoRA instruction fine-tuning of a 0.7B-parameter decoder.

A Llama-style decoder (RMSNorm, rotary embeddings, SwiGLU, 16 heads, d=2048, 12 layers) is loaded
with frozen bf16 weights and fine-tuned with rank-16 LoRA adapters on the query, key, value and
output projections. Instruction/response pairs are pre-tokenised; each micro-batch of 8 is padded
to a 128-token bucket (lengths vary from ~300 to 1024), the loss covers response tokens only, and
two micro-batches are accumulated per optimizer step. Loss is printed every 10 optimizer steps and
a small held-out evaluation runs every 40. NVTX ranges mark the micro-steps, optimizer steps and
evaluations.
"""
import math
import os
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = "cuda"
VOCAB = 32000
DIM = 2048
LAYERS = 12
HEADS = 16
FFN = 5632
RANK = 16
LORA_ALPHA = 32
MAX_LEN = 1024
BUCKET = 128
MICRO_BATCH = 8
ACCUM = 2
OPT_STEPS = 110
WARMUP_STEPS = 10
LOG_EVERY = 10
EVAL_EVERY = 40
EVAL_BATCHES = 3
N_EXAMPLES = 3000
OUT_DIR = "/tmp/blind18_lora"

nvtx = torch.cuda.nvtx


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * \
            self.weight.type_as(x)


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, rank, alpha):
        super().__init__()
        self.base = base
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features, device=base.weight.device))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank, device=base.weight.device))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        self.scale = alpha / rank

    def forward(self, x):
        return self.base(x) + F.linear(F.linear(x, self.lora_a), self.lora_b) * self.scale


def rope_tables(seq, head_dim, device):
    inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    t = torch.arange(seq, device=device).float()
    freqs = torch.outer(t, inv)
    return freqs.cos()[None, None], freqs.sin()[None, None]


def apply_rope(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    return out.flatten(-2).type_as(x)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        lin = lambda i, o: nn.Linear(i, o, bias=False, device=DEVICE, dtype=torch.bfloat16)
        self.attn_norm = RMSNorm(DIM)
        self.q, self.k, self.v, self.o = (lin(DIM, DIM) for _ in range(4))
        self.mlp_norm = RMSNorm(DIM)
        self.gate, self.up, self.down = lin(DIM, FFN), lin(DIM, FFN), lin(FFN, DIM)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        h = self.attn_norm(x)
        q = self.q(h).view(b, s, HEADS, -1).transpose(1, 2)
        k = self.k(h).view(b, s, HEADS, -1).transpose(1, 2)
        v = self.v(h).view(b, s, HEADS, -1).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, DIM))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM, device=DEVICE, dtype=torch.bfloat16)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = RMSNorm(DIM)
        self.lm_head = nn.Linear(DIM, VOCAB, bias=False, device=DEVICE, dtype=torch.bfloat16)

    def forward(self, ids):
        x = self.embed(ids)
        cos, sin = rope_tables(ids.shape[1], DIM // HEADS, ids.device)
        for blk in self.blocks:
            x = blk(x, cos, sin)
        return self.lm_head(self.norm(x))


def add_lora(model):
    for p in model.parameters():
        p.requires_grad_(False)
    for blk in model.blocks:
        for name in ("q", "k", "v", "o"):
            setattr(blk, name, LoRALinear(getattr(blk, name), RANK, LORA_ALPHA))
    return [p for n, p in model.named_parameters() if "lora_" in n]


def make_examples(rng):
    """Pre-tokenised (prompt, response) pairs; lengths follow a long-tailed chat distribution."""
    out = []
    for _ in range(N_EXAMPLES):
        total = min(MAX_LEN, int(rng.lognormvariate(6.3, 0.35)))
        total = max(total, 96)
        prompt = int(total * rng.uniform(0.2, 0.6))
        ids = [rng.randrange(3, VOCAB) for _ in range(total)]
        out.append((ids, prompt))
    return out


def collate(batch):
    longest = max(len(ids) for ids, _ in batch)
    seq = min(MAX_LEN, ((longest + BUCKET - 1) // BUCKET) * BUCKET)
    ids = torch.zeros(len(batch), seq, dtype=torch.long)
    labels = torch.full((len(batch), seq), -100, dtype=torch.long)
    for i, (toks, prompt) in enumerate(batch):
        t = torch.tensor(toks[:seq])
        ids[i, :len(t)] = t
        labels[i, prompt:len(t) - 1] = t[prompt + 1:]
    return ids.pin_memory(), labels.pin_memory()


def batches(examples, rng):
    while True:
        order = list(range(len(examples)))
        rng.shuffle(order)
        for i in range(0, len(order) - MICRO_BATCH + 1, MICRO_BATCH):
            yield collate([examples[j] for j in order[i:i + MICRO_BATCH]])


def lm_loss(model, ids, labels):
    with torch.autocast(device_type=DEVICE, dtype=torch.bfloat16):
        logits = model(ids)
    return F.cross_entropy(logits.float().view(-1, VOCAB), labels.view(-1), ignore_index=-100)


def main():
    t_start = time.perf_counter()
    torch.manual_seed(0)
    rng = random.Random(0)
    torch.backends.cuda.matmul.allow_tf32 = True
    model = Decoder().to(DEVICE)
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.normal_(p, std=0.02)
    lora_params = add_lora(model)
    n_base = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    n_lora = sum(p.numel() for p in lora_params)
    examples = make_examples(rng)
    held_out, train = examples[:64], examples[64:]
    print(f"model: {n_base / 1e6:.0f}M frozen, {n_lora / 1e6:.2f}M LoRA; {len(train)} examples; "
          f"setup {time.perf_counter() - t_start:.1f} s", flush=True)

    opt = torch.optim.AdamW(lora_params, lr=2e-4, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / WARMUP_STEPS) *
        0.5 * (1 + math.cos(math.pi * min(s, OPT_STEPS) / OPT_STEPS)))
    data = batches(train, rng)
    events = []
    running = torch.zeros((), device=DEVICE)
    tokens = 0
    torch.cuda.synchronize()
    loop_t0 = time.perf_counter()
    for step in range(1, OPT_STEPS + 1):
        for micro in range(ACCUM):
            ids, labels = next(data)
            tokens += ids.numel()
            ids = ids.to(DEVICE, non_blocking=True)
            labels = labels.to(DEVICE, non_blocking=True)
            nvtx.range_push("micro_step")
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            loss = lm_loss(model, ids, labels) / ACCUM
            loss.backward()
            e1.record()
            events.append((e0, e1))
            running += loss.detach()
            nvtx.range_pop()
        nvtx.range_push("optimizer_step")
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        torch.nn.utils.clip_grad_norm_(lora_params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
        e1.record()
        events.append((e0, e1))
        nvtx.range_pop()
        if step % LOG_EVERY == 0:
            print(f"step {step}: loss {running.item() / LOG_EVERY:.4f} "
                  f"lr {sched.get_last_lr()[0]:.2e} tokens {tokens}", flush=True)
            running.zero_()
        if step % EVAL_EVERY == 0:
            nvtx.range_push("eval")
            model.eval()
            with torch.no_grad():
                losses = [lm_loss(model, *(t.to(DEVICE) for t in
                          collate(held_out[i * MICRO_BATCH:(i + 1) * MICRO_BATCH])))
                          for i in range(EVAL_BATCHES)]
            model.train()
            print(f"  eval step {step}: loss {torch.stack(losses).mean().item():.4f}", flush=True)
            nvtx.range_pop()
    torch.cuda.synchronize()
    loop = time.perf_counter() - loop_t0
    gpu = sum(a.elapsed_time(b) for a, b in events) / 1e3

    os.makedirs(OUT_DIR, exist_ok=True)
    torch.save({n: p.detach().cpu() for n, p in model.named_parameters() if "lora_" in n},
               os.path.join(OUT_DIR, "adapter.pt"))
    print(f"done: {OPT_STEPS} optimizer steps, {tokens} padded tokens, "
          f"{tokens / loop:.0f} tokens/s, total {time.perf_counter() - t_start:.1f} s")
    print(f"GROUND TRUTH: GPU seconds inside training micro-steps and optimizer steps "
          f"(cudaEvent spans) {gpu:.2f} of loop {loop:.2f} ({100 * gpu / loop:.1f}%)")


if __name__ == "__main__":
    main()
