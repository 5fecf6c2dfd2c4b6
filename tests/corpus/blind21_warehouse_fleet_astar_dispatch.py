"""Warehouse fleet dispatch: a learned dispatcher assigns pick orders to robots, A* routes them.

A 128x128 fulfilment-centre floor (racks, aisles, four pack stations) runs a fleet of robots. Each
simulation tick the dispatcher (a small transformer over robot and order tokens) scores every
robot-order pair on the GPU, the greedy assignment comes back to the host, the dispatcher takes one
online imitation-learning step against the heuristic teacher from its replay buffer, and the host
routes every newly assigned robot (shelf pick-up, then pack station) with A* on the floor grid,
with a penalty for cells other robots have reserved. Start-up (floor, fleet, model, replay),
warm-up ticks, the timed ticks with a metrics line every 50 ticks and a policy snapshot every 100,
teardown.
"""
import heapq
import io
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SMALL = os.environ.get("BLIND_SMALL") == "1"
DEV = "cuda"
G = 48 if SMALL else 128
ROBOTS = 16 if SMALL else 160
MAX_ORDERS = 32 if SMALL else 160
ARRIVALS = 1.0 if SMALL else 3.0          # orders per tick (Poisson)
MOVES_PER_TICK = 4                        # cells a robot drives per tick
D, LAYERS = (64, 1) if SMALL else (384, 4)
REPLAY_BATCH = 4 if SMALL else 48
WARMUP = 3 if SMALL else 20
TICKS = 10 if SMALL else 240
nvtx = torch.cuda.nvtx


