"""Blind batch 15: a YOLOX-style detector whose SimOTA label assignment indexes with boolean masks.

A retail-shelf team trains a small anchor-free detector in the YOLOX style: a CSP-style backbone
(strides 8, 16, 32), an FPN neck of width 96, decoupled heads (classification; box regression and
objectness), 80 product classes, 320 x 320 images, batch 64, SGD with Nesterov momentum, fp32
(cuDNN uses TF32). As in YOLOX, the head's `forward` computes the losses in training mode, and the
targets come from SimOTA under `torch.no_grad()`. The team vectorised the expensive part over the
batch, with the ground truths padded to 30 a image: the centre-sampling prior (`is_in_centers`,
radius 1.5 strides), the IoU of every ground truth with every anchor's predicted box, and the cost
matrix (the pairwise class BCE, expanded into its log terms so that it needs no [B, G, A, C]
tensor, + 3 x IoU loss + 1e6 outside the prior). The matching itself stays image by image, as in
YOLOX's `get_assignments` / `simota_matching`:

- the image's candidate anchors (`fg_mask`: inside some ground truth's prior) are taken with
  boolean masks, `cost[:, fg_mask]` and `ious[:, fg_mask]`;
- a dynamic k per ground truth from its top-10 IoUs (the k lowest costs selected by rank here, not
  with `.item()`); conflicts resolved with `cost[:, multiple_match_mask].argmin(0)` and two masked
  assignments; then `fg_mask[fg_mask.clone()] = fg_mask_inboxes`,
  `matching_matrix[:, fg_mask_inboxes]` and `(...).sum(0)[fg_mask_inboxes]`;
- the losses take `bbox_preds.view(-1, 4)[fg_masks]` and `cls_preds.view(-1, C)[fg_masks]`.

Every boolean-mask index is a `nonzero` under the hood: PyTorch must copy the number of selected
elements to the host and wait for it before it can size the result (an assignment through a mask,
`x[mask] = v` or `x[:, mask] *= 0`, converts the mask with `nonzero` too). That is 9 hidden
synchronisations per image, plus 2 in the loss's gathers and 2 in their backward: 580 an
iteration, with ~25 small kernels of other work per image between them; none of them is an
`.item()`. The first one of each iteration also waits for the whole forward pass.

Images are synthetic shelves (coloured, textured product boxes of 80 classes on a noisy background,
4-30 boxes an image), a bank of 640 made on the GPU once; batches are drawn from it by index. The
loss is read every 20 steps. NVTX: one `yolox_iter` range per iteration (torch.cuda.nvtx).

Before the loop: 2 warm-up iterations, then 6 calibration iterations (the first not counted) with
the same assignment computed densely over all 2,100 anchors with masks as multipliers (no
data-dependent shapes, so no synchronisation), the fix a user would make. Then 150 iterations.

Ground truth printed at the end: host seconds inside the assignment (`get_assignments`, where the
synchronisations are) and the loss's two masked gathers, against the loop's seconds; the dense
calibration's iteration time against the loop's, and the avoidable share `1 - dense / masked`.
"""
import math
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
dev = torch.device("cuda")

NUM_CLASSES = 80
IMG = 320
BATCH = 64
BANK = 640
MAX_GT = 30
STRIDES = (8, 16, 32)
WARMUP, CALIBRATE, STEPS, LOG_EVERY = 2, 6, 150, 20


def conv_bn(cin, cout, k=1, s=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.SiLU())


class CSPLayer(nn.Module):
    def __init__(self, c, n=1):
        super().__init__()
        h = c // 2
        self.main, self.short = conv_bn(c, h), conv_bn(c, h)
        self.blocks = nn.Sequential(*[nn.Sequential(conv_bn(h, h), conv_bn(h, h, 3)) for _ in range(n)])
        self.out = conv_bn(2 * h, c)

    def forward(self, x):
        a = self.main(x)
        a = a + self.blocks(a)
        return self.out(torch.cat([a, self.short(x)], 1))


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 16, 3, 2), conv_bn(16, 32, 3, 2), CSPLayer(32))
        self.dark3 = nn.Sequential(conv_bn(32, 64, 3, 2), CSPLayer(64, 2))
        self.dark4 = nn.Sequential(conv_bn(64, 128, 3, 2), CSPLayer(128, 2))
        self.dark5 = nn.Sequential(conv_bn(128, 256, 3, 2), CSPLayer(256))
        self.lat5, self.lat4, self.lat3 = conv_bn(256, 96), conv_bn(128, 96), conv_bn(64, 96)
        self.smooth4, self.smooth3 = CSPLayer(96), CSPLayer(96)

    def forward(self, x):
        c3 = self.dark3(self.stem(x))
        c4 = self.dark4(c3)
        c5 = self.dark5(c4)
        p5 = self.lat5(c5)
        p4 = self.smooth4(self.lat4(c4) + F.interpolate(p5, scale_factor=2.0))
        p3 = self.smooth3(self.lat3(c3) + F.interpolate(p4, scale_factor=2.0))
        return [p3, p4, p5]


