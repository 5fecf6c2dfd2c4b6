"""Corpus (blind, batch 13): double DQN with prioritized experience replay on a Python sum tree.

Expected verdict: tests/corpus/BLIND13_EXPECTED.md.

A double-DQN agent (dueling MLP 48 -> 256 -> 256 -> value/advantage over 9 actions, Adam, Huber
loss weighted by importance-sampling weights, target network copied every 100 updates) learns a
vectorised NumPy navigation task: 8 point robots on a 2D field with drifting goals and obstacles,
observed through a fixed random projection of their state. The replay memory is the classic
proportional prioritized replay (alpha 0.6, beta annealed towards 1) as found in many RL code
bases: a binary sum tree over a capacity of 2^20 transitions (the usual 1M replay), stored in a
NumPy array and walked with recursive Python methods (`_propagate`, `_retrieve`), and a Python
list of transition tuples. Each iteration: 4 environment steps (the online network picks the 8
actions on the device, epsilon-greedy, the actions read back; 8 transitions added to the tree),
then one learning update on a batch of 512: 512 stratified `get` walks down the tree, the batch
stacked from the tuples and uploaded, the forward/backward/Adam step on the device, the new |TD
errors| read back and 512 `update` walks up the tree. No NVTX. The buffer is first filled with
6,000 random-action transitions, 5 warm-up iterations, then 300 iterations.

The last line printed gives the seconds spent in the replay's sampling and priority updates (the
sum tree), in the environment, and in the batch assembly and device work (action selection and the
learning update, including their uploads and read-backs), against the loop's total, and the
number of iterations.
"""
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = "cuda"
N_ENVS = 8
OBS_DIM = 48
N_ACTIONS = 9
CAPACITY = 1 << 20
BATCH = 512
GAMMA = 0.99
ENV_STEPS_PER_UPDATE = 4
PREFILL = 6000
WARMUP_ITERS = 5
ITERS = 300
TARGET_EVERY = 100


class SumTree:
    """A binary tree whose leaves hold priorities and whose inner nodes hold the sums below."""

    write = 0

    def __init__(self, capacity):
        self.capacity = capacity
        self.tree = np.zeros(2 * capacity - 1)
        self.data = [None] * capacity
        self.n_entries = 0

    def _propagate(self, idx, change):
        parent = (idx - 1) // 2
        self.tree[parent] += change
        if parent != 0:
            self._propagate(parent, change)

    def _retrieve(self, idx, s):
        left = 2 * idx + 1
        right = left + 1
        if left >= len(self.tree):
            return idx
        if s <= self.tree[left]:
            return self._retrieve(left, s)
        return self._retrieve(right, s - self.tree[left])

    def total(self):
        return self.tree[0]

    def add(self, p, data):
        idx = self.write + self.capacity - 1
        self.data[self.write] = data
        self.update(idx, p)
        self.write += 1
        if self.write >= self.capacity:
            self.write = 0
        if self.n_entries < self.capacity:
            self.n_entries += 1

    def update(self, idx, p):
        change = p - self.tree[idx]
        self.tree[idx] = p
        self._propagate(idx, change)

    def get(self, s):
        idx = self._retrieve(0, s)
        data_idx = idx - self.capacity + 1
        return idx, self.tree[idx], self.data[data_idx]


class PrioritizedReplay:
    e = 0.01
    a = 0.6
    beta = 0.4
    beta_increment = 0.001

    def __init__(self, capacity, rng):
        self.tree = SumTree(capacity)
        self.rng = rng
        self.max_p = 1.0

    def add(self, transition):
        self.tree.add(self.max_p, transition)

    def sample(self, n):
        batch, idxs, priorities = [], [], []
        segment = self.tree.total() / n
        self.beta = min(1.0, self.beta + self.beta_increment)
        for i in range(n):
            s = self.rng.uniform(segment * i, segment * (i + 1))
            idx, p, data = self.tree.get(s)
            if data is None:                       # an empty leaf at the very end: resample
                idx, p, data = self.tree.get(self.rng.uniform(0, self.tree.total()))
            priorities.append(p)
            batch.append(data)
            idxs.append(idx)
        probs = np.array(priorities) / self.tree.total()
        weights = np.power(self.tree.n_entries * probs, -self.beta)
        weights /= weights.max()
        return batch, idxs, weights

    def update(self, idx, error):
        p = (np.abs(error) + self.e) ** self.a
        self.max_p = max(self.max_p, p)
        self.tree.update(idx, p)


class NavigationEnv:
    """8 point robots chasing drifting goals around circular obstacles (vectorised NumPy)."""

    def __init__(self, n, rng):
        self.n = n
        self.rng = rng
        self.projection = rng.normal(size=(12, OBS_DIM)) / np.sqrt(12)
        self.obstacles = rng.uniform(-4, 4, size=(6, 2))
        self.moves = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1],
                               [0.7, 0.7], [0.7, -0.7], [-0.7, 0.7], [-0.7, -0.7]]) * 0.25
        self.reset_all()

    def reset_all(self):
        self.pos = self.rng.uniform(-5, 5, size=(self.n, 2))
        self.vel = np.zeros((self.n, 2))
        self.goal = self.rng.uniform(-5, 5, size=(self.n, 2))
        self.t = np.zeros(self.n, dtype=int)

    def observe(self):
        rel = self.goal - self.pos
        d_obs = self.pos[:, None, :] - self.obstacles[None]
        nearest = np.argmin(np.linalg.norm(d_obs, axis=-1), axis=1)
        near = d_obs[np.arange(self.n), nearest]
        state = np.concatenate([self.pos / 5, self.vel, rel / 5, near / 5, self.goal / 5,
                                np.stack([np.linalg.norm(rel, axis=1) / 7, self.t / 200], 1)], 1)
        return np.tanh(state @ self.projection).astype(np.float32)

    def step(self, actions):
        before = np.linalg.norm(self.goal - self.pos, axis=1)
        self.vel = 0.8 * self.vel + self.moves[actions]
        self.pos = np.clip(self.pos + self.vel, -6, 6)
        self.goal += self.rng.normal(scale=0.05, size=self.goal.shape)
        d_obs = np.linalg.norm(self.pos[:, None, :] - self.obstacles[None], axis=-1)
        hit = (d_obs < 0.6).any(axis=1)
        after = np.linalg.norm(self.goal - self.pos, axis=1)
        reached = after < 0.4
        reward = (before - after) - 1.0 * hit + 5.0 * reached - 0.01
        self.t += 1
        done = reached | hit | (self.t >= 200)
        if done.any():
            k = int(done.sum())
            self.pos[done] = self.rng.uniform(-5, 5, size=(k, 2))
            self.vel[done] = 0
            self.goal[done] = self.rng.uniform(-5, 5, size=(k, 2))
            self.t[done] = 0
        return reward.astype(np.float32), done


