"""Corpus (blind, batch 12): 3D segmentation fed by DataLoader workers doing elastic deformation.

Program: training a small 3D U-Net (3 levels, 16-32-64 channels, GroupNorm, bf16 autocast, AdamW,
Dice + cross-entropy over 4 classes) on 96^3 patches of synthetic CT-like volumes. At start-up the
program writes the "dataset" it would normally read: 24 volumes of 128^3 int16 (ellipsoidal organs
with textured intensities and noise, ~4 MB each) plus their label maps, as .npy files in a temporary
folder under the current directory (removed at exit). A map-style Dataset loads a volume (np.load),
takes a random 96^3 crop, and augments it on the CPU the way MONAI-style pipelines do: a random
elastic deformation plus rotation and scaling (a coarse 3 x 6^3 random displacement field smoothed
and upsampled with F.interpolate(trilinear) to 96^3, added to an affine grid, then F.grid_sample
trilinear for the image and nearest for the labels), a random bias field (interpolated from 4^3),
gamma, Gaussian noise and a random flip. torch.utils.data.DataLoader with num_workers=4,
batch_size=4, pin_memory=True, persistent_workers=True, prefetch_factor=2; each worker runs torch on
one thread (the DataLoader's default). Timed here (torch 2.11 on the CPU, one thread, a slower
machine): ~0.19 s a sample, most of it in the two grid_sample calls, so ~0.75 s a batch per worker
and, with 4 workers, one batch every ~0.19 s; ~0.1-0.15 s expected on the device's CPU. A batch is
14 MB of float32 images and 3.5 MB of uint8 labels (made int64 on the device). The network's step is
~10-30 ms of GPU work (not measured). Loss printed every 10 steps (.item()), a validation pass every
25 steps on 4 fixed patches already on the GPU (no_grad, Dice read back). No NVTX. 4 warm-up steps
(worker start-up, cuDNN), then 60. One line printed at the end: seconds the training loop spent in
next() on the DataLoader iterator, and the loop's total, measured in-program.

Expected, written before it was recorded (2026-11-27): input-bound, 65-92% of the steady step (the
printed next() share is the ground truth), the main thread waiting in the DataLoader's next()
(_MultiProcessingDataLoaderIter._next_data / _get_data, a queue.get on the pin-memory thread's
queue) while four worker processes run augment() (grid_sample, interpolate, pow, randn: torch's CPU
kernels) and the GPU idles between short bursts; 64 steps (60 after 4 warm-up; within 4). Misses:
gpu-bound (the U-Net's ~10-30 ms is a minority of the step; the validation bursts are GPU-only),
cpu-work on the main thread (the main thread waits; the work is in the worker processes), sync-stall
(the loss .item() every 10 steps and the Dice read-back), copies (17.5 MB pinned a batch),
launch-bound. Advice that helps: more workers (the machine has 16 cores, 4 are used), cheaper
augmentation (deform on the GPU: build the displacement field and call grid_sample on the device
after the upload; precomputed or lower-resolution fields), caching the deterministic part; not
GPU-side tuning.
"""
import os
import shutil
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

N_VOLUMES, VOLUME, PATCH, CLASSES = 24, 128, 96, 4
BATCH, WORKERS, STEPS, WARMUP_STEPS = 4, 4, 60, 4
LOG_EVERY, VAL_EVERY = 10, 25


def write_dataset(folder, rng):
    """Synthetic CT-like volumes: a body ellipsoid with three 'organs', HU-like intensities."""
    z, y, x = np.meshgrid(*(np.linspace(-1, 1, VOLUME, dtype=np.float32),) * 3, indexing="ij")
    paths = []
    for i in range(N_VOLUMES):
        image = np.full(x.shape, -1000.0, dtype=np.float32)
        label = np.zeros(x.shape, dtype=np.uint8)
        body = (x / 0.9) ** 2 + (y / 0.7) ** 2 + (z / 0.95) ** 2 < 1
        image[body] = 40.0
        for c, hu in zip(range(1, CLASSES), (60.0, 150.0, -50.0)):
            centre = rng.uniform(-0.4, 0.4, 3)
            radii = rng.uniform(0.12, 0.3, 3)
            organ = (((x - centre[0]) / radii[0]) ** 2 + ((y - centre[1]) / radii[1]) ** 2
                     + ((z - centre[2]) / radii[2]) ** 2) < 1
            organ &= body
            image[organ] = hu
            label[organ] = c
        image += rng.normal(0, 20, size=image.shape).astype(np.float32)
        path = os.path.join(folder, f"case_{i:03d}")
        np.save(path + "_img.npy", image.astype(np.int16))
        np.save(path + "_seg.npy", label)
        paths.append(path)
    return paths


