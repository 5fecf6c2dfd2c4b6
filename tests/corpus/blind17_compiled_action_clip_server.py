# Video action-recognition server: a (2+1)D conv stem and a 2-layer temporal transformer classify
# camera clips into 60 actions. The model is torch.compile'd with static shapes (dynamic=False,
# the team's setting after dynamic shapes produced slower kernels). Clips are batched 4 at a time;
# their frame count depends on the camera's configured clip length, and new camera groups join
# the stream over time, each bringing a frame count the server has not seen yet. Frames arrive as
# uint8 in host memory and are normalized on the GPU. 120 batched requests (the first 3 are
# warm-up, including the first compile); per-batch top-1 labels go back to the host; a throughput
# line every 30 requests.
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

REQUESTS = 120
WARMUP = 3
CLIPS = 4
SIDE = 96
ACTIONS = 60
# (first request, frame count) of each camera group joining the stream.
JOINS = [(0, 16), (25, 8), (55, 24), (85, 32)]


class R2Plus1Stem(nn.Module):
    def __init__(self, c=64):
        super().__init__()
        self.spatial = nn.Conv3d(3, c, (1, 7, 7), stride=(1, 4, 4), padding=(0, 3, 3))
        self.temporal = nn.Conv3d(c, c, (3, 1, 1), padding=(1, 0, 0))
        self.spatial2 = nn.Conv3d(c, 128, (1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))
        self.norm = nn.BatchNorm3d(128)

    def forward(self, x):
        x = F.relu(self.temporal(F.relu(self.spatial(x))))
        return F.relu(self.norm(self.spatial2(x)))


class ActionNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = R2Plus1Stem()
        layer = nn.TransformerEncoderLayer(128, 4, 256, batch_first=True, dropout=0.0)
        self.temporal = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(128, ACTIONS)

    def forward(self, frames_u8):                     # (B, T, H, W, 3) uint8
        x = frames_u8.permute(0, 4, 1, 2, 3).float() / 255.0
        x = (x - 0.45) / 0.225
        f = self.stem(x)                              # (B, 128, T, h, w)
        tokens = f.mean(dim=(3, 4)).transpose(1, 2)  # (B, T, 128)
        t = self.temporal(tokens)
        return self.head(t.mean(1)).softmax(-1)


def active_lengths(r):
    return [f for start, f in JOINS if start <= r]


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(9)
    dev = torch.device("cuda")
    model = ActionNet().to(dev).eval()
    served = torch.compile(model, dynamic=False)
    # A decoded-frame pool per clip length (the decoder's output buffers), uint8 in host memory.
    pools = {f: rng.integers(0, 256, (CLIPS * 2, f, SIDE, SIDE, 3), dtype=np.uint8) for _, f in JOINS}
    seen = set()
    first_seen_s = 0.0
    lat = []
    t0 = None
    with torch.inference_mode():
        for r in range(REQUESTS):
            if r == WARMUP:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                first_seen_s = 0.0
            tr = time.perf_counter()
            active = active_lengths(r)
            frames = active[-1] if r in {s for s, _ in JOINS} else active[int(rng.integers(0, len(active)))]
            pool = pools[frames]
            i = int(rng.integers(0, CLIPS + 1))
            clip = torch.from_numpy(pool[i:i + CLIPS]).to(dev, non_blocking=True)
            probs = served(clip)
            top = probs.argmax(-1).tolist()
            dt = time.perf_counter() - tr
            if frames not in seen:
                seen.add(frames)
                if r >= WARMUP:
                    first_seen_s += dt
                print(f"request {r:3d}: new clip length {frames} frames, served in {dt:.2f} s")
            lat.append(dt)
            if r % 30 == 29:
                print(f"request {r + 1:3d}  median latency {1e3 * float(np.median(lat[-30:])):.1f} ms  top {top}")
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    print(f"GROUND TRUTH: steady state {REQUESTS - WARMUP} requests in {wall:.2f} s; the {len(seen) - 1} "
          f"requests that brought a new clip length (recompiling) took {first_seen_s:.2f} s "
          f"({100 * first_seen_s / wall:.0f}% of the steady loop)")


if __name__ == "__main__":
    main()
