# blind24_mri_unrolled_recon.py: accelerated MRI reconstruction with an unrolled network.
#
# Single-coil 320x320 k-space, 4x Cartesian undersampling (a fully sampled centre of 22 lines
# plus random lines). The reconstruction network unrolls 5 cascades; each cascade is a 96-channel
# convolutional denoiser (6 convolutions, residual) followed by a data-consistency layer (FFT,
# re-insert the measured k-space lines, inverse FFT). Training in bf16 autocast, channels_last,
# batch 12 of synthetic phantoms (random ellipses with smooth texture). The convolutions are
# large: the GPU is busy for most of every step.
#
# After each step's loss.item() the host does a short stretch of its own: it copies two
# reconstructions and targets to numpy and computes SSIM (Gaussian window, FFT filtering), PSNR
# and NMSE for the training log; the GPU waits for that, about a tenth of the step.
#
# 3 warm-up steps, then 30 timed steps. GROUND TRUTH: the share of the timed loop the CPU spends
# waiting in loss.item() for the GPU's work (the GPU busy), and the share of the host stretch.
# BLIND_SMALL=1: smaller images, fewer channels and steps for a CPU check.
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SMALL = os.environ.get("BLIND_SMALL") == "1"
N = 64 if SMALL else 320
CH = 16 if SMALL else 96
CASCADES = 2 if SMALL else 5
CONVS = 6
BATCH = 2 if SMALL else 12
WARMUP = 1 if SMALL else 3
TIMED = 3 if SMALL else 30
N_LOG = 2
DEV = "cuda"


def phantoms(gen, n_img):
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, N, device=DEV), torch.linspace(-1, 1, N, device=DEV),
                            indexing="ij")
    k = 12
    cx = (torch.rand(n_img, k, 1, 1, device=DEV, generator=gen) - 0.5) * 1.2
    cy = (torch.rand(n_img, k, 1, 1, device=DEV, generator=gen) - 0.5) * 1.2
    ax = 0.05 + 0.4 * torch.rand(n_img, k, 1, 1, device=DEV, generator=gen)
    ay = 0.05 + 0.4 * torch.rand(n_img, k, 1, 1, device=DEV, generator=gen)
    th = torch.rand(n_img, k, 1, 1, device=DEV, generator=gen) * np.pi
    amp = torch.rand(n_img, k, 1, 1, device=DEV, generator=gen) * 0.6 + 0.1
    xr = (xx - cx) * torch.cos(th) + (yy - cy) * torch.sin(th)
    yr = -(xx - cx) * torch.sin(th) + (yy - cy) * torch.cos(th)
    inside = torch.sigmoid((1.0 - (xr / ax) ** 2 - (yr / ay) ** 2) * 30.0)
    img = (amp * inside).sum(1)
    texture = F.avg_pool2d(torch.randn(n_img, 1, N, N, device=DEV, generator=gen), 9, 1, 4)[:, 0]
    img = img * (1.0 + 0.5 * texture)
    return img / img.amax((1, 2), keepdim=True)


