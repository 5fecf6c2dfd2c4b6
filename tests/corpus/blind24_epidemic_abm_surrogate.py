# blind24_epidemic_abm_surrogate.py: active learning of a neural surrogate for an agent-based
# epidemic model (sequential design of scenario runs).
#
# A town of 120k agents (households, schools, workplaces) runs an SEIR agent-based simulation in
# numpy on the host. Each outer step ("s012") draws candidate intervention scenarios
# (transmissibility, contact reduction, school closure, testing rate), simulates
# one of them for a week of days on the host ("s012.simulate": contact sampling, infection
# draws, state transitions, all in numpy), appends the epidemic curve to the training set, and
# trains a small ensemble MLP surrogate on the GPU for a few minibatches ("s012.learn", ending in a
# loss.item()). The host simulation is most of every step: the GPU waits for the CPU.
#
# NVTX: one range per timed step, "s%03d" (s000 ... s039), with two sub-ranges inside it,
# "s%03d.simulate" and "s%03d.learn". The 3 warm-up steps before the timed loop carry no NVTX.
# GROUND TRUTH: perf_counter around the host simulation over the timed loop's wall time.
# BLIND_SMALL=1: a smaller town and fewer steps for a CPU check.
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SMALL = os.environ.get("BLIND_SMALL") == "1"
N_AGENTS = 20_000 if SMALL else 120_000
DAYS = 3 if SMALL else 7
WARMUP = 2 if SMALL else 3
TIMED = 5 if SMALL else 40
ENSEMBLE = 8
HIDDEN = 512
LEARN_ITERS = 6
DEV = "cuda"
nvtx = torch.cuda.nvtx


