"""Corpus (blind, batch 11): a Triton pooling kernel specialised on each batch's longest bag.

Program: a slide-scoring service for computational pathology. Each whole-slide image is a bag of
patch features (1024-d, precomputed by a frozen encoder and held on the GPU as one bf16 feature bank
of 200k patches); a gated-attention MIL head (Linear 1024-512 + GELU, tanh and sigmoid attention
branches of 256, a score per patch, a 4-class classifier; random weights standing in for a
checkpoint; bf16, inference_mode) scores batches of 16 slides of 200-4,000 patches (log-uniform).
The masked softmax pooling over each bag's patches is a custom Triton kernel (attn_pool_kernel: a
max pass and an exp-weighted-sum pass over 64-patch chunks, one program per bag and 128 feature
columns). Its author made the padded bag length a tl.constexpr (MAX_N, "so the loop bounds are
compile-time constants") and pads each batch to its longest bag rounded up to 16 rows. Every MAX_N
not met before is a new specialisation: Triton compiles the kernel again (Python front end, MLIR
passes, LLVM, ptxas in a child process) and loads the module before the batch runs. Longest-of-16
lengths spread over ~1,800-4,000 (rounded: ~140 possible values): with the program's seed 47 of the
60 batches meet a new one (simulated here), the other 13 spread from batch 11 on. Each compile was
guessed at ~0.2-0.6 s (not measured), ~10-30 s in all. The batch's own work is ~1-3 ms of GEMMs and
the kernel, then the probabilities come back with .cpu(). Triton's cache is put in a fresh folder
under the current directory (the cluster's home is read-only), removed at exit, so nothing is reused
from an earlier run; one warm-up batch (MAX_N 512) before the loop. NVTX: one "score_batch" range a
batch. One line printed at the end: the seconds inside model() for the batches that met a new MAX_N
and for the others, and how many, measured in-program, against the loop's total.

Expected, written before it was recorded (2026-11-26): compile (Triton JIT recompiling for every new
constexpr MAX_N), 85-99% of the loop, naming attn_pool_kernel's launch in attention_pool (through
triton's JIT run/compile path, the ptxas child process and the module loads) and the constexpr
length as the cause; the GPU idle meanwhile. 60 steps (the score_batch ranges; the warm-up batch is
outside them; within 2); the compiles recur all through the loop, so "a one-time warm-up cost" is a
miss. Misses: cpu-work naming Python without saying it is compilation, input-bound (the main thread
waits on ptxas, a child process: that is the compiler, not input), launch-bound, gpu-bound,
sync-stall (the .cpu() of 16 x 4 probabilities).
Advice that helps: pass the length as a runtime argument (not tl.constexpr), or bucket MAX_N to a
few powers of two; not a warm-up run.
"""
import os
import shutil
import tempfile

# The cluster's home directory is read-only: Triton's kernel cache goes to job scratch.
_TRITON_CACHE = tempfile.mkdtemp(prefix="triton-cache-", dir=os.getcwd())
os.environ["TRITON_CACHE_DIR"] = _TRITON_CACHE

import math  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from torch import nn  # noqa: E402

FEAT, HIDDEN, ATTN, CLASSES = 1024, 512, 256, 4
BANK_PATCHES = 200_000
SLIDES, MIN_PATCHES, MAX_PATCHES, BATCHES = 16, 200, 4000, 60
PAD_MULTIPLE, BLOCK_N, BLOCK_D = 16, 64, 128


@triton.jit
def attn_pool_kernel(h_ptr, score_ptr, len_ptr, out_ptr, stride_hb, stride_hn, stride_sb,
                     stride_ob, MAX_N: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_D: tl.constexpr):
    bag = tl.program_id(0)
    offs_d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    n_valid = tl.load(len_ptr + bag)

    run_max = tl.full([BLOCK_N], float("-inf"), tl.float32)
    for start in range(0, MAX_N, BLOCK_N):
        offs = start + tl.arange(0, BLOCK_N)
        s = tl.load(score_ptr + bag * stride_sb + offs, mask=offs < n_valid, other=float("-inf"))
        run_max = tl.maximum(run_max, s)
    m = tl.max(run_max, axis=0)

    denom = tl.zeros([BLOCK_N], tl.float32)
    acc = tl.zeros([BLOCK_D], tl.float32)
    for start in range(0, MAX_N, BLOCK_N):
        offs = start + tl.arange(0, BLOCK_N)
        valid = offs < n_valid
        s = tl.load(score_ptr + bag * stride_sb + offs, mask=valid, other=float("-inf"))
        p = tl.exp(s - m)
        denom += p
        h = tl.load(h_ptr + bag * stride_hb + offs[:, None] * stride_hn + offs_d[None, :],
                    mask=valid[:, None] & (offs_d[None, :] < D), other=0.0)
        acc += tl.sum(p[:, None] * h.to(tl.float32), axis=0)
    tl.store(out_ptr + bag * stride_ob + offs_d, acc / tl.sum(denom, axis=0), mask=offs_d < D)


