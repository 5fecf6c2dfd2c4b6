"""Corpus (blind, batch 10): a torch.compile'd GPT with a debug print in the middle of forward.

Program: a GPT-style language model (6 pre-LN blocks, d_model 1024, 16 heads, SDPA causal
attention, GELU MLP, a 32k-vocabulary head; the model returns the loss) wrapped in
torch.compile(model) (default mode), bf16 autocast, fused AdamW, batches of 16 x 1024 tokens
drawn on the GPU from a fixed pool of token ids. Chasing a loss spike, the user put a print of
the residual stream's RMS between the lower and the upper three blocks of forward() and left it
there: the f-string formats a CUDA scalar, so Dynamo breaks the graph at that line every step
(graph 1: embeddings and the lower blocks; the print runs eagerly and reads the value back,
draining the GPU queue; graph 2: the upper blocks, the head and the cross-entropy), and the
backward runs as two compiled graphs. The compile itself (Dynamo, AOTAutograd and Inductor for
both graphs, forward and backward; ~8-20 s on a cold cache) happens inside the first step; no
later step recompiles (fixed shapes, no Python state read in forward). A step is ~11 TFLOP of
bf16 GEMMs and attention plus the fp32 cross-entropy over 16k x 32k logits: ~25-40 ms of GPU
work, queued by ~2-4 ms of CPU; after each print's sync the GPU idles only until graph 2's first
kernel (~0.1-0.5 ms). No NVTX. 60 steps (60 printed RMS lines); one line printed at the end (the
first step's wall time, which holds the compile; for the other steps: wall time, the
GPU-timeline span by CUDA events, which measures time on the GPU timeline including idle gaps,
not busy time, and the seconds spent inside the model() calls, which is mostly the print's wait
for already-queued GPU work).

Expected, written before it was recorded (2026-11-26): gpu-bound, 88-97% of the steady-state
step time (steps 1-59), the finding naming the forward/backward GEMMs of the blocks and the head
(Inductor's fused pointwise/reduction kernels and flash attention next); 60 steps (within 2),
the first one far longer. The compilation in step 0 is start-up: a finding that sets it apart
(or reports it as a one-time cost) is right; compilation as the loop's recurring cost, or advice
about recompiles, is a miss. Because step 0 may hold most of the run's wall time, an analysis
that weighs the whole loop rather than the steady state may name compilation first; that reading
is acceptable only if it says the cost is the first step's one-time compile. Misses: sync-stall
(one sync a step at the print line, reached while the GPU is busy with the previous step's
backward and this step's lower blocks; removing the print would save ~1-2%), launch-bound,
cpu-work. Advice that helps: GPU-side levers (a larger batch per kernel, fused or chunked
cross-entropy, mode="max-autotune"); removing the print (or logging the RMS every N steps
outside the compiled module) removes the graph break but gains little here.
"""
import time

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, D_MODEL, LAYERS, HEADS, SEQ = 32000, 1024, 6, 16, 1024
BATCH, STEPS, LR = 16, 60, 3e-4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = nn.Linear(D_MODEL, D_MODEL)
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.fc1 = nn.Linear(D_MODEL, 4 * D_MODEL)
        self.fc2 = nn.Linear(4 * D_MODEL, D_MODEL)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Parameter(torch.randn(SEQ, D_MODEL) * 0.02)
        self.lower = nn.Sequential(*[Block() for _ in range(LAYERS // 2)])
        self.upper = nn.Sequential(*[Block() for _ in range(LAYERS - LAYERS // 2)])
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos[: idx.shape[1]]
        x = self.lower(x)
        # Left in from chasing a loss spike: the residual stream's scale halfway up the stack.
        print(f"  mid-stack rms {x.float().pow(2).mean().sqrt():.3f}")
        x = self.upper(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, VOCAB), targets.reshape(-1))


def main():
    torch.manual_seed(0)
    torch.set_float32_matmul_precision("high")
    model = GPT().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.1, fused=True)
    compiled = torch.compile(model)
    print(f"GPT: {sum(p.numel() for p in model.parameters()) / 1e6:.0f} M parameters")
    gen = torch.Generator(device="cuda").manual_seed(1)
    corpus = torch.randint(0, VOCAB, (4_000_000,), device="cuda", generator=gen)

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(STEPS)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(STEPS)]
    in_model = 0.0
    first_step = None
    loop_start = time.perf_counter()
    for step in range(STEPS):
        if step == 1:
            torch.cuda.synchronize()
            first_step = time.perf_counter() - loop_start
            steady_start = time.perf_counter()
        starts[step].record()
        offsets = torch.randint(0, corpus.numel() - SEQ - 1, (BATCH, 1), device="cuda",
                                generator=gen)
        pos = offsets + torch.arange(SEQ + 1, device="cuda")
        chunk = corpus[pos]
        x, y = chunk[:, :-1].contiguous(), chunk[:, 1:].contiguous()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = compiled(x, y)
        if step > 0:
            in_model += time.perf_counter() - t0
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        ends[step].record()
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    torch.cuda.synchronize()
    end = time.perf_counter()
    steady = end - steady_start
    span = sum(s.elapsed_time(e) for s, e in zip(starts[1:], ends[1:])) / 1000
    print(f"first step (compile) {first_step:.1f} s; steps 1-{STEPS - 1}: wall {steady:.2f} s, "
          f"GPU-timeline span {span:.2f} s (includes idle gaps), in model() calls "
          f"{in_model:.2f} s; loop total {end - loop_start:.1f} s")


if __name__ == "__main__":
    main()
