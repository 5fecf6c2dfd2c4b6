"""Corpus (blind, batch 8): an AlphaZero-style arena match whose tree search is plain Python.

Program: a candidate network plays a reference network at 9x9 gomoku (five in a row) to decide
whether it replaces it, as in an AlphaZero training pipeline's evaluation stage. Each move runs
a Monte Carlo tree search of 256 simulations in plain Python (Node objects with a dict of
children, PUCT selection by a loop over up to 81 children, virtual loss, backup, NumPy input
planes), with the leaves evaluated 32 at a time by the side to move's policy-value network (a
6-block residual CNN, 64 channels, fp32, inference mode): ~9 forward passes a move, each ~60
tiny kernels plus a .cpu() of the priors and values. The search's own Python costs ~45 ms a
move on a slower 2-core machine (timed there with a stand-in for the network; ~30-40 ms
expected on the device), the network calls ~8-15 ms of launches and waits with ~1-3 ms of GPU
work. Games restart when one ends. No NVTX. 60 moves (steps); one line printed at the end
(time in the tree search outside the network calls, time in the network calls, measured
in-program, against the loop's total).

Expected, written before it was recorded (2026-11-26): cpu-work, 65-88% of the steady-state
step time, the main thread running Python in the search (select_child's loop over the
children, expand, the board's five-in-a-row check) while the GPU idles; 60 steps (within 2).
Misses: launch-bound (the network's small kernels hold ~12-30% of the step), sync-stall (each
.cpu() waits for a fraction of a ms of kernels; the GPU then idles because the CPU goes back to
the tree, not because it is refilling the queue), input-bound (nothing is waited for: the
search is computation), gpu-bound. Per-move times vary (~10-80 ms) with how much of the tree
the previous move left behind.
"""
import math
import random
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

SIZE, WIN, SIMULATIONS, LEAF_BATCH, STEPS = 9, 5, 256, 32, 60
C_PUCT = 1.5


class Board:
    __slots__ = ("cells", "to_move", "last", "moves")

    def __init__(self):
        self.cells = [0] * (SIZE * SIZE)
        self.to_move, self.last, self.moves = 1, -1, 0

    def copy(self):
        b = Board.__new__(Board)
        b.cells, b.to_move, b.last, b.moves = self.cells[:], self.to_move, self.last, self.moves
        return b

    def play(self, action):
        self.cells[action] = self.to_move
        self.to_move, self.last, self.moves = -self.to_move, action, self.moves + 1

    def legal(self):
        return [i for i, c in enumerate(self.cells) if c == 0]

    def winner(self):
        """+1/-1 if the last move made five in a row, 0 for a draw, None while the game goes on."""
        if self.last < 0:
            return None
        player, r0, c0 = self.cells[self.last], divmod(self.last, SIZE)[0], self.last % SIZE
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            run = 1
            for sign in (1, -1):
                r, c = r0 + sign * dr, c0 + sign * dc
                while 0 <= r < SIZE and 0 <= c < SIZE and self.cells[r * SIZE + c] == player:
                    run += 1
                    r, c = r + sign * dr, c + sign * dc
            if run >= WIN:
                return player
        return 0 if self.moves == SIZE * SIZE else None

    def planes(self):
        cells = np.asarray(self.cells, dtype=np.float32).reshape(SIZE, SIZE) * self.to_move
        return np.stack([cells == 1, cells == -1, np.ones((SIZE, SIZE), bool)]).astype(np.float32)


class Node:
    __slots__ = ("prior", "visits", "value_sum", "virtual", "children")

    def __init__(self, prior):
        self.prior, self.visits, self.value_sum, self.virtual, self.children = prior, 0, 0.0, 0, {}


def select_child(node):
    sqrt_total = math.sqrt(node.visits + node.virtual + 1)
    best, best_score = None, -1e9
    for action, child in node.children.items():
        n = child.visits + child.virtual
        q = (child.value_sum - child.virtual) / n if n else 0.0  # a virtual visit counts as a loss
        score = q + C_PUCT * child.prior * sqrt_total / (1 + n)
        if score > best_score:
            best, best_score = (action, child), score
    return best


def expand(node, board, priors):
    legal = board.legal()
    total = sum(priors[a] for a in legal) or 1.0
    for a in legal:
        node.children[a] = Node(priors[a] / total)


