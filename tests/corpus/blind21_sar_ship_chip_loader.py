"""Ship detection on Sentinel-1 SAR chips: train a small U-Net that predicts a ship-centre heatmap.

Each training chip is a dual-polarisation (VV, VH) 16-bit amplitude tile stored compressed (as it
comes out of the tiling job); the dataset decodes it, applies a 7x7 Lee speckle filter, converts to
decibels, augments (flips / 90-degree turns) and renders the Gaussian target heatmap from the ship
list. The run: start-up (chip archive, model), warm-up steps, the timed training steps with a loss
log every 25 steps, a validation pass every 50 steps, a final checkpoint, teardown.
"""
import os
import time
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

SMALL = os.environ.get("BLIND_SMALL") == "1"
DEV = "cuda"
CHIP = 64 if SMALL else 256
N_ARCHIVE = 12 if SMALL else 48          # distinct compressed chips kept in memory
N_SAMPLES = 10_000
BATCH = 4 if SMALL else 16
WORKERS = 2
WARMUP = 2 if SMALL else 5
STEPS = 6 if SMALL else 150
LOG_EVERY, VAL_EVERY = 25, 50
WIDTH = 8 if SMALL else 64


def make_archive(rng):
    """Simulated tiler output: zlib-compressed uint16 (2, CHIP, CHIP) plus ship centres."""
    chips = []
    yy, xx = np.mgrid[0:CHIP, 0:CHIP]
    for _ in range(N_ARCHIVE):
        sea = rng.gamma(1.0, 1.0, size=(2, CHIP, CHIP)).astype(np.float32) * 120.0
        ships = rng.uniform(8, CHIP - 8, size=(int(rng.integers(1, 6)), 2)).astype(np.float32)
        for cy, cx in ships:
            blob = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 6.0).astype(np.float32)
            sea[0] += 4000.0 * blob
            sea[1] += 1500.0 * blob
        raw = np.clip(sea, 0, 65535).astype(np.uint16).tobytes()
        chips.append((zlib.compress(raw, 6), ships))
    return chips


def box_mean(x, k):
    p = k // 2
    xp = np.pad(x, ((0, 0), (p + 1, p), (p + 1, p)), mode="reflect")
    c = xp.cumsum(1).cumsum(2)
    return (c[:, k:, k:] - c[:, :-k, k:] - c[:, k:, :-k] + c[:, :-k, :-k]) / (k * k)


