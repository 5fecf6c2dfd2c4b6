"""Corpus: a CNN training loop without NVTX whose steps vary.

Planted: nothing slow on purpose: a GPU-bound CNN (256-channel 3x3 convolutions on 64x64 images,
batch 64, bf16 autocast). Its steps are not all alike: the loss is printed every 10 steps (a
sync), and every 25 steps the model is evaluated on two validation batches. The right verdict is
"the GPU is busy; the convolution kernels hold the time", over steps found without NVTX.
"""
import torch
from torch import nn

torch.manual_seed(0)
steps = 60


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


model = nn.Sequential(block(3, 128), block(128, 256), block(256, 256), block(256, 256),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(64, 3, 64, 64, device="cuda")
y = torch.randint(0, 10, (64,), device="cuda")
val = [torch.randn(64, 3, 64, 64, device="cuda") for _ in range(2)]

for step in range(steps):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")
    if step % 25 == 24:
        model.eval()
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            acc = sum((model(v).argmax(1) == y).float().mean() for v in val)
        model.train()
        print(f"eval at step {step}: {acc.item() / len(val):.3f}")
torch.cuda.synchronize()
