"""Corpus (blind, batch 11): an instance-segmentation export job whose post-processing reads back.

Program: a CenterNet/YOLACT-style instance segmenter (a residual conv backbone to stride 8 with
64-256 channels, heads for an 80-class centre heatmap with the focal-loss prior bias, box sizes, 32
mask coefficients, and 32 mask prototypes at stride 4; random weights standing in for a checkpoint;
bf16, channels_last, eval, inference_mode, cudnn.benchmark) labels batches of 8 video frames of 768
x 768 (already decoded, in GPU memory) and exports one record per instance, as a dataset-labelling
job does. The network is ~1.3 TFLOP a batch, ~5-10 ms of GPU work queued in ~1-2 ms.
export_instances() then works per frame and per detection in Python, the way such code is often
first written: peak picking and top-30 on the GPU, `scores[keep]` (boolean indexing, whose output
size needs the count: waits for the whole network), then for each of the ~30 detections of each
frame `int(ys[k])`, `int(xs[k])`, `wh[...].tolist()`, the mask cropped to its box, `if not m.any()`,
`int(m.sum())`, `torch.nonzero(m, as_tuple=True)`, four `int(xs_m.min())`-style reads for the tight
box, `int(cls[k])`, `float(scores[k])`: ~12 synchronising reads and ~10 tiny kernels a detection,
~240 detections and ~2,900 hidden syncs a batch. None of them is spelled .item() or synchronize().
No NVTX. 100 batches after 3 warm-up batches; one line printed at the end: the seconds in
export_instances() (the first read's wait for the network included) and the GPU-timeline span of the
network by CUDA events, against the loop's total, measured in-program.

Expected, written before it was recorded (2026-11-26): sync-stall, 70-92% of the steady step, naming
the per-detection reads in export_instances (the int()/float()/.tolist() conversions, `if not
m.any()`, torch.nonzero, the boolean indexing of the scores): thousands of tiny device-to-host
copies and stream synchronisations a batch, each waiting for one or two microsecond kernels, with
the GPU idle in between. 103 steps (100 after 3 warm-up batches; within 3). Acceptable second
reading: copies, if it names the same lines and says the cost is the count of tiny synchronous
reads, not their bytes. Near misses: cpu-work or launch-bound on export_instances (right place; but
the ~10 kernels a detection take a few microseconds each and the cure is to stop reading per
element). Misses: gpu-bound (the network is ~8-15% of the step), input-bound, allocator.
Advice that helps: keep the post-processing on the GPU for the whole batch (boxes from masks by
reductions over all detections at once, one .cpu() or .tolist() of the final records per batch), or
torchvision.ops.masks_to_boxes; not a faster backbone.
"""
import time

import torch
import torch.nn.functional as F
from torch import nn

BATCH, SIZE, CLASSES, PROTOS = 8, 768, 80, 32
MAX_DETS, SCORE_THRESH, MASK_THRESH = 30, 0.05, 0.5
BATCHES, WARMUP_BATCHES = 100, 3
# Fewer batches for a smaller trace (the recording keeps 367,000 kernels at 100).
BATCHES = int(__import__("os").environ.get("BLIND_STEPS", BATCHES))


def conv_bn(cin, cout, stride=1, k=3, relu=True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout)]
    if relu:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(conv_bn(c, c), conv_bn(c, c, relu=False))

    def forward(self, x):
        return F.relu(x + self.body(x))


class InstanceNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            conv_bn(3, 64, 2), conv_bn(64, 64), conv_bn(64, 128, 2), Residual(128), Residual(128),
            conv_bn(128, 256, 2), Residual(256), Residual(256), Residual(256))
        self.heat = nn.Sequential(conv_bn(256, 256), nn.Conv2d(256, CLASSES, 1))
        nn.init.constant_(self.heat[-1].bias, -2.19)  # focal-loss prior, p = 0.1
        self.wh = nn.Sequential(conv_bn(256, 128), nn.Conv2d(128, 2, 1))
        self.coef = nn.Conv2d(256, PROTOS, 1)
        self.protos = nn.Sequential(conv_bn(256, 128, k=1),
                                    nn.Upsample(scale_factor=2, mode="bilinear"),
                                    conv_bn(128, 128), nn.Conv2d(128, PROTOS, 1), nn.ReLU())

    def forward(self, x):
        f = self.backbone(x)
        wh = F.softplus(self.wh(f)) * 8 + 4  # box size in feature cells
        return self.heat(f), wh, torch.tanh(self.coef(f)), self.protos(f)


