# blind24_croptype_metrics_syncs.py: crop-type classification of field parcels from satellite
# image time series, with per-step monitoring that synchronises all the time.
#
# Each parcel is a sequence of 48 acquisition dates x 13 spectral bands (synthetic phenology
# curves per crop: NDVI-like green-up, peak and senescence at crop-specific days of year, plus
# cloud contamination). A 4-layer transformer encoder with day-of-year positional encoding
# classifies 18 crop types. The training step looks innocent but synchronises the CPU with the
# GPU over a hundred times per step:
#   - cloud screening picks the clear observations with a boolean mask (`x[clear]`, a
#     nonzero + a device-to-host size copy) and checks `if (n_clear == 0).any()`;
#   - a "numerics guard" in every encoder sub-layer: `if not torch.isfinite(h).all(): raise`;
#   - online hard-example mining with torch.nonzero on the per-parcel loss;
#   - per-parameter gradient-norm logging with .item() in a Python loop;
#   - per-class recall and precision with boolean masking and .item() in a loop over 18 classes.
# Each sync makes the CPU wait for the GPU's queue, then the GPU waits while the CPU launches the
# next piece: the two no longer overlap.
#
# 3 warm-up steps, 50 timed steps, then a control phase of 15 steps with the same model and data
# that does the same work without the syncs (torch.where instead of masks, metrics and norms
# kept on the GPU and copied once per step). GROUND TRUTH: time the CPU spent in the
# synchronising calls over the timed loop's wall time, and the control's speed-up.
# BLIND_SMALL=1: a smaller batch and fewer steps for a CPU check.
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SMALL = os.environ.get("BLIND_SMALL") == "1"
B = 32 if SMALL else 512
T = 48
BANDS = 13
D = 64 if SMALL else 256
LAYERS = 4
HEADS = 8
CLASSES = 18
WARMUP = 2 if SMALL else 3
TIMED = 4 if SMALL else 50
CONTROL = 3 if SMALL else 15
DEV = "cuda"


class SyncClock:
    """Accumulates the wall time of the synchronising calls (they block the CPU)."""

    def __init__(self):
        self.total = 0.0
        self.count = 0

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.total += time.perf_counter() - self.t0
        self.count += 1
        return False


SYNC = SyncClock()
GUARDS = True  # False in the control phase


def guard(h, where):
    if GUARDS:
        with SYNC:
            ok = bool(torch.isfinite(h).all())
        if not ok:
            raise FloatingPointError(f"non-finite activations after {where}")
    return h


class EncoderLayer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.n1 = nn.LayerNorm(d)
        self.n2 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, 4 * d)
        self.ff2 = nn.Linear(4 * d, d)

    def forward(self, x, key_mask, i):
        b, t, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        att = att.masked_fill(~key_mask[:, None, None, :], -1e4)
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = guard(x + self.proj(y), f"layer{i}.attn")
        x = guard(x + self.ff2(F.gelu(self.ff1(self.n2(x)))), f"layer{i}.ffn")
        return x


class CropTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(BANDS, D)
        self.layers = nn.ModuleList([EncoderLayer(D, HEADS) for _ in range(LAYERS)])
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, CLASSES)
        freq = torch.exp(torch.arange(0, D, 2) * (-math.log(10000.0) / D))
        self.register_buffer("freq", freq)

    def forward(self, x, doy, key_mask):
        pe = torch.cat([torch.sin(doy[..., None] * self.freq), torch.cos(doy[..., None] * self.freq)], -1)
        h = self.inp(x) + pe
        for i, layer in enumerate(self.layers):
            h = layer(h, key_mask, i)
        h = self.norm(h)
        w = key_mask.float()[..., None]
        return self.head((h * w).sum(1) / w.sum(1).clamp_min(1.0))


def make_batch(gen, peaks, widths, band_gain):
    y = torch.randint(0, CLASSES, (B,), device=DEV, generator=gen)
    doy = torch.sort(torch.rand(B, T, device=DEV, generator=gen) * 365.0, dim=1).values
    ndvi = 0.15 + 0.7 * torch.exp(-0.5 * ((doy - peaks[y][:, None]) / widths[y][:, None]) ** 2)
    x = ndvi[..., None] * band_gain[y][:, None, :] + 0.03 * torch.randn(B, T, BANDS, device=DEV, generator=gen)
    cloud = torch.rand(B, T, device=DEV, generator=gen) < 0.3
    x = torch.where(cloud[..., None], 0.9 + 0.05 * torch.randn_like(x), x)
    return x, doy / 365.0 * 2 * math.pi, cloud, y