def bboxes_iou(a, b):
    """IoU of cxcywh boxes a [..., N, 4] against b [..., M, 4] -> [..., N, M] (YOLOX's bboxes_iou,
    xyxy=False, with a batch dimension)."""
    a, b = a.unsqueeze(-2), b.unsqueeze(-3)
    tl = torch.max(a[..., :2] - a[..., 2:] / 2, b[..., :2] - b[..., 2:] / 2)
    br = torch.min(a[..., :2] + a[..., 2:] / 2, b[..., :2] + b[..., 2:] / 2)
    inter = (br - tl).clamp(min=0).prod(-1)
    return inter / (a[..., 2:].prod(-1) + b[..., 2:].prod(-1) - inter + 1e-9)


def iou_loss(pred, target):
    """YOLOX's IOUloss(reduction="none", loss_type="iou") for cxcywh boxes."""
    tl = torch.max(pred[:, :2] - pred[:, 2:] / 2, target[:, :2] - target[:, 2:] / 2)
    br = torch.min(pred[:, :2] + pred[:, 2:] / 2, target[:, :2] + target[:, 2:] / 2)
    inter = (br - tl).clamp(min=0).prod(1)
    iou = inter / (pred[:, 2:].prod(1) + target[:, 2:].prod(1) - inter + 1e-16)
    return 1 - iou ** 2