def export_instances(heat, wh, coefs, protos, frame_ids):
    records = []
    _, _, H, W = heat.shape
    PH, PW = protos.shape[-2:]
    scale = PH // H
    hm = heat.float().sigmoid()
    peaks = hm * (hm == F.max_pool2d(hm, 3, stride=1, padding=1))
    for i, frame in enumerate(frame_ids):
        scores, idx = peaks[i].flatten().topk(MAX_DETS)
        keep = scores > SCORE_THRESH
        scores, idx = scores[keep], idx[keep]
        pix = idx % (H * W)
        cls = torch.div(idx, H * W, rounding_mode="floor")
        ys, xs = torch.div(pix, W, rounding_mode="floor"), pix % W
        coef = coefs[i].flatten(1)[:, pix].T.float()
        masks = torch.sigmoid(coef @ protos[i].float().flatten(1)).view(-1, PH, PW) > MASK_THRESH
        for k in range(scores.numel()):
            cy, cx = int(ys[k]), int(xs[k])
            bw, bh = wh[i, :, cy, cx].float().tolist()
            x0, x1 = max(0, int((cx - bw / 2) * scale)), min(PW, int((cx + bw / 2) * scale) + 1)
            y0, y1 = max(0, int((cy - bh / 2) * scale)), min(PH, int((cy + bh / 2) * scale) + 1)
            m = masks[k, y0:y1, x0:x1]
            if not m.any():
                continue
            area = int(m.sum())
            ys_m, xs_m = torch.nonzero(m, as_tuple=True)
            records.append({
                "frame": frame, "class": int(cls[k]), "score": round(float(scores[k]), 4),
                "bbox": [x0 + int(xs_m.min()), y0 + int(ys_m.min()),
                         x0 + int(xs_m.max()), y0 + int(ys_m.max())],
                "area": area,
            })
    return records


def main():
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    model = InstanceNet().cuda().to(torch.bfloat16).to(memory_format=torch.channels_last).eval()
    mean = torch.tensor([0.485, 0.456, 0.406], device="cuda").view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device="cuda").view(1, 3, 1, 1) * 255
    gen = torch.Generator(device="cuda").manual_seed(0)

    exported = []
    in_export = 0.0
    net_ms = 0.0
    start = None
    with torch.inference_mode():
        for b in range(WARMUP_BATCHES + BATCHES):
            if b == WARMUP_BATCHES:
                torch.cuda.synchronize()
                start = time.perf_counter()
                in_export, net_ms, exported = 0.0, 0.0, []
            frames = torch.randint(0, 256, (BATCH, 3, SIZE, SIZE), device="cuda",
                                   dtype=torch.uint8, generator=gen)
            x = ((frames.float() - mean) / std).to(torch.bfloat16)
            x = x.contiguous(memory_format=torch.channels_last)
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            heat, wh, coefs, protos = model(x)
            e1.record()
            t0 = time.perf_counter()
            exported += export_instances(heat, wh, coefs, protos,
                                         [b * BATCH + i for i in range(BATCH)])
            in_export += time.perf_counter() - t0
            net_ms += e0.elapsed_time(e1)
            if b % 20 == 0:
                print(f"batch {b}: {len(exported)} instances exported so far")
        torch.cuda.synchronize()
        total = time.perf_counter() - start
    print(f"batches {BATCHES}; in export_instances() {in_export:.2f} s, network GPU span "
          f"{net_ms / 1e3:.2f} s, of loop {total:.2f} s; {len(exported)} instances")


if __name__ == "__main__":
    main()
