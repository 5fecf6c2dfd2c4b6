"""Corpus (blind, batch 11): land-cover inference on satellite tiles uploaded from pageable memory.

Program: a land-cover segmentation job over a time series of Sentinel-2-like acquisitions. Each
acquisition is 32 tiles of 13 bands x 512 x 512 raw reflectances (int16, ~218 MB), held in host
memory as one NumPy array per acquisition, as a raster reader returns them (8 acquisitions cycled,
~1.7 GB). The model is light on purpose (3x3 convs: a stride-2 stem 13-48, a stride-2 48-96, two
96-96 at stride 4; a 1x1 to 10 classes, bilinear upsampling, argmax; random weights standing in for
a checkpoint; bf16, channels_last, inference_mode, cudnn.benchmark), ~3-6 ms of GPU work a batch.
The upload is written the way the tutorials write pinned copies, `torch.from_numpy(tiles).to(device,
non_blocking=True)`, but the array is ordinary pageable memory: the driver stages it through its own
pinned buffers and the call returns only when ~218 MB have crossed PCIe, while the GPU's SMs idle.
Pageable uploads run at ~5-20 GB/s depending on the host (not measured on the device), so ~11-44 ms
a batch. The labels (uint8, 8 MB) and per-tile cloud fractions come back with `.to("cpu",
non_blocking=True)`, which PyTorch lands in pinned memory, so the program synchronises the stream
before reading them (one torch.cuda.synchronize() a batch, waiting a few ms for the model and the
small copy). Running per-class pixel counts on the GPU, label maps written into a preallocated
output array. No NVTX. 240 batches after 3 warm-up batches; one line printed at the end: seconds
inside the upload calls, inside the synchronize, and the loop's total, measured in-program.

Expected, written before it was recorded (2026-11-26): copies, 60-92% of the steady step, naming the
host-to-device copy from pageable memory in the upload line (`.to(device, non_blocking=True)` of a
NumPy-backed tensor: non_blocking does nothing for pageable memory) as the calls holding the time,
the GPU's compute idle during them; 243 steps (240 after 3 warm-up batches; within 3). Misses:
sync-stall (the per-batch synchronize waits ~3-8 ms for the model and an 8 MB pinned copy; removing
it would only make the labels unsafe to read), gpu-bound (the copy engine is busy, the SMs are not;
kernels hold ~10-25%), input-bound (the data is already in memory; nothing is read or decoded),
cpu-work, launch-bound.
Advice that helps: hold the acquisitions in pinned memory (pin each once when it is read, or read
into a reusable pinned buffer), which makes non_blocking real and the copy ~2-4x faster, and overlap
the upload of batch k+1 with the model on batch k on a second stream; or upload less (crop to the
area of interest); not a faster model.
"""
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

BANDS, TILE, TILES, CLASSES = 13, 512, 32, 10
ACQUISITIONS, BATCHES, WARMUP_BATCHES = 8, 240, 3
CLOUD_CLASS = 9
BAND_MEAN = torch.tensor([1350, 1160, 1060, 960, 1200, 1900, 2200, 2100, 2400, 800, 15, 1700, 1050],
                         dtype=torch.float32)
BAND_STD = torch.tensor([250, 300, 320, 420, 400, 500, 600, 620, 650, 250, 10, 550, 450],
                        dtype=torch.float32)


class LandCoverNet(nn.Module):
    def __init__(self):
        super().__init__()

        def block(cin, cout, stride=1):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                                 nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

        self.encoder = nn.Sequential(block(BANDS, 48, 2), block(48, 96, 2), block(96, 96),
                                     block(96, 96))
        self.head = nn.Conv2d(96, CLASSES, 1)

    def forward(self, x):
        logits = self.head(self.encoder(x))
        return F.interpolate(logits, scale_factor=4, mode="bilinear", align_corners=False)


def read_acquisitions(rng):
    """Stand-in for the raster reader: per acquisition, (TILES, BANDS, TILE, TILE) int16."""
    base = rng.integers(200, 4000, size=(BANDS, TILE, TILE), dtype=np.int16)
    scenes = []
    for a in range(ACQUISITIONS):
        scene = np.empty((TILES, BANDS, TILE, TILE), dtype=np.int16)
        scene[:] = base
        scene[:, :, a * 8:(a + 1) * 8, :] += np.int16(50 * (a + 1))  # a little per-date change
        scenes.append(scene)
    return scenes


def main():
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda")
    t = time.perf_counter()
    scenes = read_acquisitions(rng)
    print(f"read {ACQUISITIONS} acquisitions, {sum(s.nbytes for s in scenes) / 1e9:.2f} GB, "
          f"in {time.perf_counter() - t:.1f} s")

    model = LandCoverNet().to(device).to(torch.bfloat16).eval()
    model = model.to(memory_format=torch.channels_last)
    mean = BAND_MEAN.to(device).view(1, -1, 1, 1)
    std = BAND_STD.to(device).view(1, -1, 1, 1)
    labels_out = np.zeros((ACQUISITIONS, TILES, TILE, TILE), dtype=np.uint8)
    pixel_counts = torch.zeros(CLASSES, dtype=torch.float64, device=device)
    cloudy_tiles = 0

    in_upload = in_sync = 0.0
    start = None
    with torch.inference_mode():
        for b in range(WARMUP_BATCHES + BATCHES):
            if b == WARMUP_BATCHES:
                torch.cuda.synchronize()
                start = time.perf_counter()
                in_upload = in_sync = 0.0
            a = b % ACQUISITIONS
            t0 = time.perf_counter()
            raw = torch.from_numpy(scenes[a]).to(device, non_blocking=True)
            in_upload += time.perf_counter() - t0

            x = ((raw.float() - mean) / std).to(torch.bfloat16)
            x = x.contiguous(memory_format=torch.channels_last)
            labels = model(x).argmax(dim=1).to(torch.uint8)
            pixel_counts += torch.histc(labels.float(), bins=CLASSES, min=0, max=CLASSES - 1)
            cloud = (labels == CLOUD_CLASS).float().mean(dim=(1, 2))
            labels_host = labels.to("cpu", non_blocking=True)
            cloud_host = cloud.to("cpu", non_blocking=True)

            t0 = time.perf_counter()
            torch.cuda.synchronize()
            in_sync += time.perf_counter() - t0
            labels_out[a] = labels_host.numpy()
            cloudy_tiles += int((cloud_host.numpy() > 0.5).sum())
            if b % 40 == 0:
                print(f"batch {b}: acquisition {a}, cloudy tiles so far {cloudy_tiles}")
        total = time.perf_counter() - start
    shares = (pixel_counts / pixel_counts.sum()).tolist()
    print("class shares " + " ".join(f"{s:.3f}" for s in shares))
    print(f"batches {BATCHES}; inside the upload .to(device, non_blocking=True) {in_upload:.2f} s, "
          f"in torch.cuda.synchronize() {in_sync:.2f} s, of loop {total:.2f} s "
          f"({TILES * BANDS * TILE * TILE * 2 / 1e6:.0f} MB a batch)")


if __name__ == "__main__":
    main()
