"""Corpus (blind, batch 12): a torch.compile'd DETR-style detector, Hungarian matching on the host.

Program: training a small set-prediction detector (DETR-style: a 4-stage conv backbone with
BatchNorm, 64 memory tokens, 100 learned queries, 3 decoder layers of self-attention,
cross-attention and MLP written with F.scaled_dot_product_attention, shared class and box heads
applied after every layer for the auxiliary losses) on a synthetic shapes dataset rendered on the
device at start-up (1,024 images of 128 x 128, 4-24 coloured boxes each of 20 classes, targets kept
on the device as DETR's list of {"labels", "boxes"} dicts). The model is wrapped in torch.compile
(default mode, Inductor) and runs under bf16 autocast; batch 32, AdamW, clip_grad_norm_(0.1). The
set criterion is DETR's: for each of the 3 decoder outputs the HungarianMatcher builds the batch's
cost matrix on the device (class probability, L1 and GIoU box costs; 3,200 x ~450), copies it to the
host with .cpu() and solves one linear assignment per image. The environment has no SciPy, so
`linear_sum_assignment` is a NumPy port of SciPy's shortest-augmenting-path solver (the same
algorithm, vectorised over the 100 query columns, a Python loop over target rows and path steps): 96
assignments a step (32 images x 3 layers). Timed here (the untrained model on the CPU, a slower
machine): ~1.6 ms an assignment of 100 x ~14, ~155 ms a step; ~70-130 ms expected on the device,
against ~5-10 ms of GPU work (compiled forward and backward, the eager matching costs and losses,
AdamW) and ~4-8 ms of launches. The compile happens in one warm-up step before the loop (Inductor's
forward and backward graphs, Triton kernels in its compile workers; ~15-40 s, not measured), so the
loop itself compiles nothing. NVTX: one "train_step" range per step. 60 steps; loss printed every 10
(.item()). One line printed at the end: seconds inside linear_sum_assignment, inside the cost
matrices' .cpu(), and the loop's total, measured in-program.

Expected, written before it was recorded (2026-11-27): cpu-work, 75-93% of the steady step, naming
linear_sum_assignment / _augmenting_path (NumPy calls from a Python loop: where, min, flatnonzero,
boolean indexing) under HungarianMatcher.forward, on the main thread, the GPU idle meanwhile; 60
steps (the train_step ranges). The compile in the warm-up, before the ranges, is set apart. Misses:
compile (the warm-up compile is over before the loop; no step recompiles), sync-stall (the .cpu() of
each cost matrix waits for the compiled forward, ~1-3 ms, three times a step), copies (3 x ~6 MB
pageable device-to-host copies a step, ~1-3 ms in all), gpu-bound, launch-bound, input-bound (the
dataset is on the device; the matching consumes the model's output, it does not produce the batch).
Advice that helps: solve the assignments off the critical path or faster: a compiled solver (SciPy's
C++ linear_sum_assignment, lap/lapjv), a process pool across the 96 problems, or a batched GPU
matcher (auction / Sinkhorn); match only the last decoder layer. Not a faster model, not
mode="max-autotune".
"""
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torchvision.ops import box_convert, generalized_box_iou

NUM_CLASSES, NUM_QUERIES, IMG, DATASET = 20, 100, 128, 1024
BATCH, STEPS, LOG_EVERY = 32, 60, 10
D_MODEL, HEADS, FF, DEC_LAYERS = 256, 8, 1024, 3
MIN_OBJECTS, MAX_OBJECTS = 4, 24
COST_CLASS, COST_BBOX, COST_GIOU = 1.0, 5.0, 2.0
LOSS_CE, LOSS_BBOX, LOSS_GIOU, EOS_COEF = 1.0, 5.0, 2.0, 0.1

matching_seconds = readback_seconds = 0.0


# --- linear assignment: a NumPy port of SciPy's rectangular shortest-augmenting-path solver ------

def _augmenting_path(cost, u, v, path, row4col, shortest, visited_rows, visited_cols, i):
    min_val = 0.0
    shortest.fill(np.inf)
    visited_rows.fill(False)
    visited_cols.fill(False)
    sink = -1
    while sink == -1:
        visited_rows[i] = True
        reduced = min_val + cost[i] - u[i] - v
        better = ~visited_cols & (reduced < shortest)
        path[better] = i
        shortest[better] = reduced[better]
        candidates = np.where(visited_cols, np.inf, shortest)
        lowest = candidates.min()
        if not np.isfinite(lowest):
            raise ValueError("cost matrix is infeasible")
        ties = np.flatnonzero(candidates == lowest)
        free = ties[row4col[ties] == -1]
        j = int(free[0] if free.size else ties[0])
        min_val = lowest
        visited_cols[j] = True
        if row4col[j] == -1:
            sink = j
        else:
            i = int(row4col[j])
    return sink, min_val


