"""Othello self-play with a transformer policy/value network, learning from its own finished games.

GAMES games are played side by side: each ply the network evaluates every live position in one
batch on the GPU, and the game engine (a single-board NumPy engine reused from the rules tests)
generates each board's legal moves, samples a move from the masked policy and flips the captured
discs. Finished games go into a replay buffer with their outcome; every TRAIN_EVERY plies the
network takes one gradient step on a batch drawn from the buffer. A round ends when every game has
ended; the win rate of the first player and the mean disc margin are logged per round.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = "cuda"
GAMES = 192
ROUNDS = 5
WARMUP_PLIES = 8
TRAIN_EVERY = 2
TRAIN_BATCH = 4096
BUFFER = 200_000
D_MODEL = 256
LAYERS = 4
TEMPERATURE = 1.0

DIRS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))


def shift(b, dy, dx):
    out = np.zeros_like(b)
    ys, yd = slice(max(-dy, 0), 8 - max(dy, 0)), slice(max(dy, 0), 8 - max(-dy, 0))
    xs, xd = slice(max(-dx, 0), 8 - max(dx, 0)), slice(max(dx, 0), 8 - max(-dx, 0))
    out[yd, xd] = b[ys, xs]
    return out


def legal_moves(own, opp):
    empty = ~(own | opp)
    moves = np.zeros_like(own)
    for dy, dx in DIRS:
        run = shift(own, dy, dx) & opp
        for _ in range(5):
            run |= shift(run, dy, dx) & opp
        moves |= shift(run, dy, dx) & empty
    return moves


def apply_move(own, opp, y, x):
    own[y, x] = True
    for dy, dx in DIRS:
        cy, cx, path = y + dy, x + dx, []
        while 0 <= cy < 8 and 0 <= cx < 8 and opp[cy, cx]:
            path.append((cy, cx))
            cy += dy
            cx += dx
        if path and 0 <= cy < 8 and 0 <= cx < 8 and own[cy, cx]:
            for py, px in path:
                own[py, px] = True
                opp[py, px] = False


class Game:
    def __init__(self):
        self.b = np.zeros((2, 8, 8), dtype=bool)  # b[0]: player to move's discs
        self.b[0, 3, 4] = self.b[0, 4, 3] = True
        self.b[1, 3, 3] = self.b[1, 4, 4] = True
        self.to_move = 0
        self.passes = 0
        self.done = False
        self.history = []


class PolicyValueNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(3, D_MODEL)
        self.pos = nn.Parameter(torch.randn(64, D_MODEL) * 0.02)
        layer = nn.TransformerEncoderLayer(D_MODEL, 8, 4 * D_MODEL, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.policy = nn.Linear(D_MODEL, 1)
        self.value = nn.Sequential(nn.Linear(D_MODEL, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, cells):  # cells: (B, 64) in {0 empty, 1 own, 2 opponent}
        h = self.encoder(self.embed(cells) + self.pos)
        return self.policy(h).squeeze(-1), torch.tanh(self.value(h.mean(1))).squeeze(-1)


def encode(games):
    b = np.stack([g.b for g in games]).reshape(len(games), 2, 64)
    return (b[:, 0] * 1 + b[:, 1] * 2).astype(np.int64)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    net = PolicyValueNet().to(DEVICE)
    opt = torch.optim.AdamW(net.parameters(), lr=2e-4, weight_decay=1e-4)
    buf_cells = np.zeros((BUFFER, 64), dtype=np.int64)
    buf_move = np.zeros(BUFFER, dtype=np.int64)
    buf_value = np.zeros(BUFFER, dtype=np.float32)
    buf_n = 0

    engine_s = 0.0
    plies = 0
    t_loop = None
    t_start = time.perf_counter()
    for rnd in range(ROUNDS):
        games = [Game() for _ in range(GAMES)]
        margins = []
        while True:
            live = [g for g in games if not g.done]
            if not live:
                break
            if plies == WARMUP_PLIES:
                torch.cuda.synchronize()
                t_loop = time.perf_counter()
                engine_s = 0.0
            cells = encode(live)
            with torch.no_grad(), torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                logits, _ = net(torch.from_numpy(cells).to(DEVICE))
                probs = F.softmax(logits.float() / TEMPERATURE, -1).cpu().numpy()

            t0 = time.perf_counter()
            for g, p, c in zip(live, probs, cells):
                own, opp = g.b[0], g.b[1]
                moves = legal_moves(own, opp)
                if not moves.any():
                    g.passes += 1
                    if g.passes == 2 or not legal_moves(opp, own).any():
                        g.done = True
                    g.b = g.b[::-1].copy()
                    g.to_move ^= 1
                    continue
                g.passes = 0
                w = p * moves.reshape(-1)
                w = w / w.sum() if w.sum() > 0 else moves.reshape(-1) / moves.sum()
                m = int(rng.choice(64, p=w))
                g.history.append((c, m, g.to_move))
                apply_move(own, opp, m // 8, m % 8)
                g.b = g.b[::-1].copy()
                g.to_move ^= 1
            for g in live:
                if g.done:
                    discs = g.b[0].sum() - g.b[1].sum()
                    margin0 = discs if g.to_move == 0 else -discs
                    margins.append(margin0)
                    for c, m, who in g.history:
                        i = buf_n % BUFFER
                        buf_cells[i], buf_move[i] = c, m
                        buf_value[i] = np.sign(margin0) * (1 if who == 0 else -1)
                        buf_n += 1
                    g.history = []
            if t_loop is not None:
                engine_s += time.perf_counter() - t0
            plies += 1

            if plies % TRAIN_EVERY == 0 and buf_n >= TRAIN_BATCH:
                pick = rng.integers(0, min(buf_n, BUFFER), TRAIN_BATCH)
                x = torch.from_numpy(buf_cells[pick]).to(DEVICE)
                y_move = torch.from_numpy(buf_move[pick]).to(DEVICE)
                y_val = torch.from_numpy(buf_value[pick]).to(DEVICE)
                with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                    pl, v = net(x)
                loss = F.cross_entropy(pl.float(), y_move) + F.mse_loss(v.float(), y_val)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
        m = np.asarray(margins)
        print(f"round {rnd}: {plies} plies so far, first player wins {np.mean(m > 0):.2f}, "
              f"mean margin {m.mean():+.1f}, buffer {min(buf_n, BUFFER)}")

    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t_loop
    print(f"total {time.perf_counter() - t_start:.1f} s")
    print(f"GROUND TRUTH: per-board NumPy move generation, flipping and buffer bookkeeping {engine_s:.2f} s of {loop_s:.2f} s "
          f"timed loop ({100 * engine_s / loop_s:.0f}%), {plies - WARMUP_PLIES} plies")


if __name__ == "__main__":
    main()