def attention_pool(h, scores, lengths):
    """Softmax over each bag's valid patches, then the weighted sum of its features."""
    bags, max_n, d = h.shape
    out = torch.empty(bags, d, device=h.device, dtype=torch.float32)
    grid = (bags, triton.cdiv(d, BLOCK_D))
    attn_pool_kernel[grid](h, scores, lengths, out, h.stride(0), h.stride(1), scores.stride(0),
                           out.stride(0), MAX_N=max_n, D=d, BLOCK_N=BLOCK_N, BLOCK_D=BLOCK_D)
    return out


class GatedAttentionMIL(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(FEAT, HIDDEN), nn.GELU())
        self.attn_v = nn.Linear(HIDDEN, ATTN)
        self.attn_u = nn.Linear(HIDDEN, ATTN)
        self.attn_w = nn.Linear(ATTN, 1)
        self.classifier = nn.Linear(HIDDEN, CLASSES)

    def forward(self, feats, lengths):
        h = self.embed(feats)
        a = torch.tanh(self.attn_v(h)) * torch.sigmoid(self.attn_u(h))
        scores = self.attn_w(a).squeeze(-1).float()
        pooled = attention_pool(h, scores, lengths)
        return self.classifier(pooled.to(h.dtype)).float().softmax(dim=-1)


def make_batch(bank, slides):
    """Pads the slides' patch features to the longest bag (rounded up to PAD_MULTIPLE rows)."""
    lengths = [n for _, n in slides]
    max_n = -(-max(lengths) // PAD_MULTIPLE) * PAD_MULTIPLE
    feats = torch.zeros(len(slides), max_n, FEAT, device=bank.device, dtype=bank.dtype)
    for i, (offset, n) in enumerate(slides):
        feats[i, :n] = bank[offset:offset + n]
    return feats, torch.tensor(lengths, dtype=torch.int32).cuda(), max_n


def sample_slides(rng, count):
    slides = []
    for _ in range(count):
        n = int(math.exp(rng.uniform(math.log(MIN_PATCHES), math.log(MAX_PATCHES))))
        slides.append((rng.randrange(0, BANK_PATCHES - n), n))
    return slides


def main():
    rng = random.Random(0)
    torch.manual_seed(0)
    model = GatedAttentionMIL().cuda().to(torch.bfloat16).eval()
    bank = torch.randn(BANK_PATCHES, FEAT, device="cuda", dtype=torch.bfloat16)
    results = []
    try:
        with torch.inference_mode():
            # Warm-up: cuBLAS handles, Triton's launcher, one specialisation.
            warm = [(rng.randrange(0, BANK_PATCHES - 512), 500) for _ in range(SLIDES)]
            feats, lengths, warm_max_n = make_batch(bank, warm)
            model(feats, lengths).cpu()

            seen = {warm_max_n}
            new_seconds = old_seconds = 0.0
            new_count = 0
            start = time.perf_counter()
            for b in range(BATCHES):
                torch.cuda.nvtx.range_push("score_batch")
                slides = sample_slides(rng, SLIDES)
                feats, lengths, max_n = make_batch(bank, slides)
                t0 = time.perf_counter()
                probs = model(feats, lengths)
                dt = time.perf_counter() - t0
                if max_n in seen:
                    old_seconds += dt
                else:
                    seen.add(max_n)
                    new_seconds += dt
                    new_count += 1
                probs = probs.cpu()
                results.extend(zip((s for s, _ in slides), probs.argmax(dim=1).tolist()))
                torch.cuda.nvtx.range_pop()
                if b % 10 == 0:
                    print(f"batch {b}: MAX_N {max_n}, {len(seen)} specialisations so far, "
                          f"mean top prob {probs.max(dim=1).values.mean():.3f}")
            torch.cuda.synchronize()
            total = time.perf_counter() - start
        print(f"batches {BATCHES}; model() in the {new_count} batches with a new MAX_N "
              f"{new_seconds:.2f} s ({100 * new_seconds / total:.0f}%), in the other "
              f"{BATCHES - new_count} {old_seconds:.2f} s; of loop {total:.2f} s; "
              f"{len(results)} slides scored")
    finally:
        shutil.rmtree(_TRITON_CACHE, ignore_errors=True)


if __name__ == "__main__":
    main()
