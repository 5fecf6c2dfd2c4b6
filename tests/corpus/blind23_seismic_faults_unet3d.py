"""Fault segmentation in 3D seismic cubes with a 3D U-Net (FaultSeg3D-style training).

Every step synthesises a batch of two 128^3 seismic cubes on the GPU: a layered
reflectivity series, folded by a smooth vertical shift field, cut by three planar normal
faults with random strike, dip and throw, convolved with a Ricker wavelet, plus noise;
the label is a fault mask. The host draws the per-cube geology (well-log-like layer
sequence and the coarse folding field, with numpy) and uploads it. The network is a
4-level 3D U-Net (32-64-128-256 channels, BatchNorm, ReLU) trained with a class-balanced
BCE + Dice loss in bf16 autocast, channels_last_3d, fused AdamW. The loss is read back
every step for the log; every 40 steps two fixed validation cubes are scored.

No NVTX ranges. BLIND_SMALL=1 runs a 32^3 version for a few steps.
"""
import math
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SMALL = os.environ.get("BLIND_SMALL") == "1"
DEV = "cuda"
CUBE = 32 if SMALL else 128
BATCH = 2
WIDTHS = (8, 16, 32, 64) if SMALL else (32, 64, 128, 256)
WARMUP = 2 if SMALL else 12
STEPS = 6 if SMALL else 360
VAL_EVERY = 3 if SMALL else 40
FOLD_RES = 8 if SMALL else 24      # host-side folding field resolution
N_BUMPS = 16
N_FAULTS = 3
PAD = 48                           # reflectivity series is longer than the cube (shifts)


# ---------------------------------------------------------------- host-side geology
def host_geology(rng):
    """One cube's geology, drawn on the host: reflectivity series and coarse folding field."""
    # well-log-like impedance sequence: layers of random thickness, compaction trend
    n = CUBE + 2 * PAD
    imp = np.empty(n, dtype=np.float64)
    z = 0
    base = 2.0
    while z < n:
        thick = int(rng.integers(2, 9))
        base += rng.normal(0.0, 0.12)
        val = base + 0.004 * z + rng.normal(0.0, 0.05)
        imp[z:z + thick] = val
        z += thick
    refl = np.zeros(n, dtype=np.float32)
    refl[1:] = ((imp[1:] - imp[:-1]) / (imp[1:] + imp[:-1])).astype(np.float32)
    # folding: sum of Gaussian bumps, amplitude growing with depth, on a coarse grid
    g = (np.arange(FOLD_RES) + 0.5) / FOLD_RES
    zz, yy, xx = np.meshgrid(g, g, g, indexing="ij")
    cx = rng.uniform(0, 1, N_BUMPS)
    cy = rng.uniform(0, 1, N_BUMPS)
    amp = rng.uniform(-1, 1, N_BUMPS) * (0.15 * CUBE)
    sig = rng.uniform(0.08, 0.3, N_BUMPS)
    d2 = ((xx[..., None] - cx) ** 2 + (yy[..., None] - cy) ** 2) / (2 * sig ** 2)
    fold = (amp * np.exp(-d2)).sum(-1) * (0.3 + 0.7 * zz)
    tilt = rng.uniform(-0.1, 0.1, 2) * CUBE
    fold += tilt[0] * xx + tilt[1] * yy
    # faults: strike, dip, throw, a point on the plane
    faults = []
    for _ in range(N_FAULTS):
        strike = rng.uniform(0, 2 * math.pi)
        dip = rng.uniform(math.radians(55), math.radians(80))
        nrm = np.array([math.cos(dip), math.sin(dip) * math.cos(strike),
                        math.sin(dip) * math.sin(strike)])          # (z, y, x) components
        p0 = rng.uniform(0.2, 0.8, 3) * CUBE
        throw = rng.uniform(3, 12) * rng.choice([-1.0, 1.0]) * CUBE / 128
        faults.append(np.concatenate([nrm, p0, [throw]]))
    return refl, fold.astype(np.float32), np.array(faults, dtype=np.float32)


def ricker(f=0.12, n=21):
    t = np.arange(n) - n // 2
    a = (math.pi * f * t) ** 2
    return ((1 - 2 * a) * np.exp(-a)).astype(np.float32)