class YOLOXHead(nn.Module):
    def __init__(self, width=96):
        super().__init__()
        self.stems = nn.ModuleList(conv_bn(width, width) for _ in STRIDES)
        self.cls_convs = nn.ModuleList(nn.Sequential(conv_bn(width, width, 3), conv_bn(width, width, 3))
                                       for _ in STRIDES)
        self.reg_convs = nn.ModuleList(nn.Sequential(conv_bn(width, width, 3), conv_bn(width, width, 3))
                                       for _ in STRIDES)
        self.cls_preds = nn.ModuleList(nn.Conv2d(width, NUM_CLASSES, 1) for _ in STRIDES)
        self.reg_preds = nn.ModuleList(nn.Conv2d(width, 4, 1) for _ in STRIDES)
        self.obj_preds = nn.ModuleList(nn.Conv2d(width, 1, 1) for _ in STRIDES)
        prior = -math.log((1 - 0.01) / 0.01)
        for m in list(self.cls_preds) + list(self.obj_preds):
            nn.init.constant_(m.bias, prior)
        xs, ys, ss = [], [], []
        for s in STRIDES:
            n = IMG // s
            gy, gx = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
            xs.append(gx.reshape(-1))
            ys.append(gy.reshape(-1))
            ss.append(torch.full((n * n,), s))
        self.register_buffer("x_shifts", torch.cat(xs).float(), persistent=False)
        self.register_buffer("y_shifts", torch.cat(ys).float(), persistent=False)
        self.register_buffer("expanded_strides", torch.cat(ss).float(), persistent=False)
        self.dense_assign = False   # the sync-free form, used for calibration only

    def forward(self, feats, targets=None):
        outs = []
        for k, x in enumerate(feats):
            x = self.stems[k](x)
            reg_feat = self.reg_convs[k](x)
            out = torch.cat([self.reg_preds[k](reg_feat), self.obj_preds[k](reg_feat),
                             self.cls_preds[k](self.cls_convs[k](x))], 1)
            outs.append(out.flatten(2))
        out = torch.cat(outs, 2).permute(0, 2, 1)                      # [B, A, 5 + C]
        grid = torch.stack([self.x_shifts, self.y_shifts], 1)
        xy = (out[..., :2] + grid) * self.expanded_strides[:, None]
        wh = torch.exp(out[..., 2:4].clamp(max=8.0)) * self.expanded_strides[:, None]
        out = torch.cat([xy, wh, out[..., 4:]], -1)
        if not self.training:
            return out
        return self.get_losses(out, targets)

    # -- losses, as in YOLOX's YOLOXHead.get_losses ------------------------------------------------
    def get_losses(self, outputs, targets):
        global assign_s
        bbox_preds, obj_preds, cls_preds = outputs[:, :, :4], outputs[:, :, 4:5], outputs[:, :, 5:]
        cls_targets, reg_targets, obj_targets, fg_masks = [], [], [], []
        num_fg = 0
        # The vectorised part, over ground truths padded to MAX_GT: [B, G, A].
        gt_pad, num_gts = targets
        t0 = time.perf_counter()
        with torch.no_grad():
            is_in_centers_all, _ = self.get_geometry_constraint(gt_pad[..., 1:5])         # [B, G, A]
            ious_all = bboxes_iou(gt_pad[..., 1:5], bbox_preds)                            # [B, G, A]
            cost_all = self.pairwise_cost(gt_pad[..., 0], is_in_centers_all, ious_all, cls_preds, obj_preds)
        assign_s += time.perf_counter() - t0
        for b, num_gt in enumerate(num_gts):
            gt = gt_pad[b, :num_gt]
            gt_classes, gt_bboxes = gt[:, 0], gt[:, 1:5]
            t0 = time.perf_counter()
            if self.dense_assign:
                fg_mask, cls_t, reg_t, fg_w = self.dense_assignments(
                    gt_bboxes, gt_classes, is_in_centers_all[b, :num_gt], ious_all[b, :num_gt], cost_all[b, :num_gt])
                num_fg = num_fg + fg_w.sum()
                cls_targets.append(cls_t)
                reg_targets.append(reg_t)
            else:
                (gt_matched_classes, fg_mask, pred_ious_this_matching, matched_gt_inds,
                 num_fg_img) = self.get_assignments(gt_classes, is_in_centers_all[b, :num_gt],
                                                    ious_all[b, :num_gt], cost_all[b, :num_gt])
                num_fg += num_fg_img
                cls_targets.append(F.one_hot(gt_matched_classes.long(), NUM_CLASSES)
                                   * pred_ious_this_matching.unsqueeze(-1))
                reg_targets.append(gt_bboxes[matched_gt_inds])
            assign_s += time.perf_counter() - t0
            obj_targets.append(fg_mask.unsqueeze(-1))
            fg_masks.append(fg_mask)
        obj_targets = torch.cat(obj_targets, 0).float()
        fg_masks = torch.cat(fg_masks, 0)
        cls_targets, reg_targets = torch.cat(cls_targets, 0), torch.cat(reg_targets, 0)
        if self.dense_assign:
            w = fg_masks.float()
            num_fg = num_fg.clamp(min=1)
            loss_iou = (iou_loss(bbox_preds.reshape(-1, 4), reg_targets) * w).sum() / num_fg
            loss_cls = (F.binary_cross_entropy_with_logits(cls_preds.reshape(-1, NUM_CLASSES), cls_targets,
                                                           reduction="none").sum(1) * w).sum() / num_fg
        else:
            num_fg = max(num_fg, 1)
            t0 = time.perf_counter()
            pos_boxes = bbox_preds.reshape(-1, 4)[fg_masks]
            pos_cls = cls_preds.reshape(-1, NUM_CLASSES)[fg_masks]
            assign_s += time.perf_counter() - t0
            loss_iou = iou_loss(pos_boxes, reg_targets).sum() / num_fg
            loss_cls = F.binary_cross_entropy_with_logits(pos_cls, cls_targets, reduction="none").sum() / num_fg
        loss_obj = F.binary_cross_entropy_with_logits(obj_preds.reshape(-1, 1), obj_targets,
                                                      reduction="none").sum() / num_fg
        return 5.0 * loss_iou + loss_obj + loss_cls, loss_iou, loss_obj, loss_cls

    def get_geometry_constraint(self, gt_bboxes, center_radius=1.5):
        """gt_bboxes [..., G, 4] -> is_in_centers [..., G, A], anchor_filter [..., A]."""
        s = self.expanded_strides
        xc = (self.x_shifts + 0.5) * s
        yc = (self.y_shifts + 0.5) * s
        r = center_radius * s
        cx, cy = gt_bboxes[..., 0:1], gt_bboxes[..., 1:2]
        deltas = torch.stack([xc - (cx - r), yc - (cy - r), (cx + r) - xc, (cy + r) - yc], -1)
        is_in_centers = deltas.min(dim=-1).values > 0.0
        anchor_filter = is_in_centers.sum(dim=-2) > 0
        return is_in_centers, anchor_filter

    @torch.no_grad()
    def pairwise_cost(self, gt_classes, is_in_centers, ious, cls_preds, obj_preds):
        """YOLOX's cost, batched: BCE of sqrt(cls x obj) against each ground truth's one-hot class,
        summed over classes (expanded into its log terms, so no [B, G, A, C] tensor), + 3 x IoU loss
        + 1e6 outside the centre prior. [B, G, A]."""
        p = (cls_preds.float().sigmoid() * obj_preds.float().sigmoid()).sqrt()           # [B, A, C]
        log_p, log_1mp = torch.log(p).clamp(min=-100), torch.log1p(-p).clamp(min=-100)
        neg_all = -log_1mp.sum(-1)                                                         # [B, A]
        idx = gt_classes.long().unsqueeze(-1).expand(-1, -1, p.shape[1])                  # [B, G, A]
        pos = log_p.transpose(1, 2).gather(1, idx) - log_1mp.transpose(1, 2).gather(1, idx)
        cls_cost = neg_all.unsqueeze(1) - pos
        return cls_cost + 3.0 * -torch.log(ious + 1e-8) + 1e6 * (~is_in_centers).float()

    @torch.no_grad()
    def get_assignments(self, gt_classes, is_in_centers, ious, cost):
        """YOLOX's get_assignments for one image, on its candidate anchors."""
        fg_mask = is_in_centers.sum(dim=0) > 0
        cost = cost[:, fg_mask]
        pair_wise_ious = ious[:, fg_mask]
        return self.simota_matching(cost, pair_wise_ious, gt_classes, fg_mask)

    def simota_matching(self, cost, pair_wise_ious, gt_classes, fg_mask):
        n_candidate_k = min(10, pair_wise_ious.size(1))
        topk_ious, _ = torch.topk(pair_wise_ious, n_candidate_k, dim=1)
        dynamic_ks = torch.clamp(topk_ious.sum(1).int(), min=1)
        # The k lowest costs of each ground truth, by rank (YOLOX loops over dynamic_ks.tolist()).
        rank = cost.argsort(1).argsort(1)
        matching_matrix = (rank < dynamic_ks.unsqueeze(1)).to(torch.uint8)
        anchor_matching_gt = matching_matrix.sum(0)
        multiple_match_mask = anchor_matching_gt > 1
        _, cost_argmin = torch.min(cost[:, multiple_match_mask], dim=0)
        matching_matrix[:, multiple_match_mask] *= 0
        matching_matrix[cost_argmin, multiple_match_mask] = 1
        fg_mask_inboxes = matching_matrix.sum(0) > 0
        fg_mask[fg_mask.clone()] = fg_mask_inboxes
        matched_gt_inds = matching_matrix[:, fg_mask_inboxes].argmax(0)
        gt_matched_classes = gt_classes[matched_gt_inds]
        pred_ious_this_matching = (matching_matrix * pair_wise_ious).sum(0)[fg_mask_inboxes]
        num_fg = matched_gt_inds.shape[0]
        return gt_matched_classes, fg_mask, pred_ious_this_matching, matched_gt_inds, num_fg

    @torch.no_grad()
    def dense_assignments(self, gt_bboxes, gt_classes, is_in_centers, ious, cost):
        """The same SimOTA over all anchors with masks as values: no data-dependent shapes."""
        num_gt = gt_bboxes.shape[0]
        anchor_filter = is_in_centers.sum(dim=0) > 0
        ious = ious * anchor_filter[None]
        cost = cost + 1e7 * (~anchor_filter).float()[None]
        dynamic_ks = torch.clamp(torch.topk(ious, 10, dim=1).values.sum(1).int(), min=1)
        rank = cost.argsort(1).argsort(1)
        matching = (rank < dynamic_ks.unsqueeze(1)) & anchor_filter[None]
        multi = matching.sum(0) > 1
        winner = F.one_hot(cost.argmin(0), num_gt).t().bool()
        matching = torch.where(multi[None], winner, matching)
        fg = matching.any(0)
        matched = matching.float().argmax(0)
        pred_ious = (matching * ious).sum(0)
        cls_t = F.one_hot(gt_classes[matched].long(), NUM_CLASSES) * pred_ious.unsqueeze(-1)
        return fg, cls_t, gt_bboxes[matched], fg


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.head = YOLOXHead()

    def forward(self, images, targets=None):
        return self.head(self.backbone(images), targets)


