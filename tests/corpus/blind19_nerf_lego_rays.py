"""NeRF training on a synthetic multi-view scene (analytic spheres on a checkered floor).

The training views are rendered once at start-up by exact ray tracing of the scene, so the script
needs no dataset. Each step samples RAYS random rays from all views, places SAMPLES stratified
points along each, runs the 8-layer, 256-wide NeRF MLP (positional encoding, skip connection at
layer 4, view-dependent colour head) under bf16 autocast, and volume-renders the colours. Every
VAL_EVERY steps a held-out view is rendered in chunks, copied to the host, tone-mapped and scored
with PSNR and a NumPy SSIM; every CKPT_EVERY steps the weights are serialised.
"""
import io
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = "cuda"
VIEWS = 36
RES = 200
RAYS = 8192
SAMPLES = 128
STEPS = 700
WARMUP = 15
LOG_EVERY = 50
VAL_EVERY = 50
VAL_RES = 200
CHUNK = 8192
CKPT_EVERY = 350
NEAR, FAR = 2.0, 6.0

SPHERES = torch.tensor([[0.0, 0.0, 0.55, 0.55], [0.9, 0.4, 0.35, 0.35], [-0.7, 0.6, 0.3, 0.3],
                        [0.2, -0.9, 0.4, 0.4]])
COLORS = torch.tensor([[0.9, 0.2, 0.2], [0.2, 0.8, 0.3], [0.2, 0.3, 0.9], [0.9, 0.8, 0.2]])


def camera_rays(theta, phi, res, radius=4.0):
    eye = torch.tensor([radius * math.cos(theta) * math.cos(phi), radius * math.sin(theta) * math.cos(phi),
                        radius * math.sin(phi)], device=DEVICE)
    fwd = F.normalize(-eye, dim=0)
    right = F.normalize(torch.linalg.cross(fwd, torch.tensor([0.0, 0.0, 1.0], device=DEVICE)), dim=0)
    up = torch.linalg.cross(right, fwd)
    s = torch.linspace(-0.5, 0.5, res, device=DEVICE)
    v, u = torch.meshgrid(-s, s, indexing="ij")
    d = F.normalize(fwd + u[..., None] * right + v[..., None] * up, dim=-1).reshape(-1, 3)
    return eye.expand_as(d), d


def trace_scene(o, d):
    """Exact colours: nearest sphere hit with Lambert shading, else a checkered floor, else sky."""
    sph, col = SPHERES.to(DEVICE), COLORS.to(DEVICE)
    oc = o[:, None, :] - sph[None, :, :3]
    b = (oc * d[:, None, :]).sum(-1)
    c = (oc * oc).sum(-1) - sph[None, :, 3] ** 2
    disc = b * b - c
    t = torch.where(disc > 0, -b - disc.clamp_min(0).sqrt(), torch.full_like(b, float("inf")))
    t = torch.where(t > 0, t, torch.full_like(t, float("inf")))
    t_hit, which = t.min(1)
    light = F.normalize(torch.tensor([0.4, -0.3, 1.0], device=DEVICE), dim=0)
    p = o + t_hit.clamp_max(100)[:, None] * d
    n = F.normalize(p - sph[which, :3], dim=-1)
    rgb = col[which] * (0.25 + 0.75 * (n @ light).clamp_min(0))[:, None]
    t_floor = (-0.01 - o[:, 2]) / d[:, 2]
    pf = o + t_floor[:, None] * d
    check = ((pf[:, 0].floor() + pf[:, 1].floor()) % 2)[:, None] * 0.4 + 0.45
    floor_ok = (t_floor > 0) & (t_floor < t_hit)
    sky = torch.tensor([0.7, 0.8, 1.0], device=DEVICE).expand_as(rgb)
    out = torch.where(torch.isfinite(t_hit)[:, None], rgb, sky)
    return torch.where(floor_ok[:, None], check.expand_as(rgb), out)


def encode(x, n_freq):
    freqs = 2.0 ** torch.arange(n_freq, device=x.device, dtype=x.dtype) * math.pi
    xf = x[..., None] * freqs
    return torch.cat([x, torch.sin(xf).flatten(-2), torch.cos(xf).flatten(-2)], -1)


