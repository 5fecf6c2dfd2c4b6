"""Airborne hyperspectral processing: radiometric and atmospheric correction plus land-cover
classification of 224-band flight lines, tile by tile.

Raw digital numbers (int16, band-sequential 512x512 tiles, as the sensor's tiled product stores
them) are taken from the reader, moved to the GPU, converted to radiance with per-band gain and
offset, corrected to surface reflectance (path radiance, transmittance, solar irradiance), and
classified per pixel by a spectral MLP (1x1 convolutions) with 3x3 smoothing of the class
probabilities. The reflectance product (binned to 112 bands, fp16) goes back into the strip
buffer that the writer flushes, and the class probabilities and class map come back for the
mosaic. NVTX ranges mark read / upload / correct_classify / download / strip.
"""
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = "cuda"
BANDS = 224
TILE = 512
POOL = 6
FLIGHTLINES = 4
ROWS = 16
COLS = 10
CLASSES = 16
HIDDEN = 512
OUT_BANDS = BANDS // 2
OUT_DIR = "/tmp/blind18_hsi"

nvtx = torch.cuda.nvtx


class SpectralMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(BANDS, HIDDEN, 1), nn.GELU(),
                                 nn.Conv2d(HIDDEN, HIDDEN, 1), nn.GELU(),
                                 nn.Conv2d(HIDDEN, CLASSES, 1))

    def forward(self, x):
        return self.net(x)


class TileReader:
    """Hands out band-sequential int16 tiles of the current flight line (a small pool of decoded
    tiles stands in for the sensor files)."""

    def __init__(self, rng):
        base = rng.integers(200, 3800, size=(BANDS, TILE, TILE), dtype=np.int16)
        self.pool = [base]
        for k in range(1, POOL):
            t = np.roll(base, shift=37 * k, axis=2)
            t[: BANDS // 3] += np.int16(40 * k)
            self.pool.append(t)
        self.reads = 0

    def read(self, line, row, col):
        self.reads += 1
        return self.pool[(line * 31 + row * COLS + col) % POOL]


def main():
    t_start = time.perf_counter()
    os.makedirs(OUT_DIR, exist_ok=True)
    rng = np.random.default_rng(5)
    torch.manual_seed(5)
    reader = TileReader(rng)
    wl = torch.linspace(400, 2500, BANDS, device=DEVICE)
    gain = (0.01 + 0.004 * torch.cos(wl / 300)).view(BANDS, 1, 1)
    offset = (0.5 + 0.1 * torch.sin(wl / 200)).view(BANDS, 1, 1)
    path = (8.0 * torch.exp(-(wl - 400) / 250)).view(BANDS, 1, 1)
    trans = (0.85 - 0.5 * torch.exp(-((wl - 1400) / 40) ** 2)
             - 0.6 * torch.exp(-((wl - 1900) / 50) ** 2)).clamp_min(0.05).view(BANDS, 1, 1)
    e_sun = (57.0 * torch.exp(-((wl - 500) / 900) ** 2) + 1.5).view(BANDS, 1, 1)
    blue = int((wl - 470).abs().argmin())
    model = SpectralMLP().to(DEVICE).eval()
    strip = np.empty((COLS, OUT_BANDS, TILE, TILE), dtype=np.float16)
    rgb_bands = [int((wl - w).abs().argmin()) // 2 for w in (650, 550, 470)]
    copy_s = 0.0
    moved = 0
    tiles = 0
    cloud = torch.zeros((), device=DEVICE)
    class_hist = np.zeros(CLASSES, dtype=np.int64)
    print(f"setup {time.perf_counter() - t_start:.1f} s: {FLIGHTLINES} flight lines of "
          f"{ROWS}x{COLS} tiles, {BANDS} bands, {reader.pool[0].nbytes / 2 ** 20:.0f} MiB per tile",
          flush=True)
    torch.cuda.synchronize()
    loop_t0 = time.perf_counter()
    for line in range(FLIGHTLINES):
        cos_sza = 0.9 - 0.05 * line
        quicklook = []
        for row in range(ROWS):
            for col in range(COLS):
                nvtx.range_push("read")
                dn = reader.read(line, row, col)
                nvtx.range_pop()
                nvtx.range_push("upload")
                t0 = time.perf_counter()
                dn_gpu = torch.from_numpy(dn).to(DEVICE)
                copy_s += time.perf_counter() - t0
                moved += dn.nbytes
                nvtx.range_pop()
                nvtx.range_push("correct_classify")
                with torch.no_grad():
                    rad = dn_gpu.float().mul_(gain).add_(offset)
                    refl = rad.sub_(path).div_(trans * e_sun * cos_sza).clamp_(0.0, 1.5)
                    cloud += (refl[blue] > 0.6).float().mean()
                    binned = refl.view(OUT_BANDS, 2, TILE, TILE).mean(1).half()
                    with torch.autocast(device_type=DEVICE, dtype=torch.bfloat16):
                        logits = model(refl[None])
                    probs = F.avg_pool2d(torch.softmax(logits.float(), 1), 3, 1, 1)[0]
                    cls = probs.argmax(0).to(torch.uint8)
                    probs16 = probs.half()
                nvtx.range_pop()
                nvtx.range_push("download")
                t0 = time.perf_counter()
                torch.from_numpy(strip[col]).copy_(binned)
                probs_host = probs16.cpu()
                cls_host = cls.cpu().numpy()
                copy_s += time.perf_counter() - t0
                moved += binned.numel() * 2 + probs16.numel() * 2 + cls.numel()
                nvtx.range_pop()
                class_hist += np.bincount(cls_host[::8, ::8].ravel(), minlength=CLASSES)
                tiles += 1
                del probs_host
            nvtx.range_push("strip")
            quicklook.append(np.concatenate(
                [strip[c][rgb_bands, ::8, ::8].astype(np.float32) for c in range(COLS)], axis=2))
            nvtx.range_pop()
        mosaic = np.concatenate(quicklook, axis=1)
        np.save(os.path.join(OUT_DIR, f"line{line}_quicklook.npy"), mosaic)
        print(f"flight line {line}: {ROWS * COLS} tiles, quicklook {mosaic.shape}, "
              f"elapsed {time.perf_counter() - loop_t0:.1f} s", flush=True)
    torch.cuda.synchronize()
    loop = time.perf_counter() - loop_t0
    frac = class_hist / class_hist.sum()
    print(f"done: {tiles} tiles, {moved / 2 ** 30:.1f} GiB moved, cloudy fraction "
          f"{cloud.item() / tiles:.3f}, dominant class {int(frac.argmax())} ({frac.max():.2f}), "
          f"total {time.perf_counter() - t_start:.1f} s")
    print(f"GROUND TRUTH: seconds in synchronous pageable copies (tile upload .to(), strip "
          f"copy_() and .cpu() downloads, {moved / 2 ** 30:.1f} GiB) {copy_s:.2f} of loop "
          f"{loop:.2f} ({100 * copy_s / loop:.1f}%)")


if __name__ == "__main__":
    main()