def make_bank():
    """Synthetic shelf photos: product boxes with class colours and stripe textures on noise."""
    rnd = random.Random(5)
    g = torch.Generator(device=dev).manual_seed(5)
    palette = torch.rand(NUM_CLASSES, 3, device=dev, generator=g)
    freq = torch.randint(2, 12, (NUM_CLASSES,), generator=torch.Generator().manual_seed(5)).tolist()
    yy, xx = torch.meshgrid(torch.arange(IMG, device=dev), torch.arange(IMG, device=dev), indexing="ij")
    images = torch.empty(BANK, 3, IMG, IMG, device=dev)
    gt_pad = torch.zeros(BANK, MAX_GT, 5)
    counts = []
    for i in range(BANK):
        img = 0.35 + 0.15 * torch.randn(3, IMG, IMG, device=dev, generator=g)
        boxes = []
        for _ in range(rnd.randint(4, MAX_GT)):
            c = rnd.randrange(NUM_CLASSES)
            w, h = rnd.uniform(14, 90), rnd.uniform(20, 120)
            cx, cy = rnd.uniform(w / 2, IMG - w / 2), rnd.uniform(h / 2, IMG - h / 2)
            x0, y0, x1, y1 = int(cx - w / 2), int(cy - h / 2), int(cx + w / 2), int(cy + h / 2)
            stripes = 0.8 + 0.2 * torch.sin(xx[y0:y1, x0:x1] * (freq[c] / 10.0))
            img[:, y0:y1, x0:x1] = palette[c][:, None, None] * stripes
            boxes.append([c, cx, cy, w, h])
        images[i] = img.clamp(0, 1)
        gt_pad[i, :len(boxes)] = torch.tensor(boxes)
        counts.append(len(boxes))
    return images, gt_pad.to(dev), counts