def train_step(model, opt, batch, stats):
    x, doy, cloud, y = batch
    clear = ~cloud
    if GUARDS:
        # cloud screening: reflectance statistics of the clear observations only
        with SYNC:
            clear_obs = x[clear]
        mu = clear_obs.mean(0)
        sd = clear_obs.std(0) + 1e-3
        n_clear = clear.sum(1)
        with SYNC:
            any_empty = bool((n_clear == 0).any())
        if any_empty:
            clear = clear | (n_clear == 0)[:, None]
    else:
        w = clear.float()[..., None]
        cnt = w.sum((0, 1))
        mu = (x * w).sum((0, 1)) / cnt
        sd = (((x - mu) ** 2) * w).sum((0, 1)).div(cnt).sqrt() + 1e-3
    xn = (x - mu) / sd
    logits = model(xn, doy, clear)
    per = F.cross_entropy(logits, y, reduction="none")
    if GUARDS:
        # online hard-example mining: the hardest half of the parcels gets double weight
        with SYNC:
            hard = torch.nonzero(per > per.median()).squeeze(1)
        loss = per.mean() + per[hard].sum() / B
    else:
        loss = per.mean() + torch.where(per > per.median(), per, torch.zeros_like(per)).sum() / B
    opt.zero_grad(set_to_none=True)
    loss.backward()
    pred = logits.detach().argmax(1)
    if GUARDS:
        norms = {}
        for name, p in model.named_parameters():
            with SYNC:
                norms[name] = p.grad.norm().item()
        recall, prec = [], []
        for c in range(CLASSES):
            is_c = y == c
            with SYNC:
                n_c = int(is_c.sum())
            if n_c == 0:
                continue
            with SYNC:
                hits = pred[is_c]
            with SYNC:
                recall.append((hits == c).float().mean().item())
            with SYNC:
                prec.append(((pred == c) & is_c).sum().item() / max(1, int((pred == c).sum())))
        total_norm = math.sqrt(sum(v * v for v in norms.values()))
        macro_recall = sum(recall) / max(1, len(recall))
    else:
        norms = torch._foreach_norm([p.grad for p in model.parameters()])
        norms = torch.stack(norms)
        counts = torch.bincount(y, minlength=CLASSES)
        # true positives per class, misses binned into an extra class that is dropped
        tp = torch.bincount(torch.where(pred == y, y, torch.full_like(y, CLASSES)),
                            minlength=CLASSES + 1)[:CLASSES]
        summary = torch.cat([norms, counts.float(), tp.float()]).cpu()
        n = len(norms)
        total_norm = float(summary[:n].square().sum().sqrt())
        cnt = summary[n:n + CLASSES]
        tpv = summary[n + CLASSES:]
        valid = cnt > 0
        macro_recall = float((tpv[valid] / cnt[valid]).mean())
    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0, foreach=True)
    opt.step()
    stats.append((total_norm, macro_recall))
    return loss


def main():
    global GUARDS
    torch.manual_seed(0)
    gen = torch.Generator(device=DEV)
    gen.manual_seed(1)
    peaks = torch.linspace(90, 270, CLASSES, device=DEV)
    widths = 20.0 + 30.0 * torch.rand(CLASSES, device=DEV, generator=gen)
    band_gain = 0.3 + torch.rand(CLASSES, BANDS, device=DEV, generator=gen)
    model = CropTransformer().to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05, foreach=True)
    batches = [make_batch(gen, peaks, widths, band_gain) for _ in range(8)]
    stats = []
    for step in range(WARMUP):
        train_step(model, opt, batches[step % len(batches)], stats)
    torch.cuda.synchronize()
    SYNC.total, SYNC.count = 0.0, 0
    t0 = time.perf_counter()
    for step in range(TIMED):
        loss = train_step(model, opt, batches[step % len(batches)], stats)
        if step % 10 == 0:
            print(f"step {step:3d} loss {loss.item():.4f} grad-norm {stats[-1][0]:.3f} "
                  f"macro-recall {stats[-1][1]:.3f}", flush=True)
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t0
    sync_s, sync_n = SYNC.total, SYNC.count
    GUARDS = False
    torch.cuda.nvtx.range_push("control: same steps without the syncs")
    t1 = time.perf_counter()
    for step in range(CONTROL):
        train_step(model, opt, batches[step % len(batches)], stats)
    torch.cuda.synchronize()
    ctrl_s = time.perf_counter() - t1
    torch.cuda.nvtx.range_pop()
    per_step = loop_s / TIMED
    per_ctrl = ctrl_s / CONTROL
    print(f"timed loop: {TIMED} steps in {loop_s:.3f} s ({1e3 * per_step:.2f} ms/step), "
          f"{sync_n / TIMED:.0f} synchronising calls per step")
    print(f"control: {CONTROL} steps without the syncs in {ctrl_s:.3f} s ({1e3 * per_ctrl:.2f} ms/step)")
    print(f"GROUND TRUTH: CPU blocked in synchronising calls = {sync_s:.3f} s of {loop_s:.3f} s "
          f"= {100.0 * sync_s / loop_s:.1f}% of the timed loop (sync-stall); without them a step "
          f"takes {100.0 * per_ctrl / per_step:.0f}% of the time ({per_step / per_ctrl:.2f}x faster)")


if __name__ == "__main__":
    main()