def build_floor():
    grid = np.zeros((G, G), bool)
    for r in range(4, G - 4, 5):
        for c in range(4, G - 4, 10):
            grid[r:r + 2, c:c + 8] = True
    shelves = [(r + 2, c + j) for r in range(4, G - 4, 5) for c in range(4, G - 4, 10)
               for j in range(0, 8, 2)]
    stations = [(G - 2, G // 5), (G - 2, 2 * G // 5), (G - 2, 3 * G // 5), (G - 2, 4 * G // 5)]
    return grid, shelves, stations


def astar(blocked, start, goal, reserved):
    gy, gx = goal
    openh = [(abs(start[0] - gy) + abs(start[1] - gx), 0, start)]
    came, cost = {start: None}, {start: 0}
    while openh:
        _, c, cur = heapq.heappop(openh)
        if cur == goal:
            break
        if c > cost[cur]:
            continue
        y, x = cur
        for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            ny, nx = y + dy, x + dx
            if 0 <= ny < G and 0 <= nx < G and not blocked[ny][nx]:
                nc = c + 1 + (2 if (ny, nx) in reserved else 0)
                if nc < cost.get((ny, nx), 1 << 30):
                    cost[(ny, nx)] = nc
                    came[(ny, nx)] = cur
                    heapq.heappush(openh, (nc + abs(ny - gy) + abs(nx - gx), nc, (ny, nx)))
    path, n = [], goal
    while n is not None:
        path.append(n)
        n = came.get(n)
    return path[::-1]


class Dispatcher(nn.Module):
    def __init__(self):
        super().__init__()
        self.robot_in = nn.Linear(6, D)
        self.order_in = nn.Linear(5, D)
        layer = nn.TransformerEncoderLayer(D, 8, 4 * D, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.enc = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.q, self.k = nn.Linear(D, D), nn.Linear(D, D)

    def forward(self, robots, orders):
        h = self.enc(torch.cat([self.robot_in(robots), self.order_in(orders)], 1))
        r, o = h[:, :ROBOTS], h[:, ROBOTS:]
        return torch.einsum("brd,bod->bro", self.q(r), self.k(o)) / D ** 0.5


class Fleet:
    def __init__(self, rng):
        self.rng = rng
        self.grid, self.shelves, self.stations = build_floor()
        self.blocked = self.grid.tolist()
        free = np.argwhere(~self.grid)
        self.pos = [tuple(p) for p in free[rng.choice(len(free), ROBOTS, replace=False)].tolist()]
        self.path = [[] for _ in range(ROBOTS)]
        self.busy = [False] * ROBOTS
        self.battery = [1.0] * ROBOTS
        self.orders = []                 # (shelf, station, age)
        self.done = 0
        self.travel = 0

    def arrive(self):
        for _ in range(self.rng.poisson(ARRIVALS)):
            if len(self.orders) < MAX_ORDERS:
                s = self.shelves[int(self.rng.integers(len(self.shelves)))]
                self.orders.append([s, self.stations[int(self.rng.integers(4))], 0])

    def tokens(self):
        r = np.zeros((ROBOTS, 6), np.float32)
        for i, (y, x) in enumerate(self.pos):
            r[i] = (y / G, x / G, float(self.busy[i]), self.battery[i], len(self.path[i]) / G, 1)
        o = np.zeros((MAX_ORDERS, 5), np.float32)
        for j, ((sy, sx), (ty, tx), age) in enumerate(self.orders):
            o[j] = (sy / G, sx / G, ty / G, tx / G, min(age / 100.0, 1.0))
        return r, o

    def teacher(self, r, o):
        """Heuristic label: nearest idle robot per order (Manhattan)."""
        d = np.abs(r[:, None, 0] - o[None, :, 0]) + np.abs(r[:, None, 1] - o[None, :, 1])
        d[r[:, 2] > 0.5] = 9.0
        return d.argmin(0)

    def step_motion(self):
        for _ in range(MOVES_PER_TICK):
            self.move_one_cell()
        for o in self.orders:
            o[2] += 1

    def move_one_cell(self):
        # soft collisions: robots may share a cell (the planner's reservation penalty keeps
        # that rare); a robot whose next cell is held by a parked robot waits one move
        parked = {self.pos[i] for i in range(ROBOTS) if not self.path[i]}
        for i in range(ROBOTS):
            if self.path[i]:
                if self.path[i][0] in parked and len(self.path[i]) > 1 and self.rng.random() < 0.5:
                    continue
                self.pos[i] = self.path[i].pop(0)
                self.travel += 1
                self.battery[i] = max(0.05, self.battery[i] - 0.0004)
                if not self.path[i]:
                    self.busy[i] = False
                    self.done += 1


def main():
    rng = np.random.default_rng(3)
    torch.manual_seed(3)
    fleet = Fleet(rng)
    model = Dispatcher().to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    # replay of past (state, teacher label) snapshots, kept on the GPU
    rep_r = torch.rand(512, ROBOTS, 6, device=DEV)
    rep_o = torch.rand(512, MAX_ORDERS, 5, device=DEV)
    rep_y = torch.randint(0, ROBOTS, (512, MAX_ORDERS), device=DEV)
    rep_n = 0

    def learn():
        idx = torch.randint(0, 512, (REPLAY_BATCH,), device=DEV)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(rep_r[idx], rep_o[idx])
        loss = F.cross_entropy(logits.float().transpose(1, 2).reshape(-1, ROBOTS),
                               rep_y[idx].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    plan_s = 0.0
    plans = 0
    snapshots = []

    def tick(timed):
        nonlocal plan_s, plans, rep_n
        fleet.arrive()
        r_np, o_np = fleet.tokens()
        n_orders = len(fleet.orders)
        nvtx.range_push("dispatch")
        r_t = torch.from_numpy(r_np).to(DEV)[None]
        o_t = torch.from_numpy(o_np).to(DEV)[None]
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            scores = model(r_t, o_t)[0].float()
        idle = torch.from_numpy(np.array([not b for b in fleet.busy])).to(DEV)
        scores = scores.masked_fill(~idle[:, None], float("-inf"))
        best_robot = scores[:, :max(n_orders, 1)].argmax(0).cpu().numpy()
        nvtx.range_pop()
        # store the teacher's label for this state, then one online learning step
        slot = rep_n % 512
        rep_r[slot] = r_t[0]
        rep_o[slot] = o_t[0]
        rep_y[slot] = torch.from_numpy(fleet.teacher(r_np, o_np)).to(DEV)
        rep_n += 1
        nvtx.range_push("learn")
        loss = learn()
        nvtx.range_pop()

        nvtx.range_push("route")
        t0 = time.perf_counter()
        reserved = set()
        for p in fleet.path:
            reserved.update(p[:40])
        taken, remaining = set(), []
        for j, order in enumerate(fleet.orders):
            i = int(best_robot[j]) if j < len(best_robot) else -1
            if i < 0 or fleet.busy[i] or i in taken:
                remaining.append(order)
                continue
            shelf, station, _ = order
            leg1 = astar(fleet.blocked, fleet.pos[i], shelf, reserved)
            leg2 = astar(fleet.blocked, shelf, station, reserved)
            fleet.path[i] = leg1[1:] + leg2[1:]
            reserved.update(fleet.path[i][:40])
            fleet.busy[i] = True
            taken.add(i)
            plans += 2 if timed else 0
        fleet.orders = remaining
        if timed:
            plan_s += time.perf_counter() - t0
        nvtx.range_pop()
        fleet.step_motion()
        return loss

    for _ in range(WARMUP):
        tick(False)
    torch.cuda.synchronize()

    t_loop = time.perf_counter()
    n = 0
    losses = []
    while n < TICKS:
        n += 1
        losses.append(tick(True).detach())
        if n % 50 == 0:
            print(f"tick {n:4d}  orders done {fleet.done}  open {len(fleet.orders)}  "
                  f"travel {fleet.travel}  bc loss {torch.stack(losses[-50:]).mean().item():.3f}")
        if n % 100 == 0:
            buf = io.BytesIO()
            torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, buf)
            snapshots.append(buf.getbuffer().nbytes)
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t_loop
    print(f"fleet: {fleet.done} orders delivered, {len(snapshots)} policy snapshots "
          f"({sum(snapshots) / 1e6:.1f} MB)")
    print(f"GROUND TRUTH: cpu-work: A* routing on the main thread {plan_s:.2f} s of the "
          f"{loop_s:.2f} s timed loop ({100 * plan_s / loop_s:.0f}%), {plans} plans; "
          f"{TICKS} timed ticks after {WARMUP} warm-up ticks")


if __name__ == "__main__":
    main()