class Town:
    def __init__(self, n, rng):
        self.n = n
        self.rng = rng
        self.household = np.repeat(np.arange(n // 3 + 1), 3)[:n]
        rng.shuffle(self.household)
        self.age = rng.integers(0, 90, size=n)
        self.school = np.where(self.age < 18, rng.integers(0, max(1, n // 600), size=n), -1)
        self.work = np.where((self.age >= 18) & (self.age < 65), rng.integers(0, max(1, n // 40), size=n), -1)
        self.reset()

    def reset(self):
        self.state = np.zeros(self.n, dtype=np.int8)  # 0 S, 1 E, 2 I, 3 R
        seeds = self.rng.choice(self.n, size=max(5, self.n // 2000), replace=False)
        self.state[seeds] = 2
        self.timer = np.zeros(self.n, dtype=np.int16)
        self.timer[seeds] = 5

    def _setting_pressure(self, group, infectious, n_groups):
        valid = group >= 0
        counts = np.bincount(group[valid], minlength=n_groups).astype(np.float64)
        inf = np.bincount(group[valid & infectious], minlength=n_groups).astype(np.float64)
        frac = np.where(counts > 0, inf / np.maximum(counts, 1), 0.0)
        out = np.zeros(self.n)
        out[valid] = frac[group[valid]]
        return out

    def day(self, beta, contact_cut, schools_open, test_rate):
        rng = self.rng
        infectious = self.state == 2
        # household, school and workplace pressure from the infectious fraction of each setting
        p_home = self._setting_pressure(self.household, infectious, self.household.max() + 1)
        p_school = self._setting_pressure(self.school, infectious, self.school.max() + 1) * schools_open
        p_work = self._setting_pressure(self.work, infectious, self.work.max() + 1) * (1.0 - contact_cut)
        # random community contacts: each agent meets k random others
        k = 6
        partners = rng.integers(0, self.n, size=(self.n, k))
        p_comm = infectious[partners].mean(axis=1) * (1.0 - contact_cut)
        age_sus = np.where(self.age < 18, 0.6, np.where(self.age > 65, 1.3, 1.0))
        force = beta * age_sus * (2.5 * p_home + 1.2 * p_school + 1.0 * p_work + 0.8 * p_comm)
        p_inf = 1.0 - np.exp(-force)
        new_e = (self.state == 0) & (rng.random(self.n) < p_inf)
        # progression E -> I -> R with gamma-distributed durations
        self.timer = np.maximum(self.timer - 1, 0).astype(np.int16)
        e_done = (self.state == 1) & (self.timer == 0)
        i_done = (self.state == 2) & (self.timer == 0)
        tested = infectious & (rng.random(self.n) < test_rate)
        self.state[i_done | tested] = 3
        self.state[e_done] = 2
        self.timer[e_done] = rng.gamma(4.0, 1.5, size=int(e_done.sum())).astype(np.int16) + 1
        self.state[new_e] = 1
        self.timer[new_e] = rng.gamma(3.0, 1.2, size=int(new_e.sum())).astype(np.int16) + 1
        return np.array([np.mean(self.state == s) for s in range(4)])


class Surrogate(nn.Module):
    """Ensemble of MLPs mapping (scenario params, current SEIR fractions) -> next-week curve."""

    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(ENSEMBLE, 8, HIDDEN) * 0.2)
        self.w2 = nn.Parameter(torch.randn(ENSEMBLE, HIDDEN, HIDDEN) * (1.0 / HIDDEN ** 0.5))
        self.w3 = nn.Parameter(torch.randn(ENSEMBLE, HIDDEN, DAYS * 4) * (1.0 / HIDDEN ** 0.5))

    def forward(self, x):  # x: (E, B, 8)
        h = F.gelu(torch.bmm(x, self.w1))
        h = F.gelu(torch.bmm(h, self.w2))
        return torch.bmm(h, self.w3)


def propose(rng, n_cand=256):
    cand = np.column_stack([rng.uniform(0.1, 0.6, n_cand), rng.uniform(0.0, 0.7, n_cand),
                            rng.integers(0, 2, n_cand).astype(np.float64), rng.uniform(0.0, 0.3, n_cand)])
    return cand


def main():
    rng = np.random.default_rng(3)
    torch.manual_seed(0)
    town = Town(N_AGENTS, rng)
    model = Surrogate().to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    xs, ys = [], []
    sim_s = 0.0
    loop_t0 = None
    for step in range(WARMUP + TIMED):
        timed = step >= WARMUP
        k = step - WARMUP
        if step == WARMUP:
            torch.cuda.synchronize()
            loop_t0 = time.perf_counter()
            sim_s = 0.0
        if timed:
            nvtx.range_push(f"s{k:03d}")
            nvtx.range_push(f"s{k:03d}.simulate")
        t0 = time.perf_counter()
        cand = propose(rng)
        beta, cut, schools, test = cand[rng.integers(len(cand))]
        if step % 4 == 0:
            town.reset()
        before = np.array([np.mean(town.state == s) for s in range(4)])
        curve = np.stack([town.day(beta, cut, schools, test) for _ in range(DAYS)])
        xs.append(np.concatenate([[beta, cut, schools, test], before]).astype(np.float32))
        ys.append(curve.reshape(-1).astype(np.float32))
        sim_s += time.perf_counter() - t0
        if timed:
            nvtx.range_pop()
            nvtx.range_push(f"s{k:03d}.learn")
        X = torch.from_numpy(np.stack(xs)).to(DEV)
        Y = torch.from_numpy(np.stack(ys)).to(DEV)
        for _ in range(LEARN_ITERS):
            idx = torch.randint(0, X.shape[0], (ENSEMBLE, 512), device=DEV)
            xb = X[idx] + 0.01 * torch.randn(ENSEMBLE, 512, 8, device=DEV)
            pred = model(xb)
            loss = F.mse_loss(pred, Y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        lv = loss.item()
        if timed:
            nvtx.range_pop()
            nvtx.range_pop()
        if step % 10 == 0:
            print(f"step {step:3d} scenarios {len(xs):3d} surrogate mse {lv:.5f} "
                  f"attack {curve[-1, 3]:.3f}", flush=True)
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - loop_t0
    print(f"timed loop: {TIMED} steps in {loop_s:.3f} s ({1e3 * loop_s / TIMED:.1f} ms/step), "
          f"{N_AGENTS} agents x {DAYS} days per step")
    print(f"GROUND TRUTH: host agent-based simulation = {sim_s:.3f} s of {loop_s:.3f} s "
          f"= {100.0 * sim_s / loop_s:.1f}% of the timed loop (cpu-work)")


if __name__ == "__main__":
    main()
