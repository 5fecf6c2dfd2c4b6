"""PPO for supervisory HVAC control of a campus of 64 office buildings.

The environment is a grey-box thermal model written in numpy: every building has 10 zones
(RC network with inter-zone conduction, envelope losses, solar and occupant gains), an air
handler whose supply temperature and zone dampers are the actions, a chiller whose COP
falls with outdoor temperature, and a fan whose power grows with the cube of the airflow.
Buildings are Python objects stepped one after another (each has its own schedule and
equipment), two 2.5-minute sub-steps per 5-minute control step. The policy and value
networks are MLPs on the GPU, shared across buildings; each env step does one policy
forward for all buildings and reads the sampled actions back.

One PPO iteration: 128 env steps of rollout, GAE, then 4 epochs x 4 minibatches of
updates. NVTX ranges "it03.rollout" and "it03.update" per iteration (two per iteration,
numbered from it00; it00 and it01 are warm-up). torch.distributions validates its
arguments (the default), which reads a flag back on every construction and log_prob.
BLIND_SMALL=1 runs 4 buildings, 2+2 short iterations.
"""
import math
import os
import time

import numpy as np
import torch
import torch.nn as nn

SMALL = os.environ.get("BLIND_SMALL") == "1"
DEV = "cuda"
N_BUILDINGS = 4 if SMALL else 64
ZONES = 10
HORIZON = 16 if SMALL else 128
WARMUP_ITERS = 2
ITERS = 2 if SMALL else 30
EPOCHS = 2 if SMALL else 4
MINIBATCHES = 2 if SMALL else 4
CONTROL_DT = 300.0            # s
SUBSTEPS = 2
OBS = 3 * ZONES + 6
ACT = ZONES + 1


# ---------------------------------------------------------------- environment (host, numpy)
class Building:
    def __init__(self, rng, idx):
        self.rng = rng
        self.idx = idx
        self.C = rng.uniform(2e6, 6e6, ZONES)                 # J/K per zone
        self.U = rng.uniform(80, 220, ZONES)                   # W/K to outside
        K = np.zeros((ZONES, ZONES))
        for z in range(ZONES - 1):                             # a row of zones, plus a core
            K[z, z + 1] = K[z + 1, z] = rng.uniform(150, 400)
        K[0, ZONES - 1] = K[ZONES - 1, 0] = rng.uniform(100, 300)
        self.K = K
        self.Kdiag = K.sum(1)
        self.window = rng.uniform(5, 25, ZONES)                # m^2 effective solar aperture
        self.orient = rng.uniform(0, 2 * math.pi, ZONES)
        self.m_max = rng.uniform(0.4, 1.2, ZONES)              # kg/s per zone
        self.occ_peak = rng.integers(5, 40, ZONES)
        self.start_hour = rng.uniform(7.0, 9.5)
        self.end_hour = self.start_hour + rng.uniform(8.0, 10.0)
        self.cop_nom = rng.uniform(3.0, 4.5)
        self.reset()

    def reset(self):
        self.T = self.rng.uniform(19.0, 25.0, ZONES)

    def occupancy(self, hour, weekday):
        if weekday >= 5 or not (self.start_hour <= hour <= self.end_hour):
            return np.zeros(ZONES)
        mid = 0.5 * (self.start_hour + self.end_hour)
        frac = 1.0 - ((hour - mid) / (0.5 * (self.end_hour - self.start_hour))) ** 4
        lunch = 0.6 if 12.0 <= hour <= 13.0 else 1.0
        return self.occ_peak * max(frac, 0.0) * lunch

    def setpoints(self, occ):
        return np.where(occ > 0, 22.5, 26.0), np.where(occ > 0, 20.5, 16.0)

    def step(self, action, t_out, solar, sun_az, hour, weekday):
        damper = 1.0 / (1.0 + np.exp(-action[:ZONES]))         # 0..1
        t_sup = 13.0 + 5.0 * math.tanh(float(action[ZONES]))   # 8..18 C
        occ = self.occupancy(hour, weekday)
        q_int = 120.0 * occ + 8.0 * self.window * (occ > 0)
        q_sol = solar * self.window * np.clip(np.cos(self.orient - sun_az), 0.0, None) * 0.6
        m = self.m_max * damper
        hvac_heat = 0.0
        h = CONTROL_DT / SUBSTEPS
        for _ in range(SUBSTEPS):
            q_air = 1005.0 * m * (t_sup - self.T)
            q_cond = self.K @ self.T - self.Kdiag * self.T
            q_env = self.U * (t_out - self.T)
            self.T = self.T + h * (q_air + q_cond + q_env + q_int + q_sol) / self.C
            hvac_heat += float(q_air.sum()) * h
        # cooling coil: air mixed to supply temperature from a 30 % outdoor-air mix
        t_mix = 0.7 * float(np.average(self.T, weights=m + 1e-6)) + 0.3 * t_out
        coil = 1005.0 * float(m.sum()) * max(t_mix - t_sup, 0.0)
        cop = self.cop_nom * (1.0 - 0.02 * max(t_out - 25.0, 0.0))
        fan = 900.0 * float(m.sum() / self.m_max.sum()) ** 3
        energy_kwh = (coil / cop + fan) * CONTROL_DT / 3.6e6
        hi, lo = self.setpoints(occ)
        discomfort = np.clip(self.T - hi, 0, None) + np.clip(lo - self.T, 0, None)
        price = 0.32 if 12 <= hour < 18 and weekday < 5 else 0.14
        reward = -(price * energy_kwh + 0.05 * float((discomfort * (occ + 1)).sum()))
        obs = np.concatenate([(self.T - 22.0) / 5.0, (hi - lo) / 10.0, occ / 40.0])
        return obs, reward, energy_kwh, float(discomfort.mean())


