"""Corpus (blind, batch 8): a sampling service whose compiled head recompiles for each new top_k.

Program: a next-token service over a small decoder LM (6 layers, d=512, bf16, eager, no_grad).
Requests come padded to a static 8 x 256 shape, precisely so that the compiled part never sees
a new shape; the "head" (final LayerNorm, tied LM-head projection to a 32k vocabulary,
temperature, top-k filtering and Gumbel-max sampling) is wrapped in torch.compile(dynamic=False)
because it is where a large vocabulary spends its time. But each request also carries its
client's top_k, a Python int, and with dynamic=False Dynamo specialises on it: every top_k the
process has not seen yet fails the guard and recompiles the head (Dynamo trace, Inductor
lowering, a new Triton kernel for the top-k-sized sampling), ~1-2.5 s each. Clients with new
top_k values join at requests 8, 22, 36 and 50 (4 recompiles in the loop, 5 compiled variants
in all, under the default recompile limit of 8); in between, requests take ~3-6 ms (model
launches, the compiled head, and a .tolist() of the 8 sampled tokens). The first compile, at
start-up before the loop, takes longer (~4-10 s: Inductor's first use and its compile
workers). No NVTX. 60 requests (steps); one line printed at the end (time in the calls that
met a new top_k, measured in-program, against the loop's total).

Expected, written before it was recorded (2026-11-26): compilation, 85-99% of the loop's time
(four of the 60 steps hold nearly all of it; the other steps are ~3-6 ms), naming the
recompiles of sample_next (guard failures on top_k, Dynamo and Inductor frames on the main
thread, Triton compiles in the compile workers) at the `sample_next(...)` call in the loop;
60 steps (within 2). If the analysis reads the steady state as the typical step and sets the
four long steps aside as outliers, the typical step is launch-bound or sync-stall (the eager
model and the .tolist() of each request), but that is a miss here: the recompiles recur through
the loop and are the time. Misses: gpu-bound, input-bound, cpu-work (compiler Python is
compilation, not the user's host code).
"""
import random
import time

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, D, LAYERS, HEADS, CONTEXT, BATCH = 32000, 512, 6, 8, 256, 8
TEMPERATURE, STEPS = 0.8, 60
DEFAULT_TOP_K = 40
NEW_CLIENTS = {8: 50, 22: 1, 36: 20, 50: 100}  # request index -> the joining client's top_k


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, n, D))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class DecoderLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(CONTEXT, D)
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(D)

    def hidden(self, ids):
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return x


model = DecoderLM().cuda().to(torch.bfloat16).eval()


@torch.compile(dynamic=False)
def sample_next(hidden, top_k: int):
    h = model.ln_f(hidden[:, -1])
    logits = (h @ model.embed.weight.t()).float() / TEMPERATURE
    values, indices = torch.topk(logits, top_k, dim=-1)
    uniform = torch.rand_like(values).clamp_(1e-9, 1.0)
    choice = (values - torch.log(-torch.log(uniform))).argmax(dim=-1, keepdim=True)
    return indices.gather(-1, choice).squeeze(-1)


def main():
    rng = random.Random(0)
    torch.manual_seed(0)
    prompts = torch.randint(0, VOCAB, (STEPS + 1, BATCH, CONTEXT), device="cuda")
    clients = [DEFAULT_TOP_K]
    with torch.no_grad():
        t = time.perf_counter()
        sample_next(model.hidden(prompts[0]), DEFAULT_TOP_K).tolist()  # warm-up: first compile
        print(f"first compile {time.perf_counter() - t:.2f} s")

        seen, first_seen_s, served = {DEFAULT_TOP_K}, 0.0, 0
        start = time.perf_counter()
        for step in range(STEPS):
            if step in NEW_CLIENTS:
                clients.append(NEW_CLIENTS[step])
                top_k = NEW_CLIENTS[step]  # a new client's first request
            else:
                top_k = rng.choice(clients)
            t = time.perf_counter()
            tokens = sample_next(model.hidden(prompts[step + 1]), top_k).tolist()
            if top_k not in seen:
                seen.add(top_k)
                first_seen_s += time.perf_counter() - t
            served += len(tokens)
        total = time.perf_counter() - start
    print(f"steps {STEPS}; {served} tokens served; calls with a new top_k ({len(NEW_CLIENTS)}) "
          f"{first_seen_s:.2f} s of loop {total:.2f} s")


if __name__ == "__main__":
    main()
