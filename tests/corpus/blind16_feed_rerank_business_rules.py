"""Home-feed ranking service: a DCN-v2 ranker scores 2,000 candidates per user on the GPU, then
the business-rule re-ranker walks each user's top candidates in Python, reading the score,
category and price flag of every candidate with .item() on the GPU tensors.

Each .item() is a device-to-host copy of a few bytes and a stream synchronisation; the walk
stops after 10 accepted items per user (at most 2 per category, price within the user's band,
score above a floor), so a request reads 40-150 scalars per user one at a time. The ranker itself
is a millisecond of GPU work per micro-batch of 8 users.
Steps: 5 warm-up requests, then 150 timed requests (micro-batches of 8 users); every 25th
request is a cold-start user batch with 6,000 candidates, a narrow price band and a looser floor
(a slower request that reads more scalars);
metrics logged every 30 requests; a feature-table refresh (host-to-device copy) every 50.
"""
import time

import torch
import torch.nn as nn

DEV = "cuda"
N_ITEMS, N_CATS, D_EMB = 200_000, 40, 64
USERS_PER_REQ, CANDS, COLD_CANDS = 8, 2000, 6000
TOP, ACCEPT, PER_CAT = 160, 10, 2
WARMUP, STEPS, COLD_EVERY, LOG_EVERY, REFRESH_EVERY = 5, 150, 25, 30, 50


class CrossNet(nn.Module):
    def __init__(self, d, layers=3):
        super().__init__()
        self.w = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))

    def forward(self, x0):
        x = x0
        for lin in self.w:
            x = x0 * lin(x) + x
        return x


class Ranker(nn.Module):
    def __init__(self):
        super().__init__()
        self.item = nn.Embedding(N_ITEMS, D_EMB)
        self.cat = nn.Embedding(N_CATS, 16)
        self.user = nn.Sequential(nn.Linear(96, 128), nn.ReLU(), nn.Linear(128, D_EMB))
        d = D_EMB * 2 + 16 + 8
        self.cross = CrossNet(d)
        self.deep = nn.Sequential(nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU())
        self.head = nn.Linear(d + 128, 1)

    def forward(self, user_feat, item_ids, item_cat, item_dense):
        b, n = item_ids.shape
        u = self.user(user_feat).unsqueeze(1).expand(b, n, -1)
        x = torch.cat([u, self.item(item_ids), self.cat(item_cat), item_dense], -1)
        return self.head(torch.cat([self.cross(x), self.deep(x)], -1)).squeeze(-1)


torch.manual_seed(0)
model = Ranker().to(DEV).eval()
item_cat_table = torch.randint(0, N_CATS, (N_ITEMS,), device=DEV)
item_price_table = torch.rand(N_ITEMS, device=DEV) * 200
item_dense_host = torch.randn(N_ITEMS, 8)
item_dense_table = item_dense_host.to(DEV)
gen = torch.Generator(device=DEV)
gen.manual_seed(1)


def request(cold):
    n = COLD_CANDS if cold else CANDS
    user_feat = torch.randn(USERS_PER_REQ, 96, device=DEV)
    cands = torch.randint(0, N_ITEMS, (USERS_PER_REQ, n), device=DEV, generator=gen)
    band_lo = torch.rand(USERS_PER_REQ, 1, device=DEV, generator=gen) * 100
    with torch.inference_mode():
        scores = torch.sigmoid(model(user_feat, cands, item_cat_table[cands], item_dense_table[cands]))
        top_s, top_i = torch.topk(scores, TOP, dim=1)
        top_items = torch.gather(cands, 1, top_i)
        top_cat = item_cat_table[top_items]
        price = item_price_table[top_items]
        in_band = (price >= band_lo) & (price <= band_lo + (30 if cold else 80))
    floor = 0.2 if cold else 0.35
    feeds, reads = [], 0
    t_rules = time.perf_counter()
    for u in range(USERS_PER_REQ):
        accepted, per_cat = [], {}
        for j in range(TOP):
            s = top_s[u, j].item()
            reads += 1
            if s < floor:
                break
            c = top_cat[u, j].item()
            reads += 1
            if per_cat.get(c, 0) >= PER_CAT:
                continue
            ok = in_band[u, j].item()
            reads += 1
            if not ok:
                continue
            per_cat[c] = per_cat.get(c, 0) + 1
            accepted.append((top_items[u, j].item(), round(s, 4), c))
            reads += 1
            if len(accepted) == ACCEPT:
                break
        feeds.append(accepted)
    return feeds, reads, time.perf_counter() - t_rules


for _ in range(WARMUP):
    request(False)
torch.cuda.synchronize()
loop_t0 = time.perf_counter()
rules_s = 0.0
total_reads = 0
served = 0
lat = []
for step in range(1, STEPS + 1):
    t_req = time.perf_counter()
    feeds, reads, dt = request(step % COLD_EVERY == 0)
    rules_s += dt
    total_reads += reads
    served += sum(len(f) for f in feeds)
    lat.append(time.perf_counter() - t_req)
    if step % LOG_EVERY == 0:
        p50 = sorted(lat[-LOG_EVERY:])[LOG_EVERY // 2] * 1000
        print(f"request {step:3d} p50 {p50:.1f} ms, {total_reads} scalar reads so far, served {served}")
    if step % REFRESH_EVERY == 0:
        item_dense_host.mul_(0.99).add_(torch.randn(N_ITEMS, 8) * 0.01)
        item_dense_table.copy_(item_dense_host)
torch.cuda.synchronize()
loop_s = time.perf_counter() - loop_t0
print(f"GROUND TRUTH: business-rule walk reading GPU scalars with .item() {rules_s:.2f} s of "
      f"{loop_s:.2f} s loop ({100 * rules_s / loop_s:.0f}%), {total_reads} .item() reads "
      f"({1e6 * rules_s / max(total_reads, 1):.0f} us each), {STEPS} requests")