class SarChips(Dataset):
    def __init__(self, archive, n, seed):
        self.archive, self.n, self.seed = archive, n, seed
        self.yy, self.xx = np.mgrid[0:CHIP, 0:CHIP].astype(np.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed * 1_000_003 + i)
        blob, ships = self.archive[i % len(self.archive)]
        amp = np.frombuffer(zlib.decompress(blob), dtype=np.uint16)
        amp = amp.reshape(2, CHIP, CHIP).astype(np.float32)
        # Lee filter, 7x7 window, per polarisation
        m = box_mean(amp, 7)
        v = np.maximum(box_mean(amp * amp, 7) - m * m, 1e-6)
        noise = v.mean(axis=(1, 2), keepdims=True) * 0.25
        filt = m + (v / (v + noise)) * (amp - m)
        db = 10.0 * np.log10(np.maximum(filt, 1e-3))
        db = (db - 20.0) / 10.0
        heat = np.zeros((CHIP, CHIP), np.float32)
        for cy, cx in ships:
            heat = np.maximum(heat, np.exp(-((self.yy - cy) ** 2 + (self.xx - cx) ** 2) / 8.0))
        k = int(rng.integers(0, 4))
        db, heat = np.rot90(db, k, axes=(1, 2)), np.rot90(heat, k)
        if rng.random() < 0.5:
            db, heat = db[:, :, ::-1], heat[:, ::-1]
        return (torch.from_numpy(np.ascontiguousarray(db, dtype=np.float32)),
                torch.from_numpy(np.ascontiguousarray(heat[None], dtype=np.float32)))


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class ShipUNet(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.e1, self.e2, self.e3, self.e4 = block(2, w), block(w, 2 * w), block(2 * w, 4 * w), \
            block(4 * w, 8 * w)
        self.u3, self.d3 = nn.ConvTranspose2d(8 * w, 4 * w, 2, 2), block(8 * w, 4 * w)
        self.u2, self.d2 = nn.ConvTranspose2d(4 * w, 2 * w, 2, 2), block(4 * w, 2 * w)
        self.u1, self.d1 = nn.ConvTranspose2d(2 * w, w, 2, 2), block(2 * w, w)
        self.head = nn.Conv2d(w, 1, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(F.max_pool2d(a, 2))
        c = self.e3(F.max_pool2d(b, 2))
        d = self.e4(F.max_pool2d(c, 2))
        c = self.d3(torch.cat([self.u3(d), c], 1))
        b = self.d2(torch.cat([self.u2(c), b], 1))
        a = self.d1(torch.cat([self.u1(b), a], 1))
        return self.head(a)


def focal_heatmap_loss(logits, target):
    p = torch.sigmoid(logits)
    pos = target.gt(0.95).float()
    w = torch.where(pos > 0, (1 - p) ** 2, (1 - target) ** 4 * p ** 2)
    bce = F.binary_cross_entropy_with_logits(logits, pos, reduction="none")
    return (w * bce).sum() / pos.sum().clamp(min=1.0)


def main():
    rng = np.random.default_rng(7)
    torch.manual_seed(7)
    archive = make_archive(rng)
    train = SarChips(archive, N_SAMPLES, seed=1)
    loader = DataLoader(train, batch_size=BATCH, shuffle=True, num_workers=WORKERS,
                        pin_memory=True, drop_last=True, persistent_workers=True)
    val_set = SarChips(archive, 4 * BATCH, seed=99)
    val_batches = [tuple(t.to(DEV) for t in
                         torch.utils.data.default_collate([val_set[j] for j in
                                                           range(k * BATCH, (k + 1) * BATCH)]))
                   for k in range(4)]

    model = ShipUNet(WIDTH).to(DEV).to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-3, total_steps=WARMUP + STEPS + 1)

    def train_step(x, y):
        x = x.to(DEV, non_blocking=True).to(memory_format=torch.channels_last)
        y = y.to(DEV, non_blocking=True)
        loss = focal_heatmap_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        return loss

    it = iter(loader)
    for _ in range(WARMUP):
        x, y = next(it)
        train_step(x, y)
    torch.cuda.synchronize()

    wait_s = 0.0
    losses = []
    t_loop = time.perf_counter()
    for step in range(1, STEPS + 1):
        t0 = time.perf_counter()
        x, y = next(it)
        wait_s += time.perf_counter() - t0
        loss = train_step(x, y)
        losses.append(loss.detach())
        if step % LOG_EVERY == 0:
            print(f"step {step:4d}  loss {torch.stack(losses[-LOG_EVERY:]).mean().item():.4f}  "
                  f"lr {sched.get_last_lr()[0]:.2e}")
        if step % VAL_EVERY == 0:
            model.eval()
            with torch.no_grad():
                vl = sum(focal_heatmap_loss(model(vx.contiguous(memory_format=torch.channels_last)),
                                            vy) for vx, vy in val_batches) / len(val_batches)
            model.train()
            print(f"step {step:4d}  val loss {vl.item():.4f}")
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t_loop

    ckpt = os.path.join("/tmp", f"sar_ship_unet_{os.getpid()}.pt")
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": STEPS}, ckpt)
    os.remove(ckpt)
    del it, loader
    print(f"GROUND TRUTH: input-bound: main thread blocked in next(DataLoader) "
          f"{wait_s:.2f} s of the {loop_s:.2f} s timed loop ({100 * wait_s / loop_s:.0f}%); "
          f"{WORKERS} workers decoding+Lee-filtering {BATCH} chips/batch; "
          f"{STEPS} timed steps after {WARMUP} warm-up steps")


if __name__ == "__main__":
    main()