class NeRF(nn.Module):
    def __init__(self, width=256, pos_freq=10, dir_freq=4):
        super().__init__()
        self.pos_freq, self.dir_freq = pos_freq, dir_freq
        pin, din = 3 + 6 * pos_freq, 3 + 6 * dir_freq
        self.trunk = nn.ModuleList([nn.Linear(pin, width)] + [
            nn.Linear(width + (pin if i == 4 else 0), width) for i in range(1, 8)])
        self.sigma = nn.Linear(width, 1)
        self.feat = nn.Linear(width, width)
        self.view = nn.Linear(width + din, width // 2)
        self.rgb = nn.Linear(width // 2, 3)

    def forward(self, pts, dirs):
        xp = encode(pts, self.pos_freq)
        h = xp
        for i, layer in enumerate(self.trunk):
            if i == 4:
                h = torch.cat([h, xp], -1)
            h = F.relu(layer(h))
        sigma = self.sigma(h).squeeze(-1)
        h = F.relu(self.view(torch.cat([self.feat(h), encode(dirs, self.dir_freq)], -1)))
        return sigma, torch.sigmoid(self.rgb(h))


def render(model, o, d, n_samples, jitter):
    n = o.shape[0]
    t = torch.linspace(NEAR, FAR, n_samples + 1, device=DEVICE)[:-1].expand(n, n_samples)
    if jitter:
        t = t + torch.rand(n, n_samples, device=DEVICE) * (FAR - NEAR) / n_samples
    pts = o[:, None, :] + t[..., None] * d[:, None, :]
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        sigma, rgb = model(pts.reshape(-1, 3), d[:, None, :].expand_as(pts).reshape(-1, 3))
    sigma = sigma.float().view(n, n_samples)
    rgb = rgb.float().view(n, n_samples, 3)
    delta = torch.cat([t[:, 1:] - t[:, :-1], torch.full_like(t[:, :1], 1e3)], 1)
    alpha = 1.0 - torch.exp(-F.relu(sigma) * delta)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1.0 - alpha + 1e-10], 1), 1)[:, :-1]
    w = alpha * trans
    return (w[..., None] * rgb).sum(1) + (1.0 - w.sum(1, keepdim=True))


def ssim_np(a, b):
    g = np.exp(-0.5 * (np.arange(-5, 6) / 1.5) ** 2)
    g /= g.sum()

    def blur(x):
        x = np.apply_along_axis(lambda r: np.convolve(r, g, mode="same"), 0, x)
        return np.apply_along_axis(lambda r: np.convolve(r, g, mode="same"), 1, x)

    out = []
    for ch in range(3):
        x, y = a[..., ch], b[..., ch]
        mx, my = blur(x), blur(y)
        vx, vy, cxy = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
        c1, c2 = 0.01 ** 2, 0.03 ** 2
        out.append(((2 * mx * my + c1) * (2 * cxy + c2) / ((mx * mx + my * my + c1) * (vx + vy + c2))).mean())
    return float(np.mean(out))


def main():
    torch.manual_seed(0)
    t_start = time.perf_counter()
    rng = np.random.default_rng(0)
    origins, dirs, colors = [], [], []
    for v in range(VIEWS):
        o, d = camera_rays(rng.uniform(0, 2 * math.pi), rng.uniform(0.15, 0.9), RES)
        origins.append(o)
        dirs.append(d)
        colors.append(trace_scene(o, d))
    origins, dirs, colors = torch.cat(origins), torch.cat(dirs), torch.cat(colors)
    vo, vd = camera_rays(1.0, 0.45, VAL_RES)
    v_gt = trace_scene(vo, vd).view(VAL_RES, VAL_RES, 3).cpu().numpy()

    model = NeRF().to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=5e-4, fused=True)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, 0.1 ** (1 / (STEPS + WARMUP)))
    print(f"setup {time.perf_counter() - t_start:.1f} s, {origins.shape[0]} training rays")

    step_events = []
    losses = []
    t_loop = None
    for step in range(STEPS + WARMUP):
        if step == WARMUP:
            torch.cuda.synchronize()
            t_loop = time.perf_counter()
            step_events = []
        ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ev0.record()
        idx = torch.randint(0, origins.shape[0], (RAYS,), device=DEVICE)
        pred = render(model, origins[idx], dirs[idx], SAMPLES, jitter=True)
        loss = F.mse_loss(pred, colors[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        ev1.record()
        step_events.append((ev0, ev1))
        losses.append(loss.detach())

        if (step + 1) % LOG_EVERY == 0:
            mse = torch.stack(losses[-LOG_EVERY:]).mean().item()
            print(f"step {step + 1} loss {mse:.5f} train PSNR {-10 * math.log10(mse):.2f}")
        if (step + 1) % VAL_EVERY == 0:
            with torch.no_grad():
                img = torch.cat([render(model, vo[c:c + CHUNK], vd[c:c + CHUNK], SAMPLES, False)
                                 for c in range(0, vo.shape[0], CHUNK)])
            img = img.view(VAL_RES, VAL_RES, 3).clamp(0, 1).cpu().numpy()
            mse = float(((img - v_gt) ** 2).mean())
            print(f"  val PSNR {-10 * math.log10(mse):.2f} SSIM {ssim_np(img, v_gt):.4f}")
        if (step + 1) % CKPT_EVERY == 0:
            buf = io.BytesIO()
            torch.save(model.state_dict(), buf)
            print(f"  checkpoint {buf.tell() / 1e6:.1f} MB")

    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t_loop
    gpu_s = sum(a.elapsed_time(b) for a, b in step_events) / 1e3
    print(f"GROUND TRUTH: training-step GPU time (CUDA events) {gpu_s:.2f} s of {loop_s:.2f} s timed loop "
          f"({100 * gpu_s / loop_s:.0f}%), {STEPS} steps")


if __name__ == "__main__":
    main()