def linear_sum_assignment(cost):
    """Minimum-cost assignment of rows to columns; returns (row_ind, col_ind) like SciPy's."""
    cost = np.asarray(cost, dtype=np.float64)
    transposed = cost.shape[0] > cost.shape[1]
    if transposed:
        cost = cost.T
    nr, nc = cost.shape
    u, v = np.zeros(nr), np.zeros(nc)
    col4row = np.full(nr, -1, dtype=np.int64)
    row4col = np.full(nc, -1, dtype=np.int64)
    path = np.full(nc, -1, dtype=np.int64)
    shortest = np.empty(nc)
    visited_rows = np.zeros(nr, dtype=bool)
    visited_cols = np.zeros(nc, dtype=bool)
    for cur_row in range(nr):
        sink, min_val = _augmenting_path(cost, u, v, path, row4col, shortest, visited_rows,
                                         visited_cols, cur_row)
        u[cur_row] += min_val
        others = visited_rows.copy()
        others[cur_row] = False
        u[others] += min_val - shortest[col4row[others]]
        v[visited_cols] -= min_val - shortest[visited_cols]
        j = sink
        while True:
            i = int(path[j])
            row4col[j] = i
            col4row[i], j = j, int(col4row[i])
            if i == cur_row:
                break
    rows = np.arange(nr)
    if transposed:
        order = np.argsort(col4row)
        return col4row[order], rows[order]
    return rows, col4row


# --- model -------------------------------------------------------------------------------------

class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, q, k, v):
        b, lq, d = q.shape
        lk, h = k.shape[1], self.heads
        q = self.q(q).view(b, lq, h, d // h).transpose(1, 2)
        k = self.k(k).view(b, lk, h, d // h).transpose(1, 2)
        v = self.v(v).view(b, lk, h, d // h).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.o(out.transpose(1, 2).reshape(b, lq, d))


class DecoderLayer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.self_attn = Attention(d, heads)
        self.cross_attn = Attention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, ff), nn.ReLU(inplace=True), nn.Linear(ff, d))
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, tgt, query_pos, memory, memory_pos):
        q = tgt + query_pos
        tgt = self.norm1(tgt + self.self_attn(q, q, tgt))
        tgt = self.norm2(tgt + self.cross_attn(tgt + query_pos, memory + memory_pos, memory))
        return self.norm3(tgt + self.mlp(tgt))


