"""Adaptive traffic-signal control with PPO.

Each environment is a 4x4 grid of signalised intersections simulated as queues in NumPy: per
intersection the green approaches discharge at the saturation flow, part of the discharge turns
into the downstream intersection's queue, vehicles arrive at the boundary as Poisson streams whose
rate follows a rush-hour profile, and a yellow phase blocks a switch for two ticks. Twenty-four
environments are stepped one after another (a synchronous vector env, as gym's SyncVectorEnv
does). The policy is a small MLP over the whole grid's observation that picks keep/switch per
intersection; PPO updates on the GPU after every 64-step rollout.
"""
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = "cuda"
ROWS, COLS = 4, 4
N_ENVS = 24
ROLLOUT = 64
UPDATES = 60
PPO_EPOCHS = 4
MINIBATCHES = 4
EPISODE_TICKS = 720
LOG_EVERY = 5
EVAL_EVERY = 20
EVAL_TICKS = 240
HIDDEN = 512
SAT_FLOW = 1.8
MIN_GREEN = 5
YELLOW = 2
TURN_IN = 0.7


class TrafficGridEnv:
    """Queues on the four approaches (N, E, S, W) of every intersection of a ROWS x COLS grid."""

    def __init__(self, seed):
        self.n = ROWS * COLS
        self.rng = np.random.default_rng(seed)
        # downstream[i][a]: the intersection that receives what approach a of i discharges
        self.downstream = []
        for r in range(ROWS):
            for c in range(COLS):
                nb = [(r + 1, c), (r, c - 1), (r - 1, c), (r, c + 1)]  # flow direction per approach
                self.downstream.append([rr * COLS + cc if 0 <= rr < ROWS and 0 <= cc < COLS else -1
                                        for rr, cc in nb])
        self.boundary = np.zeros((self.n, 4), dtype=bool)
        for i in range(self.n):
            r, c = divmod(i, COLS)
            self.boundary[i] = [r == 0, c == COLS - 1, r == ROWS - 1, c == 0]
        self.base_rate = self.rng.uniform(0.15, 0.45, size=(self.n, 4)) * self.boundary
        self.reset()

    def reset(self):
        self.t = 0
        self.q = self.rng.uniform(0, 4, size=(self.n, 4)).astype(np.float64)
        self.phase = self.rng.integers(0, 2, size=self.n)
        self.phase_time = np.zeros(self.n)
        self.yellow = np.zeros(self.n, dtype=np.int64)
        self.wait = np.zeros((self.n, 4))
        self.ep_return = 0.0
        return self.observe()

    def observe(self):
        phase1h = np.eye(2)[self.phase]
        obs = np.concatenate([
            np.log1p(self.q),
            np.log1p(self.wait) / 4.0,
            phase1h,
            np.minimum(self.phase_time, 30)[:, None] / 30.0,
            (self.yellow > 0)[:, None].astype(np.float64),
            np.full((self.n, 1), np.sin(2 * np.pi * self.t / EPISODE_TICKS)),
        ], axis=1)
        return obs.astype(np.float32).ravel()

    def step(self, action):
        inflow = np.zeros((self.n, 4))
        for i in range(self.n):
            if self.yellow[i] > 0:
                self.yellow[i] -= 1
                if self.yellow[i] == 0:
                    self.phase[i] ^= 1
                    self.phase_time[i] = 0
                continue
            if action[i] == 1 and self.phase_time[i] >= MIN_GREEN:
                self.yellow[i] = YELLOW
                continue
            self.phase_time[i] += 1
            green = [0, 2] if self.phase[i] == 0 else [1, 3]
            served = np.minimum(self.q[i, green], SAT_FLOW * self.rng.uniform(0.85, 1.0, 2))
            self.q[i, green] -= served
            for a, s in zip(green, served):
                j = self.downstream[i][a]
                if j >= 0:
                    inflow[j, a] += TURN_IN * s
                    side = (a + 1) % 4
                    inflow[j, side] += 0.5 * (1 - TURN_IN) * s
        rush = 1.0 + 0.8 * np.exp(-((self.t - EPISODE_TICKS * 0.4) / (EPISODE_TICKS * 0.12)) ** 2)
        arrivals = self.rng.poisson(self.base_rate * rush)
        self.q += inflow + arrivals
        self.q = np.minimum(self.q, 60.0)  # spill-back cap
        stopped = self.q > 0.5
        self.wait = np.where(stopped, self.wait + 1, 0.0)
        delay = float(self.q.sum())
        reward = -delay / (self.n * 10.0) - 0.01 * float((self.wait > 60).sum())
        self.ep_return += reward
        self.t += 1
        done = self.t >= EPISODE_TICKS
        info = {"return": self.ep_return} if done else {}
        obs = self.reset() if done else self.observe()
        return obs, reward, done, info


class SyncVectorEnv:
    def __init__(self, n, seed):
        self.envs = [TrafficGridEnv(seed + k) for k in range(n)]

    def reset(self):
        return np.stack([e.reset() for e in self.envs])

    def step(self, actions):
        out = [e.step(a) for e, a in zip(self.envs, actions)]
        obs = np.stack([o[0] for o in out])
        rew = np.array([o[1] for o in out], dtype=np.float32)
        done = np.array([o[2] for o in out], dtype=np.float32)
        infos = [o[3] for o in out]
        return obs, rew, done, infos


