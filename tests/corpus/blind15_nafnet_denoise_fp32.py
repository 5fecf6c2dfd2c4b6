"""Blind batch 15: NAFNet image denoising trained in fp32 on full 256 x 256 crops.

An imaging team trains NAFNet (Chen et al., "Simple Baselines for Image Restoration") for sensor
denoising in its SIDD configuration: width 32, encoder blocks [2, 2, 4, 8], 12 middle blocks,
decoder blocks [2, 2, 2, 2]. A NAF block is LayerNorm2d, a 1x1 convolution to twice the width, a
3x3 depthwise convolution, SimpleGate (split the channels in two and multiply the halves),
simplified channel attention (global average pool and a 1x1 convolution), a 1x1 convolution, a
scaled residual; then LayerNorm2d, 1x1 to twice the width, SimpleGate, 1x1, a scaled residual.
LayerNorm2d is written out with tensor operations (mean, subtract, square, mean, rsqrt, scale,
shift), as in the reference code's fallback.

The network runs at full resolution at its widest levels (16 x 32 x 256 x 256 fp32 activations of
134 MB, and twice that inside the blocks), so nearly every kernel is an elementwise, normalisation,
depthwise or thin 1x1 operation that streams hundreds of megabytes and does little arithmetic on
each byte. PSNR loss, AdamW (betas 0.9, 0.9), gradient clipping, cosine learning rate, as in the
reference training options. cudnn.benchmark is on.

The clean images are synthetic (smooth gradients, sinusoidal textures, discs and edges, made on the
GPU once); each step takes random crops and flips and adds Gaussian noise of a random level per
image, on the GPU. The loss is read every 25 steps for the progress line. No NVTX. 3 warm-up steps,
then 150.

Ground truth printed at the end: GPU seconds (CUDA events around each step) against the loop's
seconds; the estimated bytes a step moves through the large activations; and the number of steps.
"""
import math
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
dev = torch.device("cuda")
torch.backends.cudnn.benchmark = True

BATCH, CROP = 16, 256
WIDTH = 32
ENC, MIDDLE, DEC = [2, 2, 4, 8], 12, [2, 2, 2, 2]
WARMUP, STEPS, LOG_EVERY = 3, 150, 25
LR, MIN_LR = 1e-3, 1e-7


class LayerNorm2d(nn.Module):
    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c))
        self.eps = eps

    def forward(self, x):
        mu = x.mean(1, keepdim=True)
        d = x - mu
        var = d.pow(2).mean(1, keepdim=True)
        y = d * torch.rsqrt(var + self.eps)
        return self.weight.view(1, -1, 1, 1) * y + self.bias.view(1, -1, 1, 1)


class SimpleGate(nn.Module):
    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return a * b


class NAFBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        dw = 2 * c
        self.conv1 = nn.Conv2d(c, dw, 1)
        self.conv2 = nn.Conv2d(dw, dw, 3, padding=1, groups=dw)
        self.conv3 = nn.Conv2d(dw // 2, c, 1)
        self.sca = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(dw // 2, dw // 2, 1))
        self.sg = SimpleGate()
        self.conv4 = nn.Conv2d(c, 2 * c, 1)
        self.conv5 = nn.Conv2d(c, c, 1)
        self.norm1, self.norm2 = LayerNorm2d(c), LayerNorm2d(c)
        self.beta = nn.Parameter(torch.zeros(1, c, 1, 1))
        self.gamma = nn.Parameter(torch.zeros(1, c, 1, 1))

    def forward(self, inp):
        x = self.sg(self.conv2(self.conv1(self.norm1(inp))))
        x = self.conv3(x * self.sca(x))
        y = inp + x * self.beta
        x = self.conv5(self.sg(self.conv4(self.norm2(y))))
        return y + x * self.gamma


class NAFNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.intro = nn.Conv2d(3, WIDTH, 3, padding=1)
        self.ending = nn.Conv2d(WIDTH, 3, 3, padding=1)
        self.encoders, self.downs = nn.ModuleList(), nn.ModuleList()
        self.decoders, self.ups = nn.ModuleList(), nn.ModuleList()
        c = WIDTH
        for n in ENC:
            self.encoders.append(nn.Sequential(*[NAFBlock(c) for _ in range(n)]))
            self.downs.append(nn.Conv2d(c, 2 * c, 2, 2))
            c *= 2
        self.middle = nn.Sequential(*[NAFBlock(c) for _ in range(MIDDLE)])
        for n in DEC:
            self.ups.append(nn.Sequential(nn.Conv2d(c, 2 * c, 1, bias=False), nn.PixelShuffle(2)))
            c //= 2
            self.decoders.append(nn.Sequential(*[NAFBlock(c) for _ in range(n)]))

    def forward(self, inp):
        x = self.intro(inp)
        skips = []
        for enc, down in zip(self.encoders, self.downs):
            x = enc(x)
            skips.append(x)
            x = down(x)
        x = self.middle(x)
        for dec, up, skip in zip(self.decoders, self.ups, reversed(skips)):
            x = dec(up(x) + skip)
        return self.ending(x) + inp


def psnr_loss(pred, target):
    """NAFNet's PSNRLoss: 10 / ln(10) * log(mse + eps), per image, averaged."""
    mse = (pred - target).pow(2).mean(dim=(1, 2, 3))
    return (10.0 / math.log(10.0)) * torch.log(mse + 1e-8).mean()


def make_clean_bank(n=48, size=512):
    """Smooth colour gradients, oriented sinusoidal textures, discs and hard edges."""
    g = torch.Generator(device=dev).manual_seed(7)
    yy, xx = torch.meshgrid(torch.linspace(0, 1, size, device=dev), torch.linspace(0, 1, size, device=dev),
                            indexing="ij")
    bank = torch.empty(n, 3, size, size, device=dev)
    for i in range(n):
        r = torch.rand(24, device=dev, generator=g)
        img = (r[0:3, None, None] * xx + r[3:6, None, None] * yy) * 0.5
        for k in range(3):
            theta, freq = r[6 + k] * math.pi, 4 + 40 * r[9 + k]
            wave = torch.sin(2 * math.pi * freq * (xx * torch.cos(theta) + yy * torch.sin(theta)))
            img = img + 0.12 * wave * r[12 + k]
        for _ in range(6):
            c = torch.rand(6, device=dev, generator=g)
            disc = ((xx - c[0]) ** 2 + (yy - c[1]) ** 2) < (0.05 + 0.2 * c[2]) ** 2
            img = torch.where(disc, c[3:6, None, None].expand(3, size, size), img)
        edge = (xx * r[18] + yy * (1 - r[18])) > r[19]
        img = torch.where(edge, img * 0.6 + 0.2, img)
        bank[i] = img.clamp(0, 1)
    return bank


def batch_from(bank, g):
    idx = torch.randint(0, bank.shape[0], (BATCH,), device=dev, generator=g)
    oy, ox = rng.randrange(bank.shape[-1] - CROP + 1), rng.randrange(bank.shape[-1] - CROP + 1)
    clean = bank[idx, :, oy:oy + CROP, ox:ox + CROP]
    flip = torch.rand(BATCH, 1, 1, 1, device=dev, generator=g) < 0.5
    clean = torch.where(flip, clean.flip(-1), clean)
    sigma = torch.rand(BATCH, 1, 1, 1, device=dev, generator=g) * (50.0 / 255.0)
    noisy = clean + sigma * torch.randn(clean.shape, device=dev, generator=g)
    return noisy, clean


rng = random.Random(3)
model = NAFNet().to(dev)
n_params = sum(p.numel() for p in model.parameters())
opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=(0.9, 0.9), weight_decay=0.0)
total_steps = WARMUP + STEPS
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total_steps, eta_min=MIN_LR)
bank = make_clean_bank()
gen = torch.Generator(device=dev).manual_seed(11)
print(f"NAFNet width {WIDTH}, {n_params / 1e6:.1f} M parameters; batch {BATCH} x 3 x {CROP} x {CROP}", flush=True)

# Bytes through the activations, counted from the block structure: a NAF block at C channels and
# H x W reads and writes ~57 tensors of size C x H x W forward and ~2x that backward (fp32).
act_bytes = 0
c, hw = WIDTH, CROP * CROP
for n_enc, n_dec in zip(ENC, DEC):
    act_bytes += (n_enc + n_dec) * 171 * BATCH * c * hw * 4
    c, hw = c * 2, hw // 4
act_bytes += MIDDLE * 171 * BATCH * c * hw * 4


def train_step():
    noisy, clean = batch_from(bank, gen)
    loss = psnr_loss(model(noisy), clean)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.01)
    opt.step()
    sched.step()
    return loss.detach()


for _ in range(WARMUP):
    train_step()
torch.cuda.synchronize()

starts = [torch.cuda.Event(enable_timing=True) for _ in range(STEPS)]
ends = [torch.cuda.Event(enable_timing=True) for _ in range(STEPS)]
running = torch.zeros((), device=dev)
t_loop = time.perf_counter()
for step in range(STEPS):
    starts[step].record()
    running += train_step()
    ends[step].record()
    if (step + 1) % LOG_EVERY == 0:
        print(f"step {step + 1}: PSNR loss {running.item() / LOG_EVERY:.3f} dB, lr {sched.get_last_lr()[0]:.2e}",
              flush=True)
        running.zero_()
torch.cuda.synchronize()
loop = time.perf_counter() - t_loop
gpu = sum(s.elapsed_time(e) for s, e in zip(starts, ends)) / 1e3
print(f"ground truth: GPU {gpu:.3f} s of {loop:.3f} s loop ({100 * gpu / loop:.1f}%); ~{act_bytes / 1e9:.0f} GB of "
      f"activation traffic a step ({act_bytes * STEPS / gpu / 1e12:.2f} TB/s if the GPU time were all that); "
      f"{STEPS} steps", flush=True)