class Campus:
    def __init__(self, rng):
        self.rng = rng
        self.buildings = [Building(rng, i) for i in range(N_BUILDINGS)]
        self.t = 0.0                                           # seconds since Monday 00:00
        self.obs = np.zeros((N_BUILDINGS, OBS), np.float32)

    def weather(self):
        day = self.t / 86400.0
        hour = (self.t / 3600.0) % 24.0
        t_out = 24.0 + 7.0 * math.sin(2 * math.pi * (hour - 9.0) / 24.0) + 2.0 * math.sin(day)
        solar = max(0.0, 800.0 * math.sin(math.pi * (hour - 6.0) / 13.0)) if 6 <= hour <= 19 else 0.0
        sun_az = math.pi * (hour - 6.0) / 13.0
        return t_out, solar, sun_az, hour, int(day) % 7

    def step(self, actions):
        t_out, solar, sun_az, hour, weekday = self.weather()
        rewards = np.empty(N_BUILDINGS, np.float32)
        energy = 0.0
        disc = 0.0
        for i, b in enumerate(self.buildings):
            o, r, e, d = b.step(actions[i], t_out, solar, sun_az, hour, weekday)
            self.obs[i, :3 * ZONES] = o
            rewards[i] = r
            energy += e
            disc += d
        self.t += CONTROL_DT
        t_out, solar, sun_az, hour, weekday = self.weather()
        self.obs[:, 3 * ZONES:] = np.array([(t_out - 24.0) / 8.0, solar / 800.0,
                                            math.sin(2 * math.pi * hour / 24),
                                            math.cos(2 * math.pi * hour / 24),
                                            float(weekday >= 5), math.cos(sun_az)], np.float32)
        return self.obs.copy(), rewards, energy, disc / N_BUILDINGS


# ---------------------------------------------------------------- agent (GPU)
class ActorCritic(nn.Module):
    def __init__(self, hidden=256):
        super().__init__()
        self.pi = nn.Sequential(nn.Linear(OBS, hidden), nn.Tanh(), nn.Linear(hidden, hidden),
                                nn.Tanh(), nn.Linear(hidden, ACT))
        self.v = nn.Sequential(nn.Linear(OBS, hidden), nn.Tanh(), nn.Linear(hidden, hidden),
                               nn.Tanh(), nn.Linear(hidden, 1))
        self.log_std = nn.Parameter(torch.full((ACT,), -0.5))

    def dist(self, obs):
        return torch.distributions.Normal(self.pi(obs), self.log_std.exp())

    def forward(self, obs):
        return self.dist(obs), self.v(obs).squeeze(-1)