class DuelingQ(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS_DIM, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU())
        self.value = nn.Linear(256, 1)
        self.adv = nn.Linear(256, N_ACTIONS)

    def forward(self, x):
        h = self.body(x)
        a = self.adv(h)
        return self.value(h) + a - a.mean(1, keepdim=True)


def main():
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    env = NavigationEnv(N_ENVS, rng)
    memory = PrioritizedReplay(CAPACITY, rng)
    online = DuelingQ().to(DEVICE)
    target = DuelingQ().to(DEVICE)
    target.load_state_dict(online.state_dict())
    opt = torch.optim.Adam(online.parameters(), lr=2.5e-4)

    obs = env.observe()
    t0 = time.perf_counter()
    while memory.tree.n_entries < PREFILL:
        actions = rng.integers(0, N_ACTIONS, size=N_ENVS)
        reward, done = env.step(actions)
        nxt = env.observe()
        for i in range(N_ENVS):
            memory.add((obs[i], int(actions[i]), float(reward[i]), nxt[i], bool(done[i])))
        obs = nxt
    print(f"prefilled {memory.tree.n_entries} transitions in {time.perf_counter() - t0:.1f} s",
          flush=True)

    tree_s = env_s = device_s = 0.0
    updates = 0
    episode_return = np.zeros(N_ENVS)
    finished = []
    loop_start = None
    for it in range(WARMUP_ITERS + ITERS):
        if it == WARMUP_ITERS:
            torch.cuda.synchronize()
            loop_start = time.perf_counter()
            tree_s = env_s = device_s = 0.0
        epsilon = max(0.05, 1.0 - it / 150)
        for _ in range(ENV_STEPS_PER_UPDATE):
            t = time.perf_counter()
            with torch.no_grad():
                q = online(torch.from_numpy(obs).to(DEVICE))
                greedy = q.argmax(1).cpu().numpy()
            t1 = time.perf_counter()
            explore = rng.random(N_ENVS) < epsilon
            actions = np.where(explore, rng.integers(0, N_ACTIONS, size=N_ENVS), greedy)
            reward, done = env.step(actions)
            nxt = env.observe()
            episode_return += reward
            for i in np.flatnonzero(done):
                finished.append(episode_return[i])
                episode_return[i] = 0
            t2 = time.perf_counter()
            for i in range(N_ENVS):
                memory.add((obs[i], int(actions[i]), float(reward[i]), nxt[i], bool(done[i])))
            obs = nxt
            t3 = time.perf_counter()
            device_s += t1 - t
            env_s += t2 - t1
            tree_s += t3 - t2

        t = time.perf_counter()
        batch, idxs, weights = memory.sample(BATCH)
        t1 = time.perf_counter()
        o, a, r, o2, d = zip(*batch)
        o = torch.from_numpy(np.stack(o)).to(DEVICE)
        a = torch.tensor(a, device=DEVICE)
        r = torch.tensor(r, device=DEVICE)
        o2 = torch.from_numpy(np.stack(o2)).to(DEVICE)
        d = torch.tensor(d, dtype=torch.float32, device=DEVICE)
        w = torch.from_numpy(weights.astype(np.float32)).to(DEVICE)
        with torch.no_grad():
            best = online(o2).argmax(1, keepdim=True)
            q_next = target(o2).gather(1, best).squeeze(1)
            y = r + GAMMA * (1 - d) * q_next
        q = online(o).gather(1, a[:, None]).squeeze(1)
        td = y - q
        loss = (w * F.smooth_l1_loss(q, y, reduction="none")).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(online.parameters(), 10.0)
        opt.step()
        errors = td.detach().abs().cpu().numpy()
        t2 = time.perf_counter()
        for idx, err in zip(idxs, errors):
            memory.update(idx, err)
        t3 = time.perf_counter()
        tree_s += (t1 - t) + (t3 - t2)
        device_s += t2 - t1
        updates += 1
        if updates % TARGET_EVERY == 0:
            target.load_state_dict(online.state_dict())
        if it % 50 == 0:
            recent = np.mean(finished[-20:]) if finished else float("nan")
            print(f"iteration {it}: loss {loss.item():.4f}, eps {epsilon:.2f}, "
                  f"return (last 20 episodes) {recent:.2f}", flush=True)
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - loop_start
    print(f"replay: sum tree sample/update/add {tree_s:.2f} s, environment {env_s:.2f} s, batch "
          f"assembly and device work with read-backs {device_s:.2f} s, of loop {loop_s:.2f} s; "
          f"{ITERS} iterations ({ITERS * ENV_STEPS_PER_UPDATE} environment steps, {ITERS} updates)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
