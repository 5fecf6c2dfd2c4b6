# Image super-resolution trainer (EDSR-style, x4): 8 wide residual blocks (160 channels) on large
# 128 x 128 low-resolution crops, batch 24, bf16 autocast with channels_last, so each step is a
# few dozen large convolution kernels. Training pairs are made on the GPU: procedural textures
# (sums of oriented gratings and blobs) as the high-resolution target, bicubic-downsampled and
# lightly noised as the input. 90 optimizer steps (the first 3 are warm-up: cuDNN benchmarking);
# loss logged every 10 steps, a PSNR validation on 4 full 256 x 256 images every 30 steps, and a
# checkpoint (state_dict copied to host memory) every 45 steps. NVTX ranges mark the phases.
import io
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = 90
WARMUP = 3
BATCH = 24
LR_CROP = 128
CH = 160
BLOCKS = 8
SCALE = 4


class ResBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1 = nn.Conv2d(c, c, 3, padding=1)
        self.c2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return x + 0.1 * self.c2(F.relu(self.c1(x)))


class EDSR(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Conv2d(3, CH, 3, padding=1)
        self.body = nn.Sequential(*[ResBlock(CH) for _ in range(BLOCKS)])
        self.up = nn.Sequential(nn.Conv2d(CH, CH * 4, 3, padding=1), nn.PixelShuffle(2),
                                nn.Conv2d(CH, CH * 4, 3, padding=1), nn.PixelShuffle(2))
        self.tail = nn.Conv2d(CH, 3, 3, padding=1)

    def forward(self, x):
        f = self.head(x)
        return self.tail(self.up(f + self.body(f)))


def textures(n, size, gen, dev):
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, size, device=dev), torch.linspace(-1, 1, size, device=dev),
                            indexing="ij")
    img = torch.zeros(n, 3, size, size, device=dev)
    for _ in range(6):
        theta = torch.rand(n, 1, 1, device=dev, generator=gen) * math.pi
        freq = 4 + 40 * torch.rand(n, 1, 1, device=dev, generator=gen)
        phase = torch.rand(n, 3, 1, 1, device=dev, generator=gen) * 6.28
        g = torch.cos(freq * (xx * torch.cos(theta) + yy * torch.sin(theta))).unsqueeze(1)
        img += torch.sin(g * 3 + phase) / 6
    return (img * 0.5 + 0.5).clamp(0, 1)


def make_pair(n, lr_size, gen, dev):
    hr = textures(n, lr_size * SCALE, gen, dev)
    lr = F.interpolate(hr, scale_factor=1 / SCALE, mode="bicubic", antialias=True, align_corners=False)
    lr = (lr + 0.01 * torch.randn(lr.shape, device=dev, generator=gen)).clamp(0, 1)
    return lr.contiguous(memory_format=torch.channels_last), hr.contiguous(memory_format=torch.channels_last)


def main():
    dev = torch.device("cuda")
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)
    model = EDSR().to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=2e-4, betas=(0.9, 0.99))
    val_lr, val_hr = make_pair(4, 256, gen, dev)
    nvtx = torch.cuda.nvtx
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    step_events = []
    t0 = None
    for step in range(STEPS):
        if step == WARMUP:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            start.record()
        nvtx.range_push("train_step")
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        lr, hr = make_pair(BATCH, LR_CROP, gen, dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            sr = model(lr)
            loss = F.l1_loss(sr.float(), hr)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        e1.record()
        nvtx.range_pop()
        if step >= WARMUP:
            step_events.append((e0, e1))
        if step % 10 == 9:
            print(f"step {step + 1:3d}  l1 {loss.item():.4f}")
        if step % 30 == 29:
            nvtx.range_push("validate")
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                pred = model(val_lr).float().clamp(0, 1)
            mse = F.mse_loss(pred, val_hr).item()
            print(f"  val PSNR {10 * math.log10(1 / max(mse, 1e-10)):.2f} dB")
            nvtx.range_pop()
        if step % 45 == 44:
            nvtx.range_push("checkpoint")
            state = {k: v.detach().to("cpu") for k, v in model.state_dict().items()}
            buf = io.BytesIO()
            torch.save({"model": state, "step": step}, buf)
            print(f"  checkpoint {buf.tell() / 1e6:.1f} MB")
            nvtx.range_pop()
    end.record()
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    span = start.elapsed_time(end) / 1e3
    busy = sum(a.elapsed_time(b) for a, b in step_events) / 1e3
    print(f"GROUND TRUTH: steady state {STEPS - WARMUP} steps, wall {wall:.2f} s; the train-step spans "
          f"between CUDA events sum to {busy:.2f} s ({100 * busy / wall:.0f}% of wall); span between the "
          f"loop's first and last events {span:.2f} s")


if __name__ == "__main__":
    main()