def main():
    t_start = time.perf_counter()
    torch.manual_seed(0)
    rng = np.random.default_rng(7)
    campus = Campus(rng)
    agent = ActorCritic().to(DEV)
    opt = torch.optim.Adam(agent.parameters(), lr=3e-4, eps=1e-5, foreach=True)
    gamma, lam, clip = 0.99, 0.95, 0.2
    n = N_BUILDINGS
    buf_obs = torch.zeros(HORIZON, n, OBS, device=DEV)
    buf_act = torch.zeros(HORIZON, n, ACT, device=DEV)
    buf_logp = torch.zeros(HORIZON, n, device=DEV)
    buf_val = torch.zeros(HORIZON + 1, n, device=DEV)
    buf_rew = torch.zeros(HORIZON, n, device=DEV)
    obs, _, _, _ = campus.step(np.zeros((n, ACT), np.float32))

    env_s = 0.0
    stats = []

    def iteration(it, timed):
        nonlocal obs, env_s
        torch.cuda.nvtx.range_push(f"it{it:02d}.rollout")
        energy = 0.0
        disc = 0.0
        for t in range(HORIZON):
            o = torch.as_tensor(obs, device=DEV)
            with torch.no_grad():
                d, v = agent(o)
                a = d.sample()
                buf_logp[t] = d.log_prob(a).sum(-1)
            buf_obs[t] = o
            buf_act[t] = a
            buf_val[t] = v
            a_host = a.cpu().numpy()
            t0 = time.perf_counter()
            obs, r, e, dc = campus.step(a_host)
            if timed:
                env_s += time.perf_counter() - t0
            buf_rew[t] = torch.as_tensor(r, device=DEV)
            energy += e
            disc += dc
        with torch.no_grad():
            buf_val[HORIZON] = agent.v(torch.as_tensor(obs, device=DEV)).squeeze(-1)
            # GAE, backwards over the horizon
            adv = torch.zeros(HORIZON, n, device=DEV)
            last = torch.zeros(n, device=DEV)
            for t in reversed(range(HORIZON)):
                delta = buf_rew[t] + gamma * buf_val[t + 1] - buf_val[t]
                last = delta + gamma * lam * last
                adv[t] = last
            ret = adv + buf_val[:HORIZON]
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push(f"it{it:02d}.update")
        flat_obs = buf_obs.view(-1, OBS)
        flat_act = buf_act.view(-1, ACT)
        flat_logp = buf_logp.view(-1)
        flat_adv = adv.view(-1)
        flat_adv = (flat_adv - flat_adv.mean()) / (flat_adv.std() + 1e-8)
        flat_ret = ret.view(-1)
        total = flat_obs.shape[0]
        mb = total // MINIBATCHES
        g = torch.Generator(device="cpu").manual_seed(it)
        for _ in range(EPOCHS):
            perm = torch.randperm(total, generator=g).to(DEV)
            for k in range(MINIBATCHES):
                idx = perm[k * mb:(k + 1) * mb]
                d, v = agent(flat_obs[idx])
                logp = d.log_prob(flat_act[idx]).sum(-1)
                ratio = (logp - flat_logp[idx]).exp()
                a_mb = flat_adv[idx]
                pg = -torch.min(ratio * a_mb, ratio.clamp(1 - clip, 1 + clip) * a_mb).mean()
                vl = 0.5 * (v - flat_ret[idx]).pow(2).mean()
                ent = d.entropy().sum(-1).mean()
                loss = pg + 0.5 * vl - 0.001 * ent
                opt.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5, foreach=True)
                opt.step()
        torch.cuda.nvtx.range_pop()
        stats.append((energy, disc / HORIZON))

    for it in range(WARMUP_ITERS):
        iteration(it, timed=False)
    torch.cuda.synchronize()
    print(f"warm-up: {WARMUP_ITERS} iterations, {time.perf_counter() - t_start:.1f} s since start")
    t_loop = time.perf_counter()
    for it in range(WARMUP_ITERS, WARMUP_ITERS + ITERS):
        iteration(it, timed=True)
        if (it + 1) % 5 == 0:
            e, dc = stats[-1]
            print(f"it{it:02d}: campus energy {e:.0f} kWh per rollout, mean discomfort {dc:.3f} K")
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - t_loop
    torch.save(agent.state_dict(), os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                "blind23_hvac_ppo.pt"))
    print(f"timed loop: {ITERS} iterations ({ITERS * HORIZON} env steps) in {loop_s:.2f} s; "
          f"total {time.perf_counter() - t_start:.1f} s")
    print(f"GROUND TRUTH: planted=cpu-work share={env_s / loop_s:.3f} env_s={env_s:.2f} "
          f"loop_s={loop_s:.2f} iterations={ITERS} warmup={WARMUP_ITERS} env_steps_per_iter={HORIZON}")


if __name__ == "__main__":
    main()