model = Detector().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01 * BATCH / 64, momentum=0.9, nesterov=True, weight_decay=5e-4)
images, bank_gt, bank_counts = make_bank()
print(f"{sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters; {BANK} images, "
      f"{sum(bank_counts)} boxes; batch {BATCH}", flush=True)
pick = random.Random(9)
assign_s = 0.0


def train_iteration():
    idx = pick.sample(range(BANK), BATCH)
    sel = torch.tensor(idx, device=dev)
    batch, gt = images[sel], bank_gt[sel]
    if pick.random() < 0.5:
        batch = batch.flip(-1)
        gt = torch.cat([gt[..., :1], IMG - gt[..., 1:2], gt[..., 2:]], -1)
    loss, l_iou, l_obj, l_cls = model(batch, (gt, [bank_counts[i] for i in idx]))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.detach()


model.train()
for _ in range(WARMUP):
    train_iteration()
torch.cuda.synchronize()

model.head.dense_assign = True
dense_s = 0.0
for i in range(CALIBRATE):
    t0 = time.perf_counter()
    train_iteration()
    torch.cuda.synchronize()
    if i > 0:
        dense_s += time.perf_counter() - t0
dense_iter = dense_s / (CALIBRATE - 1)
model.head.dense_assign = False

assign_s = 0.0
running = torch.zeros((), device=dev)
t_loop = time.perf_counter()
for it in range(STEPS):
    torch.cuda.nvtx.range_push("yolox_iter")
    running += train_iteration()
    torch.cuda.nvtx.range_pop()
    if (it + 1) % LOG_EVERY == 0:
        print(f"iter {it + 1}: loss {running.item() / LOG_EVERY:.3f}", flush=True)
        running.zero_()
torch.cuda.synchronize()
loop = time.perf_counter() - t_loop
masked_iter = loop / STEPS
print(f"ground truth: assignment and masked gathers {assign_s:.3f} s of {loop:.3f} s loop "
      f"({100 * assign_s / loop:.1f}%), {9 * BATCH + 4} hidden syncs an iteration; dense assignment "
      f"{1e3 * dense_iter:.1f} ms/iter vs masked {1e3 * masked_iter:.1f} ms/iter (avoidable "
      f"{100 * (1 - dense_iter / masked_iter):.1f}%); {STEPS} iterations", flush=True)
