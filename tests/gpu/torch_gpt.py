"""A small GPT-style transformer training loop, as a PyTorch user writes one.

  python3 tests/gpu/torch_gpt.py [--steps 30] [--compile] [--no-nvtx] [steplog.py's options]

bf16 autocast, AdamW, the loss read back with loss.item() every step (a sync each step), and an
NVTX range "step <i>" around every step (torch.cuda.nvtx). --torch-profiler FILE runs the loop
under torch.profiler with with_stack=True and writes its Chrome trace (for comparisons). Nothing is warmed up before the loop:
the first steps pay cuBLAS/cuDNN set-up (and, with --compile, Triton compilation), as in a real
run. --compile wraps the model in torch.compile(mode="reduce-overhead"): Triton kernels replayed
in CUDA graphs. --no-nvtx leaves the step ranges out, so that the steps must be found from the
repeating launches alone.

Prints "step_ms=<median ms per step over the second half>" and the step count. Used for
Warpline's real-program traces (tests/data/README.md says how each was recorded).
"""
import argparse
import contextlib
import statistics
from steplog import StepLog  # each line below keeps its number: recorded stacks name them

import torch
from torch import nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--compile", action="store_true")
p.add_argument("--no-nvtx", action="store_true")
p.add_argument("--layers", type=int, default=4)
p.add_argument("--dim", type=int, default=384)
p.add_argument("--heads", type=int, default=6)
p.add_argument("--seq", type=int, default=256)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--vocab", type=int, default=8192)
p.add_argument("--torch-profiler", metavar="JSON", help="run the loop under torch.profiler "
               "(CPU + CUDA, with_stack=True) and write its Chrome trace there")
args, rest = p.parse_known_args()


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(args.vocab, args.dim)
        self.pos = nn.Embedding(args.seq, args.dim)
        self.blocks = nn.ModuleList(Block(args.dim, args.heads) for _ in range(args.layers))
        self.ln = nn.LayerNorm(args.dim)
        self.head = nn.Linear(args.dim, args.vocab, bias=False)

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


torch.manual_seed(0)
model = GPT().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
forward = torch.compile(model, mode="reduce-overhead") if args.compile else model
data = torch.randint(0, args.vocab, (args.batch, args.seq + 1), device="cuda")
x, y = data[:, :-1].contiguous(), data[:, 1:].contiguous()


def nvtx_range(name):
    if args.no_nvtx:
        return contextlib.nullcontext()
    return torch.cuda.nvtx.range(name)


profiler = contextlib.nullcontext()
if args.torch_profiler:
    from torch.profiler import ProfilerActivity, profile

    profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True)
times, steplog = [], StepLog.from_args(rest)  # --step-log FILE, --toggle-trampolines MS
with profiler as prof:
    for i in range(args.steps):
        steplog.begin()
        with nvtx_range(f"step {i}"):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = forward(x, y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            value = loss.item()  # the loss read back every step: the CPU waits for the GPU
        times.append(steplog.end())
steplog.write()
if args.torch_profiler:
    prof.export_chrome_trace(args.torch_profiler)
half = times[len(times) // 2 :]
print(f"steps={args.steps} compile={args.compile} nvtx={not args.no_nvtx} "
      f"step_ms={statistics.median(half):.2f} last_loss={value:.4f}")
