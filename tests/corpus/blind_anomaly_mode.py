"""Corpus (blind, batch 6): autograd anomaly detection left on after a NaN hunt.

Program: a small trainer (fit -> train_epoch -> training_step -> compute_loss) around a 12-layer
pre-norm MLP encoder (LayerNorm, Linear(1024, 4096), GELU, Linear(4096, 1024), residual; then a
1,000-class head; bf16 autocast, fused AdamW) on 4,096 tokens, with
torch.autograd.set_detect_anomaly(True) still at the top of the script. In anomaly mode every
autograd node made in the forward (~18 a layer: the op, the autocast casts, the weight views,
the AccumulateGrad of each parameter) stores the Python stack that made it
(traceback.extract_stack and format_list over ~20 frames, ~100-150 us of interpreter work with
no CUDA call), and in the backward the engine checks every gradient a node returns for NaN with
isnan(...).any().item(): ~240 one-byte read-backs a step, each waiting for the GPU. The data is
made on the GPU once; the loss is printed every 10 steps. No NVTX. 40 steps.
Expected, written before it was recorded (2026-11-26), not run beforehand, so estimated from
first principles: cpu-work first, at least 40% of the steady step: the forward's ~220 stack
captures are ~25-30 ms of host work a step while its kernels (two 34 GFLOP GEMMs and a few
elementwise kernels a layer) need ~2 ms, so the GPU idles between launches that are 100-400 us
apart. The time is spread over every op of the forward, so no single line of the program holds
much of it; naming the forward (Layer.forward, FeedForward.forward, compute_loss) is right.
sync-stall second (~10%), at loss.backward(): the NaN checks read back ~240 times a step,
and the GPU idles for each round trip. The backward's GEMMs and the checks' ~480 small
kernels keep the GPU busy ~15 ms of a ~45 ms step. launch-bound first is a miss: the gaps are
host work in autograd's anomaly hooks, not launch cost, and CUDA graphs or fusion cannot remove
them (turning anomaly detection off does). gpu-bound is a miss. 40 steps (within 2).
"""
import torch
from torch import nn

torch.autograd.set_detect_anomaly(True)  # turned on to find a NaN, never turned off
torch.manual_seed(0)


class FeedForward(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.down(nn.functional.gelu(self.up(x)))


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.ff = FeedForward(d)

    def forward(self, x):
        return x + self.ff(self.norm(x))


class Encoder(nn.Module):
    def __init__(self, d, depth):
        super().__init__()
        self.layers = nn.ModuleList([Layer(d) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Classifier(nn.Module):
    def __init__(self, d=1024, depth=12, classes=1000):
        super().__init__()
        self.encoder = Encoder(d, depth)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        return self.head(self.encoder(x))


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.opt = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)

    def compute_loss(self, x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return nn.functional.cross_entropy(self.model(x), y)

    def training_step(self, x, y):
        loss = self.compute_loss(x, y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss

    def train_epoch(self, batches, epoch):
        for i, (x, y) in enumerate(batches):
            loss = self.training_step(x, y)
            if i % 10 == 9:
                print("epoch", epoch, "step", i + 1, "loss %.4f" % loss.item())

    def fit(self, batches, epochs):
        for epoch in range(epochs):
            self.train_epoch(batches, epoch)


x = torch.randn(4096, 1024, device="cuda")
y = torch.randint(0, 1000, (4096,), device="cuda")
Trainer(Classifier().cuda(), lr=1e-4).fit([(x, y)] * 20, epochs=2)
