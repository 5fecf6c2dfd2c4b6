"""Neural vocoder serving: a 16-layer WaveNet generating 8 utterances sample by sample with the
"fast WaveNet" queue cache, in eager PyTorch.

Every audio sample runs each layer's dilated convolution as cat + addmm on cached inputs, the
gated activation, the conditioning add, the residual and skip 1x1 convolutions, the cache write,
then the output head and Gumbel-max sampling: about 155 small kernels per sample, each a few
microseconds of GPU work on 8x64 activations. The Python/ATen dispatch and the launches of those
kernels set the pace; the GPU waits between them.
Steps: 1 warm-up chunk, then 48 timed chunks of 40 samples (a step = one chunk; per chunk the
mel conditioning is upsampled once with larger kernels); every 12 chunks the audio so far is
streamed to the host (.cpu(), mu-law decode in NumPy). At the end one sample's kernels are
captured in a CUDA graph and replayed, to measure their GPU time without the launch overhead.
"""
import time

import numpy as np
import torch
import torch.nn.functional as F

DEV = "cuda"
B, R, S, Q = 8, 64, 128, 256
LAYERS = 16
DIL = [2 ** (l % 8) for l in range(LAYERS)]
MEL, HOP = 80, 40
CHUNK = 40
WARMUP, STEPS, STREAM_EVERY = 1, 48, 12
TEMP = 0.9

torch.manual_seed(0)
g = lambda *s: (torch.randn(*s, device=DEV) * (1.0 / s[0] ** 0.5)).contiguous()
emb = torch.randn(Q, R, device=DEV) * 0.1
W_conv = [g(2 * R, 2 * R) for _ in range(LAYERS)]      # [past, current] -> gate
b_conv = [torch.zeros(2 * R, device=DEV) for _ in range(LAYERS)]
W_res = [g(R, R) for _ in range(LAYERS)]
W_skip = [g(R, S) for _ in range(LAYERS)]
W_cond = torch.randn(LAYERS, MEL, 2 * R, device=DEV) * 0.02
W_up = torch.randn(MEL, MEL, HOP, device=DEV) * 0.05   # transposed-conv upsampler
W_o1, W_o2 = g(S, S), g(S, Q)
b_o1, b_o2 = torch.zeros(S, device=DEV), torch.zeros(Q, device=DEV)

bufs = [torch.zeros(B, d, R, device=DEV) for d in DIL]
prev = torch.full((B,), Q // 2, dtype=torch.long, device=DEV)
total_samples = (WARMUP + STEPS) * CHUNK
out = torch.zeros(B, total_samples, dtype=torch.long, device=DEV)
mel = torch.randn(B, MEL, total_samples // HOP + 1, device=DEV)
cond = None
noise = None


def prepare_chunk(c):
    """Per chunk: upsample this chunk's mel frame(s) and project them for every layer; noise."""
    global cond, noise
    f0 = (c * CHUNK) // HOP
    frames = mel[:, :, f0:f0 + CHUNK // HOP]                                 # B, MEL, F
    up = F.conv_transpose1d(frames, W_up, stride=HOP)                        # B, MEL, CHUNK
    cond = torch.einsum("bmt,lmc->lbtc", up, W_cond).contiguous()           # L, B, CHUNK, 2R
    u = torch.rand(B, CHUNK, Q, device=DEV).clamp_(1e-6, 1 - 1e-6)
    noise = -torch.log(-torch.log(u))


def sample_step(t_local, t_global):
    x = F.embedding(prev, emb)
    skip = None
    for l in range(LAYERS):
        d = DIL[l]
        k = t_global % d
        past = bufs[l][:, k]
        z = torch.addmm(b_conv[l], torch.cat([past, x], 1), W_conv[l])
        z = z + cond[l, :, t_local]
        a, gate = z.chunk(2, 1)
        h = torch.tanh(a) * torch.sigmoid(gate)
        bufs[l][:, k].copy_(x)
        skip = h @ W_skip[l] if skip is None else torch.addmm(skip, h, W_skip[l])
        x = torch.addmm(x, h, W_res[l])
    y = torch.relu(torch.addmm(b_o1, torch.relu(skip), W_o1))
    logits = torch.addmm(b_o2, y, W_o2)
    idx = (logits / TEMP + noise[:, t_local]).argmax(1)
    out[:, t_global] = idx
    prev.copy_(idx)


def mulaw_decode(q):
    y = 2 * (q.astype(np.float32) / (Q - 1)) - 1
    return np.sign(y) * ((1 + 255) ** np.abs(y) - 1) / 255


streamed = 0
audio = []
stream_s = 0.0
loop_t0 = None
for c in range(WARMUP + STEPS):
    if c == WARMUP:
        torch.cuda.synchronize()
        loop_t0 = time.perf_counter()
    prepare_chunk(c)
    for t in range(CHUNK):
        sample_step(t, c * CHUNK + t)
    n = c - WARMUP + 1
    if c >= WARMUP and n % STREAM_EVERY == 0:
        ts = time.perf_counter()
        end = (c + 1) * CHUNK
        pcm = mulaw_decode(out[:, streamed:end].cpu().numpy())
        audio.append(pcm)
        streamed = end
        stream_s += time.perf_counter() - ts
        print(f"chunk {n:3d}: streamed {pcm.shape[1]} samples x {B} utterances, rms {np.sqrt((pcm ** 2).mean()):.3f}")
torch.cuda.synchronize()
loop_s = time.perf_counter() - loop_t0
per_sample_us = 1e6 * loop_s / (STEPS * CHUNK)

# Ground truth for the GPU side: one sample's kernels captured once and replayed back to back.
graph_us = float("nan")
try:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            sample_step(5, 5)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        sample_step(5, 5)
    graph.replay()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(200):
        graph.replay()
    e1.record()
    torch.cuda.synchronize()
    graph_us = 1000 * e0.elapsed_time(e1) / 200
except Exception as exc:  # capture is only a measurement aid
    print("graph capture failed:", exc)
np.save("/tmp/blind16_wavenet_audio.npy", np.concatenate(audio, 1) if audio else np.zeros(1))
print(f"GROUND TRUTH: eager {per_sample_us:.0f} us per sample ({STEPS * CHUNK} samples, {loop_s:.2f} s "
      f"loop) vs {graph_us:.0f} us GPU per sample replayed as a CUDA graph "
      f"(GPU-busy bound {100 * graph_us / per_sample_us:.0f}%); stream-out {stream_s:.2f} s; "
      f"{STEPS} chunks")
