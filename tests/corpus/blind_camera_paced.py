"""Corpus (blind, batch 6): a real-time detector that waits for a 30 fps camera.

Program: a capture thread stands in for a camera: it makes a 720p RGB frame (uint8, NumPy) every
1/30 s on the clock (time.sleep to the next frame time) and hands it over through a
queue.Queue(maxsize=2). The main thread takes each frame (frames.get(), blocking), copies it to
the GPU, runs a small convolutional detector on it at batch 1 (9 conv + BatchNorm + ReLU blocks
to stride 32, a 1x1 head of 85 channels; bf16 autocast, channels_last, inference_mode), reads
the 32 best boxes and their scores back with .cpu().tolist() and updates a Python IoU tracker.
The model is warmed up on a blank frame before the camera starts. No NVTX. 45 frames.
Expected, written before it was recorded (2026-11-26), not run beforehand, so estimated from
first principles: input-bound, at least 80% of the steady step, naming the frames.get() line or
the copy in detect() right after it. A frame arrives every 33.3 ms; its copy (2.8 MB, pageable),
the ~26 GFLOP of convolutions, the read-backs and the tracker take ~3-4 ms, so the GPU waits ~30
ms a frame for the next one. Nothing in the program can make that faster: the cure is to serve
more streams, or larger batches, on this GPU. The trap: each wait follows device-to-host reads
of 160 values (32 scores, 32 boxes), but the CPU computes on them only briefly (the tracker's
~1,000 IoUs, ~1-2 ms), then sleeps in queue.get while the capture thread sleeps until the next
frame time. cpu-work is a miss, as are gpu-bound and launch-bound. 45 steps (within 3), one a
frame; the warm-up inference before the loop may be counted as one more.
"""
import queue
import threading
import time

import numpy as np
import torch
from torch import nn

FPS, FRAMES, HEIGHT, WIDTH = 30, 45, 720, 1280
frames = queue.Queue(maxsize=2)


def camera():
    rng = np.random.default_rng(0)
    scene = rng.integers(0, 256, (HEIGHT, WIDTH + FRAMES, 3), dtype=np.uint8)
    start = time.perf_counter()
    for i in range(FRAMES):
        delay = start + (i + 1) / FPS - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        frames.put(np.ascontiguousarray(scene[:, i:i + WIDTH]))  # the scene pans one pixel
    frames.put(None)


def block(cin, cout, stride):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True))


torch.manual_seed(0)
detector = nn.Sequential(block(3, 32, 2), block(32, 64, 2), block(64, 64, 1), block(64, 128, 2),
                         block(128, 128, 1), block(128, 256, 2), block(256, 256, 1),
                         block(256, 512, 2), block(512, 512, 1), nn.Conv2d(512, 85, 1))
detector = detector.cuda().eval().to(memory_format=torch.channels_last)


def detect(frame):
    x = torch.from_numpy(frame).cuda().permute(2, 0, 1)[None].float().div_(255)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = detector(x.contiguous(memory_format=torch.channels_last))[0].float()
    scores = out[4].sigmoid().flatten()
    top = scores.topk(32)
    boxes = out[:4].flatten(1)[:, top.indices].t().sigmoid()
    return top.values.cpu().tolist(), boxes.cpu().tolist()


def iou(a, b):
    w = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    return w * h / (a[2] * a[3] + b[2] * b[3] - w * h + 1e-9)


def track(tracks, scores, boxes, next_id):
    matched = {}
    for score, box in zip(scores, boxes):
        best = max(tracks.items(), key=lambda t: iou(t[1], box), default=None)
        if best is not None and best[0] not in matched and iou(best[1], box) > 0.3:
            matched[best[0]] = box
        elif score > 0.5:
            matched[next_id] = box
            next_id += 1
    return matched, next_id


with torch.inference_mode():
    detect(np.zeros((HEIGHT, WIDTH, 3), dtype=np.uint8))  # warm-up before the stream opens
    torch.cuda.synchronize()
    threading.Thread(target=camera, daemon=True).start()
    tracks, next_id, seen = {}, 0, 0
    while True:
        frame = frames.get()
        if frame is None:
            break
        scores, boxes = detect(frame)
        tracks, next_id = track(tracks, scores, boxes, next_id)
        seen += 1
print("frames", seen, "tracks", len(tracks), "ids", next_id)