def sampling_mask(rng):
    m = np.zeros(N, dtype=np.float32)
    c = N // 2
    half = max(2, N // 27)
    m[c - half:c + half] = 1.0
    m[rng.choice(N, size=N // 4 - 2 * half, replace=False)] = 1.0
    return torch.from_numpy(m)


def fft2c(x):
    return torch.fft.fftshift(torch.fft.fft2(torch.fft.ifftshift(x, dim=(-2, -1)), norm="ortho"), dim=(-2, -1))


def ifft2c(k):
    return torch.fft.fftshift(torch.fft.ifft2(torch.fft.ifftshift(k, dim=(-2, -1)), norm="ortho"), dim=(-2, -1))


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        layers = [nn.Conv2d(2, CH, 3, padding=1)]
        for _ in range(CONVS - 2):
            layers += [nn.ReLU(inplace=True), nn.Conv2d(CH, CH, 3, padding=1)]
        layers += [nn.ReLU(inplace=True), nn.Conv2d(CH, 2, 3, padding=1)]
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.net(x)


class UnrolledRecon(nn.Module):
    def __init__(self):
        super().__init__()
        self.cascades = nn.ModuleList([Denoiser() for _ in range(CASCADES)])
        self.dc_weight = nn.Parameter(torch.ones(CASCADES))

    def forward(self, k_meas, mask):
        img = ifft2c(k_meas)
        for i, den in enumerate(self.cascades):
            x = torch.stack([img.real, img.imag], 1).contiguous(memory_format=torch.channels_last)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                x = den(x)
            x = x.float()
            img = torch.complex(x[:, 0].contiguous(), x[:, 1].contiguous())
            k = fft2c(img)
            lam = torch.sigmoid(self.dc_weight[i])
            k = torch.where(mask > 0, (1 - lam) * k + lam * k_meas, k)
            img = ifft2c(k)
        return img.abs()


# ---- host-side image quality metrics for the log (numpy) -------------------------------------
def _gauss_otf(n, sigma=1.5):
    f = np.fft.fftfreq(n)
    g = np.exp(-2.0 * (np.pi * sigma * f) ** 2)
    return np.outer(g, g[: n // 2 + 1]).astype(np.float32)


OTF = _gauss_otf(N)


def _filt(a):
    return np.fft.irfft2(np.fft.rfft2(a) * OTF, s=a.shape)


def ssim(a, b, data_range=1.0):
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    mu_a, mu_b = _filt(a), _filt(b)
    saa = _filt(a * a) - mu_a ** 2
    sbb = _filt(b * b) - mu_b ** 2
    sab = _filt(a * b) - mu_a * mu_b
    s = ((2 * mu_a * mu_b + c1) * (2 * sab + c2)) / ((mu_a ** 2 + mu_b ** 2 + c1) * (saa + sbb + c2))
    return float(s.mean())


def host_metrics(rec, ref):
    out = []
    for a, b in zip(rec, ref):
        mse = np.mean((a - b) ** 2)
        psnr = 10 * np.log10(b.max() ** 2 / max(mse, 1e-12))
        nmse = np.sum((a - b) ** 2) / np.sum(b ** 2)
        out.append((ssim(a, b, b.max()), psnr, nmse))
    return np.array(out)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(5)
    gen = torch.Generator(device=DEV)
    gen.manual_seed(2)
    torch.backends.cudnn.benchmark = True
    model = UnrolledRecon().to(DEV).to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=2e-4, foreach=True)
    pool = []
    for _ in range(4):
        tgt = phantoms(gen, BATCH)
        mask = sampling_mask(rng).to(DEV)[None, None, :]
        k = fft2c(tgt.to(torch.complex64)) * mask
        k = k + (0.002 * torch.randn(k.shape, device=DEV, generator=gen, dtype=torch.complex64)) * mask
        pool.append((k, mask, tgt))
    log = []
    wait_s = host_s = 0.0
    t0 = None
    for step in range(WARMUP + TIMED):
        if step == WARMUP:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            wait_s = host_s = 0.0
        k, mask, tgt = pool[step % len(pool)]
        rec = model(k, mask[0])
        loss = F.l1_loss(rec, tgt) + 0.1 * F.mse_loss(rec, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        tw = time.perf_counter()
        lv = loss.item()
        th = time.perf_counter()
        wait_s += th - tw
        # host stretch: metrics and the log line
        rec_np = rec[:N_LOG].detach().cpu().numpy()
        ref_np = tgt[:N_LOG].cpu().numpy()
        m = host_metrics(rec_np, ref_np)
        log.append({"step": step, "loss": lv, "ssim": float(m[:, 0].mean()), "psnr": float(m[:, 1].mean()),
                    "nmse": float(m[:, 2].mean())})
        host_s += time.perf_counter() - th
        if step % 10 == 0:
            e = log[-1]
            print(f"step {step:3d} loss {e['loss']:.4f} SSIM {e['ssim']:.3f} PSNR {e['psnr']:.2f} dB "
                  f"NMSE {e['nmse']:.4f}", flush=True)
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t0
    print(f"timed loop: {TIMED} steps in {loop_s:.3f} s ({1e3 * loop_s / TIMED:.1f} ms/step), "
          f"{CASCADES} cascades x {CONVS} convs of {CH} channels at {N}x{N}, batch {BATCH}")
    print(f"GROUND TRUTH: CPU waiting in loss.item() for the GPU = {wait_s:.3f} s of {loop_s:.3f} s "
          f"= {100.0 * wait_s / loop_s:.1f}% of the timed loop (gpu-bound); host metrics stretch "
          f"after it = {100.0 * host_s / loop_s:.1f}%")


if __name__ == "__main__":
    main()
