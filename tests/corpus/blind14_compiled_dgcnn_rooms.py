"""Blind batch 14: DGCNN semantic segmentation of indoor scans, compiled with torch.compile.

The model is DGCNN's S3DIS segmentation network (Wang et al., "Dynamic Graph CNN"), written as in
its reference implementation: every EdgeConv recomputes the k nearest neighbours (k = 20) of every
point in the current feature space from a full pairwise-distance matrix
(`-xx - inner - xx^T`, then `topk`), gathers the neighbours' features into a (B, 2C, N, k) edge
tensor, applies 1x1 convolutions, BatchNorm and LeakyReLU, and takes the max over the neighbours.
Three EdgeConv stages, a 1024-wide global feature, a three-layer head over 13 classes.

Batches of 8 rooms x 4,096 points (xyz, rgb, normalised xyz) are synthesised on the GPU: floor,
ceiling, walls, tables, chairs, boards, clutter, each with its colour and label. fp32, as in the
reference code (cuDNN convolutions use TF32 by PyTorch's default; matrix products do not).

The model is wrapped in `torch.compile` (default mode): Inductor fuses the elementwise work and the
gathers into Triton kernels; the matrix products, the convolutions' GEMMs and `topk` stay library
kernels. The first (compiling) step is a warm-up before the loop. The loss is read every step.
No NVTX.

Ground truth printed at the end: GPU seconds (CUDA events around each step) against the loop's
seconds; the time of one eager kNN (distances + topk) at this size, measured before the loop; and
the number of steps.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
dev = torch.device("cuda")

B, N, K, CLASSES = 8, 4096, 20, 13
WARMUP, STEPS = 3, 60


def knn(x, k):
    inner = -2 * torch.matmul(x.transpose(2, 1), x)
    xx = torch.sum(x ** 2, dim=1, keepdim=True)
    pairwise_distance = -xx - inner - xx.transpose(2, 1)
    return pairwise_distance.topk(k=k, dim=-1)[1]  # (B, N, k)


def get_graph_feature(x, k=K, idx=None, knn_on_xyz=False):
    batch_size, num_dims, num_points = x.shape
    if idx is None:
        idx = knn(x[:, 6:] if knn_on_xyz else x, k)
    idx_base = torch.arange(0, batch_size, device=x.device).view(-1, 1, 1) * num_points
    idx = (idx + idx_base).view(-1)
    x = x.transpose(2, 1).contiguous()
    feature = x.view(batch_size * num_points, -1)[idx, :]
    feature = feature.view(batch_size, num_points, k, num_dims)
    x = x.view(batch_size, num_points, 1, num_dims).repeat(1, 1, k, 1)
    return torch.cat((feature - x, x), dim=3).permute(0, 3, 1, 2).contiguous()


def conv2d(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.LeakyReLU(0.2))


def conv1d(cin, cout):
    return nn.Sequential(nn.Conv1d(cin, cout, 1, bias=False), nn.BatchNorm1d(cout), nn.LeakyReLU(0.2))


class DGCNNSemSeg(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = conv2d(18, 64), conv2d(64, 64)
        self.conv3, self.conv4 = conv2d(128, 64), conv2d(64, 64)
        self.conv5 = conv2d(128, 64)
        self.conv6 = conv1d(192, 1024)
        self.conv7, self.conv8 = conv1d(1216, 512), conv1d(512, 256)
        self.dp1 = nn.Dropout(0.5)
        self.conv9 = nn.Conv1d(256, CLASSES, 1, bias=False)

    def forward(self, x):  # x: (B, 9, N)
        num_points = x.size(2)
        x = get_graph_feature(x, knn_on_xyz=True)
        x1 = self.conv2(self.conv1(x)).max(dim=-1)[0]
        x = get_graph_feature(x1)
        x2 = self.conv4(self.conv3(x)).max(dim=-1)[0]
        x = get_graph_feature(x2)
        x3 = self.conv5(x).max(dim=-1)[0]
        x = torch.cat((x1, x2, x3), dim=1)
        x = self.conv6(x).max(dim=-1, keepdim=True)[0].repeat(1, 1, num_points)
        x = torch.cat((x, x1, x2, x3), dim=1)
        return self.conv9(self.dp1(self.conv8(self.conv7(x))))


PALETTE = torch.rand(CLASSES, 3, generator=torch.Generator().manual_seed(1)).to(dev)


def synthetic_rooms(b=B, n=N):
    """Points of a box-shaped room: floor, ceiling, four walls, furniture and clutter, labelled."""
    size = torch.rand(b, 1, 3, device=dev) * torch.tensor([6.0, 6.0, 1.0], device=dev) + \
        torch.tensor([3.0, 3.0, 2.6], device=dev)
    label = torch.randint(0, CLASSES, (b, n), device=dev)
    u = torch.rand(b, n, 3, device=dev) * size
    xyz = u.clone()
    xyz[..., 2] = torch.where(label == 0, 0.0, xyz[..., 2])                        # floor
    xyz[..., 2] = torch.where(label == 1, size[..., 2], xyz[..., 2])               # ceiling
    xyz[..., 0] = torch.where(label == 2, 0.0, xyz[..., 0])                        # walls
    xyz[..., 0] = torch.where(label == 3, size[..., 0], xyz[..., 0])
    xyz[..., 1] = torch.where(label == 4, 0.0, xyz[..., 1])
    xyz[..., 1] = torch.where(label == 5, size[..., 1], xyz[..., 1])
    furniture = label >= 6                                                         # boxes
    centre = torch.rand(b, 1, 3, device=dev) * size * 0.6 + size * 0.2
    box = centre + (torch.rand(b, n, 3, device=dev) - 0.5) * (0.3 + 0.15 * label.unsqueeze(-1) / CLASSES)
    xyz = torch.where(furniture.unsqueeze(-1), box, xyz)
    xyz = xyz + 0.01 * torch.randn_like(xyz)
    rgb = (PALETTE[label] + 0.1 * torch.randn(b, n, 3, device=dev)).clamp(0, 1)
    norm = xyz / size
    return torch.cat([xyz, rgb, norm], dim=2).transpose(1, 2).contiguous(), label


model = DGCNNSemSeg().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
compiled = torch.compile(model)


def train_step(points, labels):
    logits = compiled(points)
    loss = F.cross_entropy(logits, labels, label_smoothing=0.2)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss


t0 = time.perf_counter()
for _ in range(WARMUP):
    pts, lab = synthetic_rooms()
    train_step(pts, lab).item()
torch.cuda.synchronize()
print(f"warm-up (compile) {time.perf_counter() - t0:.1f} s", flush=True)

# One eager kNN at the loop's size, for the record.
with torch.no_grad():
    feats = torch.randn(B, 64, N, device=dev)
    knn(feats, K)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(5):
        knn(feats, K)
    e1.record()
    torch.cuda.synchronize()
    knn_ms = e0.elapsed_time(e1) / 5
    del feats

starts = [torch.cuda.Event(enable_timing=True) for _ in range(STEPS)]
ends = [torch.cuda.Event(enable_timing=True) for _ in range(STEPS)]
t_loop = time.perf_counter()
for step in range(STEPS):
    pts, lab = synthetic_rooms()
    starts[step].record()
    loss = train_step(pts, lab)
    ends[step].record()
    value = loss.item()
    if step % 10 == 0:
        print(f"step {step}: loss {value:.4f}", flush=True)
torch.cuda.synchronize()
loop = time.perf_counter() - t_loop
gpu = sum(s.elapsed_time(e) for s, e in zip(starts, ends)) / 1000
print(f"ground truth: GPU {gpu:.3f} s of {loop:.3f} s loop ({100 * gpu / loop:.1f}%); one kNN "
      f"(distances + topk, eager, 64 channels) {knn_ms:.2f} ms, 3 a forward; {STEPS} steps", flush=True)
