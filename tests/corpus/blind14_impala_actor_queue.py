"""Blind batch 14: an IMPALA-style learner fed by actor processes through a multiprocessing queue.

Two actor processes each run 32 copies of a NumPy environment (point robots navigating to goals
among circular obstacles, 32 range-finder rays, 4 physics sub-steps a step) with a NumPy copy of
the policy, and put 80-step trajectories on a shared `multiprocessing.Queue`. The learner, on the
GPU, takes 4 trajectories per update (10,240 transitions), computes the V-trace targets (the
reference implementation's reverse loop over time), the policy-gradient, baseline and entropy
losses of an MLP actor-critic, and steps RMSprop. Every 4 updates it sends the new weights to the
actors. The actors were started with the "spawn" method so that they never touch CUDA.

The loss is read every 10 updates. No NVTX. Three warm-up updates (they include the actors'
start-up), then 60.

Ground truth printed at the end: the learner's seconds blocked in `queue.get()` against the loop's
seconds, and the number of updates.
"""
import math
import multiprocessing as mp
import queue
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

NUM_ACTORS = 2
ENVS_PER_ACTOR = 32
UNROLL = 80
TRAJ_PER_BATCH = 4
OBS_DIM = 38
ACTIONS = 9
HIDDEN = 256
WARMUP, UPDATES = 3, 60
SEND_WEIGHTS_EVERY = 4


