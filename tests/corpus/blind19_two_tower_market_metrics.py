"""Two-tower candidate retrieval for a marketplace app, trained with in-batch sampled softmax.

User tower: mean-pooled embedding bag over the last HIST items the user interacted with, a user-id
embedding and a market embedding, then an MLP. Item tower: item-id and category embeddings, then
an MLP. Both towers end in L2-normalised 128-d vectors; the loss is in-batch softmax with the
log-Q correction for item popularity (estimated from the batch's own item counts) and duplicate
positives masked out. The product team wants hit-rate@50 and MRR per market on every step (the
dashboard reads the running averages), so the loop computes them market by market. Every
EVAL_EVERY steps, held-out users retrieve against the whole catalogue (recall@100).
"""
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = "cuda"
N_USERS = 1_000_000
N_ITEMS = 400_000
N_CATS = 2_000
N_MARKETS = 8
HIST = 48
DIM = 128
BATCH = 8192
LOG_LEN = 3_000_000
STEPS = 640
WARMUP = 20
LOG_EVERY = 100
EVAL_EVERY = 200
EVAL_USERS = 2048
ITEM_CHUNK = 50_000
TEMP = 0.05


class ReadbackTimer:
    """Accumulates the wall time of the statements that need a value back from the GPU."""

    def __init__(self):
        self.seconds = 0.0
        self.count = 0

    def __enter__(self):
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        self.seconds += time.perf_counter() - self.t0
        self.count += 1


def mlp(sizes):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.LayerNorm(b), nn.SiLU()]
    return nn.Sequential(*layers[:-2])


class UserTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.hist = nn.EmbeddingBag(N_ITEMS, DIM, mode="mean")
        self.user = nn.Embedding(N_USERS, DIM)
        self.market = nn.Embedding(N_MARKETS, 32)
        self.net = mlp([2 * DIM + 32, 1024, 512, DIM])

    def forward(self, uid, hist, market):
        x = torch.cat([self.hist(hist), self.user(uid), self.market(market)], 1)
        return F.normalize(self.net(x), dim=-1)


class ItemTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.item = nn.Embedding(N_ITEMS, DIM)
        self.cat = nn.Embedding(N_CATS, 64)
        self.net = mlp([DIM + 64, 1024, 512, DIM])

    def forward(self, iid, cat):
        return F.normalize(self.net(torch.cat([self.item(iid), self.cat(cat)], 1)), dim=-1)


def synthesize_log(rng):
    """Interactions with a Zipf-like item popularity and market-dependent preferences."""
    users = rng.integers(0, N_USERS, LOG_LEN)
    pop = rng.zipf(1.15, LOG_LEN) % N_ITEMS
    items = (pop + (users % N_MARKETS) * 7919) % N_ITEMS
    return users.astype(np.int64), items.astype(np.int64)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    t_start = time.perf_counter()
    users, items = synthesize_log(rng)
    market_of_user = torch.from_numpy(rng.integers(0, N_MARKETS, N_USERS)).to(DEVICE)
    cat_of_item = torch.from_numpy(rng.integers(0, N_CATS, N_ITEMS)).to(DEVICE)
    history = torch.randint(0, N_ITEMS, (N_USERS, HIST), device=DEVICE)
    log_u = torch.from_numpy(users).to(DEVICE)
    log_i = torch.from_numpy(items).to(DEVICE)
    perm = torch.randperm(LOG_LEN, device=DEVICE)

    user_tower, item_tower = UserTower().to(DEVICE), ItemTower().to(DEVICE)
    params = list(user_tower.parameters()) + list(item_tower.parameters())
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.0, fused=True)
    eye = torch.eye(BATCH, dtype=torch.bool, device=DEVICE)
    labels = torch.arange(BATCH, device=DEVICE)
    held_out = torch.randint(0, N_USERS, (EVAL_USERS,), device=DEVICE)
    print(f"setup {time.perf_counter() - t_start:.1f} s, {sum(p.numel() for p in params) / 1e6:.0f} M params")

    rb = ReadbackTimer()
    market_stats = {m: [0.0, 0.0, 0] for m in range(N_MARKETS)}
    skipped = 0
    t_loop = None
    for step in range(STEPS + WARMUP):
        if step == WARMUP:
            torch.cuda.synchronize()
            t_loop = time.perf_counter()
            rb = ReadbackTimer()
        at = (step * BATCH) % (LOG_LEN - BATCH)
        idx = perm[at:at + BATCH]
        uid, pos = log_u[idx], log_i[idx]
        market = market_of_user[uid]

        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            u = user_tower(uid, history[uid], market)
            v = item_tower(pos, cat_of_item[pos])
            logits = (u @ v.t()).float() / TEMP
        with rb:
            _, inverse, counts = torch.unique(pos, return_inverse=True, return_counts=True)
        logits = logits - torch.log(counts[inverse].float() / BATCH)[None, :]
        dup = (pos[:, None] == pos[None, :]) & ~eye
        with rb:
            has_dup = bool(dup.any())
        if has_dup:
            logits = logits.masked_fill(dup, -1e4)
        loss = F.cross_entropy(logits, labels)

        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(params, 10.0)
        with rb:
            finite = bool(torch.isfinite(gnorm))
        if not finite:
            skipped += 1
            continue
        opt.step()

        # Per-market dashboard metrics.
        with torch.no_grad():
            scores = logits.detach()
            rank = (scores > scores.diagonal()[:, None]).sum(1)
            hit = rank < 50
            for m in range(N_MARKETS):
                sel = market == m
                with rb:
                    n = int(sel.sum())
                if n < 8:
                    continue
                with rb:
                    hr = hit[sel].float().mean().item()
                with rb:
                    mrr = (1.0 / (rank[sel].float() + 1.0)).mean().item()
                st = market_stats[m]
                st[0] += hr * n
                st[1] += mrr * n
                st[2] += n
        with rb:
            loss_val = loss.item()

        if (step + 1) % LOG_EVERY == 0:
            worst = min(market_stats, key=lambda m: market_stats[m][0] / max(1, market_stats[m][2]))
            s = market_stats[worst]
            print(f"step {step + 1} loss {loss_val:.3f} worst market {worst} "
                  f"HR@50 {s[0] / s[2]:.3f} MRR {s[1] / s[2]:.4f}")
        if (step + 1) % EVAL_EVERY == 0:
            with torch.no_grad(), torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                q = user_tower(held_out, history[held_out], market_of_user[held_out])
                best = []
                for c in range(0, N_ITEMS, ITEM_CHUNK):
                    iid = torch.arange(c, min(N_ITEMS, c + ITEM_CHUNK), device=DEVICE)
                    s_chunk = q @ item_tower(iid, cat_of_item[iid]).t()
                    top = s_chunk.float().topk(100, dim=1)
                    best.append((top.values, top.indices + c))
                vals = torch.cat([b[0] for b in best], 1)
                ids = torch.cat([b[1] for b in best], 1)
                top_ids = ids.gather(1, vals.topk(100, dim=1).indices)
                target = (history[held_out, -1:] == top_ids).any(1).float().mean()
            print(f"eval recall@100 {target.item():.4f}")

    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t_loop
    print(f"skipped {skipped} steps")
    print(f"GROUND TRUTH: read-back statements {rb.seconds:.2f} s ({rb.count} of them) of {loop_s:.2f} s "
          f"timed loop ({100 * rb.seconds / loop_s:.0f}%), {STEPS} steps")


if __name__ == "__main__":
    main()
