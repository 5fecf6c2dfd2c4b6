"""Blind batch 14: a ResNet GAN (hinge loss, 32x32) trained with a "training health" monitor.

The monitor is the kind of thing a team adds after a GAN collapsed once: forward hooks on every
convolution and linear layer log the mean and standard deviation of its output, and after each
optimizer step every parameter's gradient norm, weight norm, largest gradient and a finiteness
check are read, so that a dashboard can show them for every step. Each statistic is a Python float,
read with .item() (or a tensor used as a bool) the moment it is computed.

The discriminator and generator are updated alternately (one D step, one G step per iteration).
Real images are synthetic (coloured blobs and rings made on the GPU once). No NVTX.

Ground truth printed at the end: host seconds inside the monitor (hooks and per-parameter
statistics) against the loop's seconds; and the step time of the same iterations measured just
before the loop with the monitor switched off.
"""
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
dev = torch.device("cuda")

BATCH = 64
Z_DIM = 128
CH = 128
WARMUP = 2        # monitored, before everything else
CALIBRATE = 6     # monitor off, to time the bare iteration (the first is not counted)
STEPS = 40        # the loop


class GBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.sc = nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        h = F.interpolate(F.relu(self.bn1(x)), scale_factor=2)
        h = self.conv2(F.relu(self.bn2(self.conv1(h))))
        return h + self.sc(F.interpolate(x, scale_factor=2))


class DBlock(nn.Module):
    def __init__(self, cin, cout, down=True, first=False):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.sc = nn.Conv2d(cin, cout, 1)
        self.down, self.first = down, first

    def forward(self, x):
        h = x if self.first else F.relu(x)
        h = self.conv2(F.relu(self.conv1(h)))
        s = self.sc(x)
        if self.down:
            h, s = F.avg_pool2d(h, 2), F.avg_pool2d(s, 2)
        return h + s


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(Z_DIM, 4 * 4 * CH * 2)
        self.blocks = nn.Sequential(GBlock(CH * 2, CH * 2), GBlock(CH * 2, CH), GBlock(CH, CH))
        self.bn = nn.BatchNorm2d(CH)
        self.out = nn.Conv2d(CH, 3, 3, padding=1)

    def forward(self, z):
        h = self.fc(z).view(-1, CH * 2, 4, 4)
        return torch.tanh(self.out(F.relu(self.bn(self.blocks(h)))))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(DBlock(3, CH, first=True), DBlock(CH, CH), DBlock(CH, CH, down=False),
                                    DBlock(CH, CH, down=False))
        self.fc = nn.Linear(CH, 1)

    def forward(self, x):
        h = F.relu(self.blocks(x)).sum(dim=(2, 3))
        return self.fc(h).squeeze(1)


def make_dataset(n=4096):
    """Coloured Gaussian blobs and rings on a dark background, in [-1, 1]."""
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, 32, device=dev), torch.linspace(-1, 1, 32, device=dev),
                            indexing="ij")
    imgs = torch.zeros(n, 3, 32, 32, device=dev)
    for _ in range(3):
        c = torch.rand(n, 2, 1, 1, device=dev) * 1.4 - 0.7
        r = torch.rand(n, 1, 1, 1, device=dev) * 0.5 + 0.1
        d = ((xx - c[:, :1]) ** 2 + (yy - c[:, 1:]) ** 2).sqrt()
        ring = (torch.rand(n, 1, 1, 1, device=dev) < 0.5).float()
        shape = torch.exp(-((d - ring * r) ** 2) / (2 * (0.25 * r) ** 2))
        colour = torch.rand(n, 3, 1, 1, device=dev)
        imgs += shape * colour
    return (imgs.clamp(0, 1) * 2 - 1).contiguous()