class SetDetector(nn.Module):
    def __init__(self):
        super().__init__()
        chans = [3, 32, 64, 128, D_MODEL]
        layers = []
        for cin, cout in zip(chans[:-1], chans[1:]):
            layers += [nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False),
                       nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]
        self.backbone = nn.Sequential(*layers)
        tokens = (IMG // 16) ** 2
        self.memory_pos = nn.Parameter(torch.randn(1, tokens, D_MODEL) * 0.02)
        self.query_embed = nn.Parameter(torch.randn(NUM_QUERIES, D_MODEL) * 0.02)
        self.layers = nn.ModuleList(DecoderLayer(D_MODEL, HEADS, FF) for _ in range(DEC_LAYERS))
        self.class_head = nn.Linear(D_MODEL, NUM_CLASSES + 1)
        self.box_head = nn.Sequential(nn.Linear(D_MODEL, D_MODEL), nn.ReLU(inplace=True),
                                      nn.Linear(D_MODEL, D_MODEL), nn.ReLU(inplace=True),
                                      nn.Linear(D_MODEL, 4))

    def forward(self, images):
        memory = self.backbone(images).flatten(2).transpose(1, 2)  # B, 64, D
        query_pos = self.query_embed.unsqueeze(0).expand(memory.shape[0], -1, -1)
        tgt = torch.zeros_like(query_pos)
        logits, boxes = [], []
        for layer in self.layers:
            tgt = layer(tgt, query_pos, memory, self.memory_pos)
            logits.append(self.class_head(tgt))
            boxes.append(self.box_head(tgt).sigmoid())
        return torch.stack(logits), torch.stack(boxes)  # (L, B, Q, C+1), (L, B, Q, 4)


# --- DETR's matcher and criterion --------------------------------------------------------------

class HungarianMatcher(nn.Module):
    @torch.no_grad()
    def forward(self, logits, boxes, targets):
        global matching_seconds, readback_seconds
        bs, nq = logits.shape[:2]
        out_prob = logits.flatten(0, 1).float().softmax(-1)
        out_bbox = boxes.flatten(0, 1).float()
        tgt_ids = torch.cat([t["labels"] for t in targets])
        tgt_bbox = torch.cat([t["boxes"] for t in targets])
        cost_class = -out_prob[:, tgt_ids]
        cost_bbox = torch.cdist(out_bbox, tgt_bbox, p=1)
        cost_giou = -generalized_box_iou(box_convert(out_bbox, "cxcywh", "xyxy"),
                                         box_convert(tgt_bbox, "cxcywh", "xyxy"))
        C = COST_BBOX * cost_bbox + COST_CLASS * cost_class + COST_GIOU * cost_giou
        t0 = time.perf_counter()
        C = C.view(bs, nq, -1).cpu()
        readback_seconds += time.perf_counter() - t0
        sizes = [len(t["boxes"]) for t in targets]
        t0 = time.perf_counter()
        indices = [linear_sum_assignment(c[i].numpy()) for i, c in enumerate(C.split(sizes, -1))]
        matching_seconds += time.perf_counter() - t0
        return [(torch.as_tensor(i, dtype=torch.int64), torch.as_tensor(j, dtype=torch.int64))
                for i, j in indices]


class SetCriterion(nn.Module):
    def __init__(self, matcher):
        super().__init__()
        self.matcher = matcher
        weight = torch.ones(NUM_CLASSES + 1)
        weight[-1] = EOS_COEF
        self.register_buffer("empty_weight", weight)

    def loss_for(self, logits, boxes, targets):
        indices = self.matcher(logits, boxes, targets)
        device = logits.device
        offsets = np.cumsum([0] + [len(t["labels"]) for t in targets])
        batch_idx = np.concatenate([np.full(len(src), i) for i, (src, _) in enumerate(indices)])
        src_idx = np.concatenate([src.numpy() for src, _ in indices])
        tgt_idx = np.concatenate([offsets[i] + tgt.numpy() for i, (_, tgt) in enumerate(indices)])
        idx = torch.from_numpy(np.stack([batch_idx, src_idx, tgt_idx]))
        idx = idx.to(device, non_blocking=True)
        batch_idx, src_idx, tgt_idx = idx[0], idx[1], idx[2]
        tgt_ids = torch.cat([t["labels"] for t in targets])
        tgt_boxes_all = torch.cat([t["boxes"] for t in targets])

        target_classes = torch.full(logits.shape[:2], NUM_CLASSES, dtype=torch.int64, device=device)
        target_classes[batch_idx, src_idx] = tgt_ids[tgt_idx]
        loss_ce = F.cross_entropy(logits.float().transpose(1, 2), target_classes,
                                  self.empty_weight)
        num_boxes = float(len(src_idx))
        src_boxes = boxes[batch_idx, src_idx].float()
        tgt_boxes = tgt_boxes_all[tgt_idx]
        loss_bbox = F.l1_loss(src_boxes, tgt_boxes, reduction="sum") / num_boxes
        loss_giou = (1 - torch.diag(generalized_box_iou(box_convert(src_boxes, "cxcywh", "xyxy"),
                                                        box_convert(tgt_boxes, "cxcywh", "xyxy")))
                     ).sum() / num_boxes
        return LOSS_CE * loss_ce + LOSS_BBOX * loss_bbox + LOSS_GIOU * loss_giou

    def forward(self, all_logits, all_boxes, targets):
        return sum(self.loss_for(all_logits[l], all_boxes[l], targets)
                   for l in range(all_logits.shape[0]))


# --- synthetic shapes dataset, rendered on the device ------------------------------------------

def make_dataset(device, rng):
    """Images with 4-24 axis-aligned coloured boxes each (later boxes painted over earlier ones)."""
    palette = torch.rand(NUM_CLASSES, 3, generator=torch.Generator().manual_seed(7)).to(device)
    images = torch.empty(DATASET, 3, IMG, IMG, device=device)
    targets = []
    coords = (torch.arange(IMG, device=device, dtype=torch.float32) + 0.5) / IMG
    chunk = 128
    for c0 in range(0, DATASET, chunk):
        xyxy = np.zeros((chunk, MAX_OBJECTS, 4), dtype=np.float32)  # padding: empty boxes
        labels = np.zeros((chunk, MAX_OBJECTS), dtype=np.int64)
        for n in range(chunk):
            k = int(rng.integers(MIN_OBJECTS, MAX_OBJECTS + 1))
            wh = rng.uniform(0.06, 0.3, size=(k, 2))
            cxcy = rng.uniform(wh / 2, 1 - wh / 2)
            xyxy[n, :k] = np.concatenate([cxcy - wh / 2, cxcy + wh / 2], 1)
            labels[n, :k] = rng.integers(0, NUM_CLASSES, size=k)
            targets.append({
                "labels": torch.as_tensor(labels[n, :k].copy(), device=device),
                "boxes": torch.tensor(np.concatenate([cxcy, wh], 1), dtype=torch.float32,
                                      device=device),
            })
        box = torch.from_numpy(xyxy).to(device)
        inside = ((coords[None, None, None, :] >= box[:, :, 0, None, None])
                  & (coords[None, None, None, :] < box[:, :, 2, None, None])
                  & (coords[None, None, :, None] >= box[:, :, 1, None, None])
                  & (coords[None, None, :, None] < box[:, :, 3, None, None]))  # chunk, K, H, W
        order = torch.arange(1, MAX_OBJECTS + 1, device=device).view(1, -1, 1, 1)
        top = (inside * order).amax(dim=1)  # chunk, H, W: 1 + index of the topmost box, 0 if none
        top_label = torch.from_numpy(labels).to(device).gather(1, (top - 1).clamp(min=0).flatten(1))
        colour = palette[top_label].view(chunk, IMG, IMG, 3).permute(0, 3, 1, 2)
        bg = 0.35 + 0.1 * torch.randn(chunk, 3, 1, 1, device=device)
        img = bg + 0.05 * torch.randn(chunk, 3, IMG, IMG, device=device)
        img = torch.where(top.unsqueeze(1) > 0, colour + 0.05 * torch.randn_like(img), img)
        images[c0:c0 + chunk] = img.clamp_(0, 1)
    mean = images.mean(dim=(0, 2, 3), keepdim=True)
    std = images.std(dim=(0, 2, 3), keepdim=True)
    return (images - mean) / std, targets


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    torch.set_float32_matmul_precision("high")
    t = time.perf_counter()
    images, targets = make_dataset(device, rng)
    torch.cuda.synchronize()
    print(f"rendered {DATASET} images, {sum(len(x['labels']) for x in targets)} boxes, "
          f"in {time.perf_counter() - t:.1f} s")

    model = SetDetector().to(device)
    model = model.to(memory_format=torch.channels_last)
    criterion = SetCriterion(HungarianMatcher()).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=1e-4)
    compiled = torch.compile(model)

    def train_step(batch_ids):
        batch = images[batch_ids].contiguous(memory_format=torch.channels_last)
        batch_targets = [targets[i] for i in batch_ids.tolist()]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            all_logits, all_boxes = compiled(batch)
        loss = criterion(all_logits, all_boxes, batch_targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        return loss

    order = torch.randperm(DATASET)
    t = time.perf_counter()
    train_step(order[:BATCH])  # warm-up: Inductor compiles the forward and the backward here
    torch.cuda.synchronize()
    print(f"warm-up step (torch.compile) {time.perf_counter() - t:.1f} s")

    global matching_seconds, readback_seconds
    matching_seconds = readback_seconds = 0.0
    start = time.perf_counter()
    for step in range(STEPS):
        torch.cuda.nvtx.range_push("train_step")
        first = (step * BATCH) % DATASET
        if first == 0:
            order = torch.randperm(DATASET)
        loss = train_step(order[first:first + BATCH])
        torch.cuda.nvtx.range_pop()
        if (step + 1) % LOG_EVERY == 0:
            print(f"step {step + 1}/{STEPS}: loss {loss.item():.4f}")
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    print(f"steps {STEPS}: inside linear_sum_assignment {matching_seconds:.2f} s "
          f"({100 * matching_seconds / total:.0f}%), cost matrices' .cpu() "
          f"{readback_seconds:.2f} s, of loop {total:.2f} s "
          f"({DEC_LAYERS * BATCH} assignments a step)")


if __name__ == "__main__":
    main()