class Policy(nn.Module):
    def __init__(self, obs_dim, n_lights):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, HIDDEN), nn.Tanh(),
                                  nn.Linear(HIDDEN, HIDDEN), nn.Tanh())
        self.pi = nn.Linear(HIDDEN, n_lights)
        self.v = nn.Linear(HIDDEN, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.pi(h), self.v(h).squeeze(-1)


def main():
    t_start = time.perf_counter()
    torch.manual_seed(3)
    envs = SyncVectorEnv(N_ENVS, seed=100)
    obs_np = envs.reset()
    obs_dim = obs_np.shape[1]
    n_lights = ROWS * COLS
    policy = Policy(obs_dim, n_lights).to(DEVICE)
    opt = torch.optim.Adam(policy.parameters(), lr=3e-4, eps=1e-5)
    gamma, lam, clip = 0.99, 0.95, 0.2

    buf_obs = torch.zeros(ROLLOUT, N_ENVS, obs_dim, device=DEVICE)
    buf_act = torch.zeros(ROLLOUT, N_ENVS, n_lights, device=DEVICE)
    buf_logp = torch.zeros(ROLLOUT, N_ENVS, device=DEVICE)
    buf_val = torch.zeros(ROLLOUT + 1, N_ENVS, device=DEVICE)
    buf_rew = torch.zeros(ROLLOUT, N_ENVS, device=DEVICE)
    buf_done = torch.zeros(ROLLOUT, N_ENVS, device=DEVICE)
    episode_returns = []
    env_s = 0.0
    ticks = 0

    torch.cuda.synchronize()
    loop_t0 = time.perf_counter()
    for update in range(1, UPDATES + 1):
        frac = 1.0 - (update - 1) / UPDATES
        for g in opt.param_groups:
            g["lr"] = 3e-4 * frac
        obs = torch.as_tensor(obs_np, device=DEVICE)
        for t in range(ROLLOUT):
            with torch.no_grad():
                logits, value = policy(obs)
                dist = torch.distributions.Bernoulli(logits=logits)
                action = dist.sample()
                buf_logp[t] = dist.log_prob(action).sum(-1)
            buf_obs[t] = obs
            buf_act[t] = action
            buf_val[t] = value
            act_np = action.to(torch.int64).cpu().numpy()
            t0 = time.perf_counter()
            obs_np, rew, done, infos = envs.step(act_np)
            env_s += time.perf_counter() - t0
            ticks += N_ENVS
            for info in infos:
                if "return" in info:
                    episode_returns.append(info["return"])
            buf_rew[t] = torch.as_tensor(rew, device=DEVICE)
            buf_done[t] = torch.as_tensor(done, device=DEVICE)
            obs = torch.as_tensor(obs_np, device=DEVICE)
        with torch.no_grad():
            buf_val[ROLLOUT] = policy(obs)[1]
            adv = torch.zeros(ROLLOUT, N_ENVS, device=DEVICE)
            last = torch.zeros(N_ENVS, device=DEVICE)
            for t in reversed(range(ROLLOUT)):
                nonterm = 1.0 - buf_done[t]
                delta = buf_rew[t] + gamma * buf_val[t + 1] * nonterm - buf_val[t]
                last = delta + gamma * lam * nonterm * last
                adv[t] = last
            ret = adv + buf_val[:ROLLOUT]
        b_obs = buf_obs.reshape(-1, obs_dim)
        b_act = buf_act.reshape(-1, n_lights)
        b_logp, b_adv, b_ret = buf_logp.reshape(-1), adv.reshape(-1), ret.reshape(-1)
        n = b_obs.shape[0]
        mb = n // MINIBATCHES
        for _ in range(PPO_EPOCHS):
            perm = torch.randperm(n, device=DEVICE)
            for k in range(MINIBATCHES):
                idx = perm[k * mb:(k + 1) * mb]
                logits, v = policy(b_obs[idx])
                dist = torch.distributions.Bernoulli(logits=logits)
                logp = dist.log_prob(b_act[idx]).sum(-1)
                a = b_adv[idx]
                a = (a - a.mean()) / (a.std() + 1e-8)
                ratio = torch.exp(logp - b_logp[idx])
                pg = -torch.min(ratio * a, ratio.clamp(1 - clip, 1 + clip) * a).mean()
                vloss = F.mse_loss(v, b_ret[idx])
                ent = dist.entropy().sum(-1).mean()
                loss = pg + 0.5 * vloss - 0.01 * ent
                opt.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
                opt.step()
        if update % LOG_EVERY == 0:
            recent = episode_returns[-N_ENVS:]
            mean_ret = float(np.mean(recent)) if recent else float("nan")
            print(f"update {update}: loss {loss.item():.4f} value {vloss.item():.4f} "
                  f"episodes {len(episode_returns)} mean return {mean_ret:.2f}", flush=True)
        if update % EVAL_EVERY == 0:
            eval_env = TrafficGridEnv(seed=999)
            o = eval_env.reset()
            total = 0.0
            t0 = time.perf_counter()
            for _ in range(EVAL_TICKS):
                with torch.no_grad():
                    lg, _ = policy(torch.as_tensor(o, device=DEVICE)[None])
                a = (lg[0] > 0).to(torch.int64).cpu().numpy()
                o, r, d, _ = eval_env.step(a)
                total += r
            env_s += time.perf_counter() - t0
            print(f"  eval update {update}: greedy return over {EVAL_TICKS} ticks {total:.2f}",
                  flush=True)
    torch.cuda.synchronize()
    loop = time.perf_counter() - loop_t0

    os.makedirs("/tmp/blind18_traffic", exist_ok=True)
    torch.save(policy.state_dict(), "/tmp/blind18_traffic/ppo_signals.pt")
    print(f"done: {UPDATES} updates, {ticks} env ticks, {len(episode_returns)} episodes, "
          f"total {time.perf_counter() - t_start:.1f} s")
    print(f"GROUND TRUTH: seconds in env.step (NumPy queue simulation) {env_s:.2f} of loop "
          f"{loop:.2f} ({100 * env_s / loop:.1f}%)")


if __name__ == "__main__":
    main()