# ---------------------------------------------------------------- GPU-side cube synthesis
class CubeSynth:
    def __init__(self):
        c = torch.arange(CUBE, device=DEV, dtype=torch.float32)
        self.zz, self.yy, self.xx = torch.meshgrid(c, c, c, indexing="ij")
        self.wavelet = torch.from_numpy(ricker()).to(DEV).view(1, 1, -1, 1, 1)

    def make(self, refl, fold, faults, gen_seed):
        """refl (B, n), fold (B, R, R, R), faults (B, F, 7), all on the GPU already."""
        shift = F.interpolate(fold.unsqueeze(1), size=(CUBE, CUBE, CUBE), mode="trilinear",
                              align_corners=False).squeeze(1)
        label = torch.zeros_like(shift)
        for f in range(N_FAULTS):
            p = faults[:, f]
            nz, ny, nx = (p[:, i].view(-1, 1, 1, 1) for i in range(3))
            pz, py, px = (p[:, 3 + i].view(-1, 1, 1, 1) for i in range(3))
            thr = p[:, 6].view(-1, 1, 1, 1)
            dist = nz * (self.zz - pz) + ny * (self.yy - py) + nx * (self.xx - px)
            shift = shift + thr * torch.sigmoid(dist * 4.0)
            label = torch.maximum(label, (dist.abs() < 0.75).float())
        zsrc = (self.zz + PAD + shift).clamp(0, refl.shape[1] - 2)
        z0 = zsrc.floor()
        w = zsrc - z0
        idx = z0.long().flatten(1)
        r0 = torch.gather(refl, 1, idx).view_as(zsrc)
        r1 = torch.gather(refl, 1, idx + 1).view_as(zsrc)
        vol = (r0 * (1 - w) + r1 * w).unsqueeze(1)
        vol = F.conv3d(vol, self.wavelet, padding=(self.wavelet.shape[2] // 2, 0, 0))
        g = torch.Generator(device="cpu").manual_seed(gen_seed)
        noise_level = float(torch.rand((), generator=g)) * 0.3
        vol = vol + noise_level * vol.std() * torch.randn_like(vol)
        vol = (vol - vol.mean(dim=(2, 3, 4), keepdim=True)) / (
            vol.std(dim=(2, 3, 4), keepdim=True) + 1e-6)
        return vol, label.unsqueeze(1)


# ---------------------------------------------------------------- model
def block(cin, cout):
    return nn.Sequential(
        nn.Conv3d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm3d(cout), nn.ReLU(inplace=True),
        nn.Conv3d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm3d(cout), nn.ReLU(inplace=True))


class UNet3D(nn.Module):
    def __init__(self, widths):
        super().__init__()
        w1, w2, w3, w4 = widths
        self.e1, self.e2, self.e3, self.e4 = block(1, w1), block(w1, w2), block(w2, w3), block(w3, w4)
        self.u3 = nn.ConvTranspose3d(w4, w3, 2, stride=2)
        self.d3 = block(2 * w3, w3)
        self.u2 = nn.ConvTranspose3d(w3, w2, 2, stride=2)
        self.d2 = block(2 * w2, w2)
        self.u1 = nn.ConvTranspose3d(w2, w1, 2, stride=2)
        self.d1 = block(2 * w1, w1)
        self.head = nn.Conv3d(w1, 1, 1)

    def forward(self, x):
        x1 = self.e1(x)
        x2 = self.e2(F.max_pool3d(x1, 2))
        x3 = self.e3(F.max_pool3d(x2, 2))
        x4 = self.e4(F.max_pool3d(x3, 2))
        y = self.d3(torch.cat([self.u3(x4), x3], 1))
        y = self.d2(torch.cat([self.u2(y), x2], 1))
        y = self.d1(torch.cat([self.u1(y), x1], 1))
        return self.head(y)


def fault_loss(logits, label):
    logits = logits.float()
    pos = label.mean().clamp_min(1e-3)
    weight = torch.where(label > 0.5, (1 - pos) / pos, torch.ones_like(label))
    bce = F.binary_cross_entropy_with_logits(logits, label, weight=weight)
    prob = torch.sigmoid(logits)
    inter = (prob * label).sum(dim=(1, 2, 3, 4))
    dice = 1 - (2 * inter + 1) / (prob.sum(dim=(1, 2, 3, 4)) + label.sum(dim=(1, 2, 3, 4)) + 1)
    return bce + dice.mean()


def main():
    t_start = time.perf_counter()
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    rng = np.random.default_rng(23)
    synth = CubeSynth()
    model = UNet3D(WIDTHS).to(DEV).to(memory_format=torch.channels_last_3d)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=1e-4,
                            fused=(DEV == "cuda" and torch.cuda.is_available()))
    nparam = sum(p.numel() for p in model.parameters())
    print(f"3D U-Net {WIDTHS}, {nparam / 1e6:.2f} M parameters, cubes {BATCH} x {CUBE}^3")

    def upload(geos):
        refl = torch.from_numpy(np.stack([g[0] for g in geos])).to(DEV)
        fold = torch.from_numpy(np.stack([g[1] for g in geos])).to(DEV)
        faults = torch.from_numpy(np.stack([g[2] for g in geos])).to(DEV)
        return refl, fold, faults

    # fixed validation cubes, synthesised once
    val_rng = np.random.default_rng(999)
    with torch.no_grad():
        val_x, val_y = synth.make(*upload([host_geology(val_rng) for _ in range(2)]), 999)
    val_x = val_x.contiguous(memory_format=torch.channels_last_3d)

    def validate():
        model.eval()
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            pred = (model(val_x).float() > 0).float()
        tp = (pred * val_y).sum()
        stats = torch.stack([tp, pred.sum(), val_y.sum()]).cpu().numpy()
        model.train()
        prec = stats[0] / max(stats[1], 1.0)
        rec = stats[0] / max(stats[2], 1.0)
        return prec, rec

    host_s = 0.0
    sync_s = 0.0
    events = []
    losses = []

    def train_step(step, timed):
        nonlocal host_s, sync_s
        t0 = time.perf_counter()
        geos = [host_geology(rng) for _ in range(BATCH)]
        refl, fold, faults = upload(geos)
        t1 = time.perf_counter()
        if timed:
            host_s += t1 - t0
            ev0 = torch.cuda.Event(enable_timing=True)
            ev1 = torch.cuda.Event(enable_timing=True)
            ev0.record()
        with torch.no_grad():
            x, y = synth.make(refl, fold, faults, 1000 + step)
        x = x.contiguous(memory_format=torch.channels_last_3d)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
        loss = fault_loss(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if timed:
            ev1.record()
            events.append((ev0, ev1))
        t2 = time.perf_counter()
        lv = loss.item()                      # the per-step log line's value
        if timed:
            sync_s += time.perf_counter() - t2
        losses.append(lv)
        return lv

    for s in range(WARMUP):
        train_step(s, timed=False)
    torch.cuda.synchronize()
    t_warm = time.perf_counter()
    print(f"warm-up: {WARMUP} steps, {t_warm - t_start:.1f} s since start")

    val_s = 0.0
    t_loop = time.perf_counter()
    for s in range(STEPS):
        lv = train_step(WARMUP + s, timed=True)
        if (s + 1) % VAL_EVERY == 0:
            tv = time.perf_counter()
            prec, rec = validate()
            val_s += time.perf_counter() - tv
            print(f"step {s + 1}: loss {lv:.4f}, validation precision {prec:.3f} recall {rec:.3f}")
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t_loop

    gpu_s = sum(a.elapsed_time(b) for a, b in events) / 1000.0
    torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()},
               os.path.join(os.environ.get("TMPDIR", "/tmp"), "blind23_faultseg3d.pt"))
    print(f"timed loop: {STEPS} steps in {loop_s:.2f} s ({loop_s / STEPS * 1e3:.1f} ms/step), "
          f"first loss {losses[0]:.4f}, last {losses[-1]:.4f}; total {time.perf_counter() - t_start:.1f} s")
    print(f"GROUND TRUTH: planted=gpu-bound share={gpu_s / loop_s:.3f} gpu_s={gpu_s:.2f} "
          f"loop_s={loop_s:.2f} host_geology_share={host_s / loop_s:.3f} "
          f"loss_item_share={sync_s / loop_s:.3f} validation_share={val_s / loop_s:.3f} "
          f"steps={STEPS} warmup={WARMUP}")


if __name__ == "__main__":
    main()