class Block(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(ch, ch, 3, padding=1, bias=False), nn.BatchNorm2d(ch)
        self.c2, self.b2 = nn.Conv2d(ch, ch, 3, padding=1, bias=False), nn.BatchNorm2d(ch)

    def forward(self, x):
        return F.relu(x + self.b2(self.c2(F.relu(self.b1(self.c1(x))))))


class PolicyValueNet(nn.Module):
    def __init__(self, ch=64, blocks=6):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, ch, 3, padding=1, bias=False), nn.BatchNorm2d(ch),
                                  nn.ReLU())
        self.tower = nn.Sequential(*[Block(ch) for _ in range(blocks)])
        self.policy = nn.Sequential(nn.Conv2d(ch, 2, 1), nn.ReLU(), nn.Flatten(),
                                    nn.Linear(2 * SIZE * SIZE, SIZE * SIZE))
        self.value = nn.Sequential(nn.Conv2d(ch, 1, 1), nn.ReLU(), nn.Flatten(),
                                   nn.Linear(SIZE * SIZE, 64), nn.ReLU(), nn.Linear(64, 1),
                                   nn.Tanh())

    def forward(self, x):
        h = self.tower(self.stem(x))
        return self.policy(h), self.value(h).squeeze(1)


class Evaluator:
    def __init__(self, net):
        self.net, self.seconds, self.calls = net, 0.0, 0

    @torch.inference_mode()
    def __call__(self, boards):
        planes = np.stack([b.planes() for b in boards])
        t = time.perf_counter()
        x = torch.from_numpy(planes).cuda()
        logits, value = self.net(x)
        priors = torch.softmax(logits, dim=1).cpu().numpy()
        values = value.cpu().numpy()
        self.seconds += time.perf_counter() - t
        self.calls += 1
        return priors.tolist(), values.tolist()


def search(root, board, evaluate):
    if not root.children:
        priors, _ = evaluate([board])
        expand(root, board, priors[0])
    done = 0
    while done < SIMULATIONS:
        leaves = []
        for _ in range(min(LEAF_BATCH, SIMULATIONS - done)):
            node, b, path = root, board.copy(), [root]
            while node.children:
                action, node = select_child(node)
                b.play(action)
                path.append(node)
            for n in path:
                n.virtual += 1
            outcome = b.winner()
            if outcome is not None:
                # The player who just moved made five (or the board is full): a loss for the
                # side to move at the leaf.
                backup(path, -1.0 if outcome else 0.0)
            else:
                leaves.append((path, b))
            done += 1
        if leaves:
            priors, values = evaluate([b for _, b in leaves])
            for (path, b), p, v in zip(leaves, priors, values):
                if not path[-1].children:
                    expand(path[-1], b, p)
                backup(path, v)


def backup(path, value):
    # value is from the point of view of the side to move at the leaf; flip at every level.
    for node in reversed(path):
        node.virtual -= 1
        node.visits += 1
        node.value_sum -= value  # a node's value is from the view of the player who moved into it
        value = -value


def main():
    torch.manual_seed(0)
    random.seed(0)
    nets = [PolicyValueNet().cuda().eval(), PolicyValueNet().cuda().eval()]
    evaluators = [Evaluator(n) for n in nets]
    evaluators[0]([Board()])  # warm up cuDNN and the allocator
    evaluators[1]([Board()])
    for e in evaluators:
        e.seconds, e.calls = 0.0, 0

    board, roots = Board(), [Node(1.0), Node(1.0)]
    games, results = 0, []
    start = time.perf_counter()
    for step in range(STEPS):
        side = board.moves % 2
        root = roots[side]
        search(root, board, evaluators[side])
        visits = {a: c.visits for a, c in root.children.items()}
        if board.moves < 4:  # a little opening variety
            action = random.choices(list(visits), weights=list(visits.values()))[0]
        else:
            action = max(visits, key=visits.get)
        board.play(action)
        # Keep the subtree under the chosen move for both players' trees.
        roots = [r.children.get(action, Node(1.0)) if r.children else Node(1.0) for r in roots]
        outcome = board.winner()
        if outcome is not None:
            results.append(outcome)
            games += 1
            board, roots = Board(), [Node(1.0), Node(1.0)]
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    in_net = sum(e.seconds for e in evaluators)
    calls = sum(e.calls for e in evaluators)
    print(f"steps {STEPS} (moves), games finished {games}; tree search {total - in_net:.2f} s, "
          f"network {in_net:.2f} s ({calls} calls), of loop {total:.2f} s")


if __name__ == "__main__":
    main()