def random_affine_grid(gen):
    """A (1, D, H, W, 3) sampling grid: a random rotation about z and y and a random scaling."""
    a, b = (torch.rand(2, generator=gen) - 0.5) * (torch.pi / 6)
    s = 0.9 + 0.2 * torch.rand(1, generator=gen)
    rz = torch.tensor([[torch.cos(a), -torch.sin(a), 0.0], [torch.sin(a), torch.cos(a), 0.0],
                       [0.0, 0.0, 1.0]])
    ry = torch.tensor([[torch.cos(b), 0.0, torch.sin(b)], [0.0, 1.0, 0.0],
                       [-torch.sin(b), 0.0, torch.cos(b)]])
    theta = torch.cat([(rz @ ry) * s, torch.zeros(3, 1)], dim=1).unsqueeze(0)
    return F.affine_grid(theta, (1, 1, PATCH, PATCH, PATCH), align_corners=False)


def augment(image, label, gen):
    """Elastic + affine resampling, bias field, gamma, noise, flip. image float32 (1, D, H, W)."""
    coarse = torch.randn(1, 3, 6, 6, 6, generator=gen) * 0.06
    coarse = F.avg_pool3d(F.pad(coarse, (1, 1, 1, 1, 1, 1), mode="replicate"), 3, stride=1)
    displacement = F.interpolate(coarse, size=(PATCH,) * 3, mode="trilinear", align_corners=False)
    grid = random_affine_grid(gen) + displacement.permute(0, 2, 3, 4, 1)
    image = F.grid_sample(image.unsqueeze(0), grid, mode="bilinear", padding_mode="border",
                          align_corners=False)[0]
    label = F.grid_sample(label.unsqueeze(0).float(), grid, mode="nearest", padding_mode="zeros",
                          align_corners=False)[0].to(torch.uint8)
    bias = torch.exp(F.interpolate(torch.randn(1, 1, 4, 4, 4, generator=gen) * 0.1,
                                   size=(PATCH,) * 3, mode="trilinear", align_corners=False))[0]
    image = image * bias
    gamma = float(0.7 + 0.6 * torch.rand(1, generator=gen))
    image = image.clamp(0, 1).pow(gamma)
    image = image + 0.03 * torch.randn(image.shape, generator=gen)
    if torch.rand(1, generator=gen) < 0.5:
        image, label = image.flip(-1), label.flip(-1)
    return image.contiguous(), label[0].contiguous()


class CTPatches(Dataset):
    def __init__(self, paths, length, seed):
        self.paths, self.length, self.seed = paths, length, seed

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        rng = np.random.default_rng(self.seed + index)
        gen = torch.Generator().manual_seed(self.seed + index)
        path = self.paths[int(rng.integers(len(self.paths)))]
        image = np.load(path + "_img.npy", mmap_mode="r")
        label = np.load(path + "_seg.npy", mmap_mode="r")
        z0, y0, x0 = rng.integers(0, VOLUME - PATCH + 1, 3)
        crop = (slice(z0, z0 + PATCH), slice(y0, y0 + PATCH), slice(x0, x0 + PATCH))
        image = torch.from_numpy(np.ascontiguousarray(image[crop], dtype=np.float32))
        label = torch.from_numpy(np.ascontiguousarray(label[crop]))
        image = ((image + 1000.0) / 1400.0).clamp_(0, 1).unsqueeze(0)  # window [-1000, 400] HU
        return augment(image, label.unsqueeze(0), gen)


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1, bias=False), nn.GroupNorm(8, cout),
                         nn.LeakyReLU(0.01, inplace=True),
                         nn.Conv3d(cout, cout, 3, padding=1, bias=False), nn.GroupNorm(8, cout),
                         nn.LeakyReLU(0.01, inplace=True))