class ParticleNav:
    """Vectorised point robots in a 10 m x 10 m arena with 12 circular obstacles each."""

    RAYS, OBSTACLES, MAX_RANGE, DT, SUBSTEPS, HORIZON = 32, 12, 5.0, 0.05, 4, 200

    def __init__(self, n, rng):
        self.n, self.rng = n, rng
        self.pos = np.zeros((n, 2))
        self.vel = np.zeros((n, 2))
        self.goal = np.zeros((n, 2))
        self.obst = np.zeros((n, self.OBSTACLES, 3))
        self.t = np.zeros(n, dtype=np.int64)
        self.angles = np.linspace(0, 2 * np.pi, self.RAYS, endpoint=False)
        self.reset(np.ones(n, dtype=bool))

    def reset(self, mask):
        k = int(mask.sum())
        if k == 0:
            return
        self.pos[mask] = self.rng.uniform(0.5, 9.5, (k, 2))
        self.vel[mask] = 0.0
        self.goal[mask] = self.rng.uniform(0.5, 9.5, (k, 2))
        obst = np.empty((k, self.OBSTACLES, 3))
        obst[..., :2] = self.rng.uniform(0, 10, (k, self.OBSTACLES, 2))
        obst[..., 2] = self.rng.uniform(0.2, 0.8, (k, self.OBSTACLES))
        self.obst[mask] = obst
        self.t[mask] = 0

    def observe(self):
        heading = np.arctan2(self.vel[:, 1], self.vel[:, 0] + 1e-9)
        ang = heading[:, None] + self.angles[None, :]
        dirs = np.stack([np.cos(ang), np.sin(ang)], axis=-1)                     # (n, R, 2)
        oc = self.obst[:, None, :, :2] - self.pos[:, None, None, :]               # (n, 1, O, 2)
        proj = (oc * dirs[:, :, None, :]).sum(-1)                                # (n, R, O)
        perp2 = (oc ** 2).sum(-1) - proj ** 2
        r2 = self.obst[:, None, :, 2] ** 2
        hit = (proj > 0) & (perp2 < r2)
        dist = np.where(hit, proj - np.sqrt(np.maximum(r2 - perp2, 0.0)), self.MAX_RANGE)
        with np.errstate(divide="ignore", invalid="ignore"):
            tx = np.where(dirs[..., 0] > 0, (10 - self.pos[:, None, 0]) / dirs[..., 0],
                          -self.pos[:, None, 0] / dirs[..., 0])
            ty = np.where(dirs[..., 1] > 0, (10 - self.pos[:, None, 1]) / dirs[..., 1],
                          -self.pos[:, None, 1] / dirs[..., 1])
        walls = np.minimum(np.abs(tx), np.abs(ty))
        ranges = np.minimum(np.minimum(dist.min(-1), walls), self.MAX_RANGE) / self.MAX_RANGE
        return np.concatenate([self.pos / 10, self.vel, (self.goal - self.pos) / 10, ranges],
                              axis=1).astype(np.float32)

    def step(self, action):
        thrust = np.zeros((self.n, 2))
        moving = action < 8
        ang = action[moving] * (np.pi / 4)
        thrust[moving] = np.stack([np.cos(ang), np.sin(ang)], axis=1) * 2.0
        before = np.linalg.norm(self.goal - self.pos, axis=1)
        collided = np.zeros(self.n, dtype=bool)
        for _ in range(self.SUBSTEPS):
            self.vel = (self.vel + thrust * self.DT) * np.where(moving, 0.99, 0.85)[:, None]
            self.pos = np.clip(self.pos + self.vel * self.DT, 0.0, 10.0)
            d = self.pos[:, None, :] - self.obst[..., :2]
            dn = np.linalg.norm(d, axis=-1)
            inside = dn < self.obst[..., 2]
            if inside.any():
                push = np.where(inside[..., None], d / (dn[..., None] + 1e-9) *
                                (self.obst[..., 2] - dn)[..., None], 0.0).sum(1)
                self.pos += push
                hit = inside.any(1)
                self.vel[hit] *= -0.3
                collided |= hit
        after = np.linalg.norm(self.goal - self.pos, axis=1)
        reached = after < 0.3
        reward = (before - after) + 10.0 * reached - 1.0 * collided - 0.01
        self.t += 1
        done = reached | (self.t >= self.HORIZON)
        self.reset(done)
        return self.observe(), reward.astype(np.float32), done


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS_DIM, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU())
        self.pi = nn.Linear(HIDDEN, ACTIONS)
        self.v = nn.Linear(HIDDEN, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.pi(h), self.v(h).squeeze(-1)


def numpy_policy(params, obs):
    h = np.maximum(obs @ params["body.0.weight"].T + params["body.0.bias"], 0)
    h = np.maximum(h @ params["body.2.weight"].T + params["body.2.bias"], 0)
    return h @ params["pi.weight"].T + params["pi.bias"]


def actor_main(actor_id, traj_q, weights_q, stop):
    rng = np.random.default_rng(1000 + actor_id)
    env = ParticleNav(ENVS_PER_ACTOR, rng)
    params = weights_q.get()
    obs = env.observe()
    while not stop.is_set():
        try:
            while True:
                params = weights_q.get_nowait()
        except queue.Empty:
            pass
        o = np.empty((UNROLL + 1, ENVS_PER_ACTOR, OBS_DIM), np.float32)
        a = np.empty((UNROLL, ENVS_PER_ACTOR), np.int64)
        logits_b = np.empty((UNROLL, ENVS_PER_ACTOR, ACTIONS), np.float32)
        r = np.empty((UNROLL, ENVS_PER_ACTOR), np.float32)
        d = np.empty((UNROLL, ENVS_PER_ACTOR), bool)
        for t in range(UNROLL):
            o[t] = obs
            logits = numpy_policy(params, obs)
            gumbel = -np.log(-np.log(rng.uniform(1e-9, 1.0, logits.shape)))
            act = np.argmax(logits + gumbel, axis=1)
            obs, rew, done = env.step(act)
            a[t], logits_b[t], r[t], d[t] = act, logits, rew, done
        o[UNROLL] = obs
        traj_q.put({"obs": o, "actions": a, "behaviour_logits": logits_b, "rewards": r, "dones": d})


def vtrace(behaviour_logits, target_logits, actions, discounts, rewards, values, bootstrap):
    """V-trace targets (Espeholt et al. 2018), as in the reference implementations: a reverse loop."""
    with torch.no_grad():
        target_lp = F.log_softmax(target_logits, -1).gather(-1, actions[..., None]).squeeze(-1)
        behaviour_lp = F.log_softmax(behaviour_logits, -1).gather(-1, actions[..., None]).squeeze(-1)
        rhos = torch.exp(target_lp - behaviour_lp)
        clipped_rhos = rhos.clamp(max=1.0)
        cs = rhos.clamp(max=1.0)
        values_t_plus_1 = torch.cat([values[1:], bootstrap[None]], 0)
        deltas = clipped_rhos * (rewards + discounts * values_t_plus_1 - values)
        acc = torch.zeros_like(bootstrap)
        result = []
        for t in reversed(range(deltas.shape[0])):
            acc = deltas[t] + discounts[t] * cs[t] * acc
            result.append(acc)
        vs = torch.stack(result[::-1]) + values
        vs_t_plus_1 = torch.cat([vs[1:], bootstrap[None]], 0)
        pg_adv = clipped_rhos * (rewards + discounts * vs_t_plus_1 - values)
    return vs, pg_adv


def learner():
    dev = torch.device("cuda")
    torch.manual_seed(0)
    ctx = mp.get_context("spawn")
    traj_q = ctx.Queue(maxsize=16)
    stop = ctx.Event()
    weights_qs = [ctx.Queue() for _ in range(NUM_ACTORS)]
    model = ActorCritic().to(dev)
    opt = torch.optim.RMSprop(model.parameters(), lr=6e-4, alpha=0.99, eps=0.01)

    def publish_weights():
        params = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
        for q in weights_qs:
            q.put(params)

    actors = [ctx.Process(target=actor_main, args=(i, traj_q, weights_qs[i], stop), daemon=True)
              for i in range(NUM_ACTORS)]
    for p in actors:
        p.start()
    publish_weights()

    wait_s = 0.0
    loss_sum = torch.zeros((), device=dev)

    def update(step):
        nonlocal wait_s
        t0 = time.perf_counter()
        trajs = [traj_q.get() for _ in range(TRAJ_PER_BATCH)]
        wait_s += time.perf_counter() - t0
        batch = {k: torch.from_numpy(np.concatenate([tr[k] for tr in trajs], axis=1)).to(dev) for k in trajs[0]}
        T, Bsz = batch["actions"].shape
        logits, values = model(batch["obs"].view(-1, OBS_DIM))
        logits = logits.view(T + 1, Bsz, ACTIONS)
        values = values.view(T + 1, Bsz)
        discounts = (~batch["dones"]).float() * 0.99
        vs, pg_adv = vtrace(batch["behaviour_logits"], logits[:-1], batch["actions"], discounts,
                            batch["rewards"].clamp(-1, 1), values[:-1].detach(), values[-1].detach())
        logp = F.log_softmax(logits[:-1], -1)
        pg_loss = -(logp.gather(-1, batch["actions"][..., None]).squeeze(-1) * pg_adv).sum()
        baseline_loss = 0.5 * ((vs - values[:-1]) ** 2).sum()
        entropy_loss = (logp.exp() * logp).sum()
        loss = pg_loss + 0.5 * baseline_loss + 0.01 * entropy_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 40.0)
        opt.step()
        loss_sum.add_(loss.detach())
        if step % SEND_WEIGHTS_EVERY == 0:
            publish_weights()
        if step >= 0 and step % 10 == 9:
            print(f"update {step + 1}: mean loss {loss_sum.item() / 10:.2f}", flush=True)
            loss_sum.zero_()

    for i in range(WARMUP):
        update(-1)
    torch.cuda.synchronize()
    wait_s = 0.0
    loss_sum.zero_()
    t_loop = time.perf_counter()
    for step in range(UPDATES):
        update(step)
    torch.cuda.synchronize()
    loop = time.perf_counter() - t_loop

    stop.set()
    deadline = time.time() + 30
    while any(p.is_alive() for p in actors) and time.time() < deadline:
        try:
            while True:
                traj_q.get_nowait()
        except queue.Empty:
            pass
        for p in actors:
            p.join(timeout=0.05)
    for p in actors:
        if p.is_alive():
            p.terminate()
            p.join()
    print(f"ground truth: queue.get() {wait_s:.3f} s of {loop:.3f} s loop ({100 * wait_s / loop:.1f}%); "
          f"{UPDATES} updates of {TRAJ_PER_BATCH * ENVS_PER_ACTOR * UNROLL} transitions", flush=True)


if __name__ == "__main__":
    learner()