class TrainingHealthMonitor:
    """Per-layer activation, gradient and weight statistics, logged every step."""

    def __init__(self, models):
        self.enabled = True
        self.row = {}
        self.rows = []
        self.seconds = 0.0
        self.reads = 0
        self.nonfinite = 0
        for prefix, model in models.items():
            for name, mod in model.named_modules():
                if isinstance(mod, (nn.Conv2d, nn.Linear)):
                    mod.register_forward_hook(self._activation_hook(f"{prefix}/{name}"))

    def _activation_hook(self, tag):
        def hook(module, inputs, output):
            if not self.enabled:
                return
            t0 = time.perf_counter()
            out = output.detach()
            self.row[f"act/{tag}/mean"] = out.mean().item()
            self.row[f"act/{tag}/std"] = out.std().item()
            self.reads += 2
            self.seconds += time.perf_counter() - t0
        return hook

    def after_optimizer_step(self, prefix, model, lr):
        if not self.enabled:
            return
        t0 = time.perf_counter()
        for name, p in model.named_parameters():
            if p.grad is None:
                continue
            g = p.grad.detach()
            grad_norm = g.norm().item()
            weight_norm = p.detach().norm().item()
            self.row[f"{prefix}/{name}/grad_norm"] = grad_norm
            self.row[f"{prefix}/{name}/weight_norm"] = weight_norm
            self.row[f"{prefix}/{name}/update_ratio"] = lr * grad_norm / (weight_norm + 1e-12)
            self.row[f"{prefix}/{name}/grad_absmax"] = g.abs().max().item()
            if not torch.isfinite(g).all():
                self.nonfinite += 1
            self.reads += 4
        self.seconds += time.perf_counter() - t0

    def end_step(self, step):
        if self.enabled:
            self.row["step"] = step
            self.rows.append(self.row)
        self.row = {}


G, D = Generator().to(dev), Discriminator().to(dev)
LR = 2e-4
opt_g = torch.optim.Adam(G.parameters(), lr=LR, betas=(0.0, 0.9))
opt_d = torch.optim.Adam(D.parameters(), lr=LR, betas=(0.0, 0.9))
data = make_dataset()
monitor = TrainingHealthMonitor({"G": G, "D": D})


def train_iteration(step):
    idx = torch.randint(0, data.shape[0], (BATCH,), device=dev)
    real = data[idx]
    # Discriminator step (hinge loss).
    z = torch.randn(BATCH, Z_DIM, device=dev)
    with torch.no_grad():
        fake = G(z)
    d_real, d_fake = D(real), D(fake)
    loss_d = F.relu(1.0 - d_real).mean() + F.relu(1.0 + d_fake).mean()
    opt_d.zero_grad(set_to_none=True)
    loss_d.backward()
    opt_d.step()
    monitor.after_optimizer_step("D", D, LR)
    # Generator step.
    z = torch.randn(BATCH, Z_DIM, device=dev)
    loss_g = -D(G(z)).mean()
    opt_g.zero_grad(set_to_none=True)
    loss_g.backward()
    opt_g.step()
    monitor.after_optimizer_step("G", G, LR)
    stats = (loss_d.item(), loss_g.item(), d_real.mean().item(), d_fake.mean().item())
    monitor.end_step(step)
    return stats


for i in range(WARMUP):
    train_iteration(-1)
torch.cuda.synchronize()

# The same iterations with the monitor off: what a step costs without it.
monitor.enabled = False
bare = []
for i in range(CALIBRATE):
    t0 = time.perf_counter()
    train_iteration(-1)
    bare.append(time.perf_counter() - t0)
bare_step = sorted(bare[1:])[len(bare[1:]) // 2]
monitor.enabled = True
monitor.seconds = 0.0
monitor.reads = 0
torch.cuda.synchronize()

t_loop = time.perf_counter()
for step in range(STEPS):
    loss_d, loss_g, dr, df = train_iteration(step)
    if step % 10 == 0:
        print(f"step {step}: loss_d {loss_d:.3f} loss_g {loss_g:.3f} D(x) {dr:.3f} D(G(z)) {df:.3f}", flush=True)
torch.cuda.synchronize()
loop = time.perf_counter() - t_loop
per_step = loop / STEPS
reads = monitor.reads / STEPS
print(f"ground truth: monitor {monitor.seconds:.3f} s of {loop:.3f} s loop ({100 * monitor.seconds / loop:.1f}%); "
      f"step {1000 * per_step:.1f} ms monitored vs {1000 * bare_step:.1f} ms with the monitor off "
      f"(avoidable {100 * (1 - bare_step / per_step):.1f}%); {reads:.0f} synchronising reads a step; "
      f"nonfinite {monitor.nonfinite}; {STEPS} steps", flush=True)