class UNet3D(nn.Module):
    def __init__(self, chans=(16, 32, 64)):
        super().__init__()
        self.enc1 = conv_block(1, chans[0])
        self.enc2 = conv_block(chans[0], chans[1])
        self.bottom = conv_block(chans[1], chans[2])
        self.up2 = nn.ConvTranspose3d(chans[2], chans[1], 2, stride=2)
        self.dec2 = conv_block(2 * chans[1], chans[1])
        self.up1 = nn.ConvTranspose3d(chans[1], chans[0], 2, stride=2)
        self.dec1 = conv_block(2 * chans[0], chans[0])
        self.head = nn.Conv3d(chans[0], CLASSES, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool3d(e1, 2))
        b = self.bottom(F.max_pool3d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        return self.head(d1)


def dice_ce_loss(logits, target):
    ce = F.cross_entropy(logits.float(), target)
    probs = logits.float().softmax(1)
    onehot = F.one_hot(target, CLASSES).permute(0, 4, 1, 2, 3).float()
    inter = (probs * onehot).sum(dim=(2, 3, 4))
    denom = probs.sum(dim=(2, 3, 4)) + onehot.sum(dim=(2, 3, 4))
    dice = (2 * inter + 1e-5) / (denom + 1e-5)
    return ce + (1 - dice[:, 1:].mean())


def main():
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    workdir = tempfile.mkdtemp(prefix="ct-", dir=os.getcwd())
    try:
        t = time.perf_counter()
        paths = write_dataset(workdir, np.random.default_rng(0))
        print(f"wrote {len(paths)} volumes in {time.perf_counter() - t:.1f} s")

        loader = DataLoader(CTPatches(paths, (STEPS + WARMUP_STEPS) * BATCH, seed=1),
                            batch_size=BATCH, shuffle=True, num_workers=WORKERS, pin_memory=True,
                            persistent_workers=True, prefetch_factor=2, drop_last=True)
        val_set = CTPatches(paths, 4, seed=10_000)
        val_images = torch.stack([val_set[i][0] for i in range(4)]).cuda()
        val_labels = torch.stack([val_set[i][1] for i in range(4)]).cuda().long()

        model = UNet3D().cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=1e-5)

        waited = 0.0
        start = None
        it = iter(loader)
        for step in range(WARMUP_STEPS + STEPS):
            if step == WARMUP_STEPS:
                torch.cuda.synchronize()
                start = time.perf_counter()
                waited = 0.0
            t0 = time.perf_counter()
            images, labels = next(it)
            waited += time.perf_counter() - t0
            images = images.cuda(non_blocking=True)
            labels = labels.cuda(non_blocking=True).long()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(images)
            loss = dice_ce_loss(logits, labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if (step + 1) % LOG_EVERY == 0:
                print(f"step {step + 1}: loss {loss.item():.4f}")
            if (step + 1) % VAL_EVERY == 0:
                model.eval()
                with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                    pred = model(val_images).argmax(1)
                dice = []
                for c in range(1, CLASSES):
                    p, g = pred == c, val_labels == c
                    dice.append((2 * (p & g).sum() / (p.sum() + g.sum()).clamp(min=1)).item())
                model.train()
                print(f"step {step + 1}: validation Dice " + " ".join(f"{d:.3f}" for d in dice))
        torch.cuda.synchronize()
        total = time.perf_counter() - start
        print(f"steps {STEPS}: waiting in next(DataLoader) {waited:.2f} s "
              f"({100 * waited / total:.0f}%), of loop {total:.2f} s "
              f"({WORKERS} workers, batch {BATCH} of {PATCH}^3)")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
