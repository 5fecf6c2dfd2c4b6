# blind24_battery_pack_launches.py: fitting an equivalent-circuit model of a battery pack to a
# drive-cycle log, one module at a time in Python.
#
# A 6-module series pack of lithium-ion cells; each module has its own second-order Thevenin
# model (R0, R1-C1, R2-C2, capacity, a 5-coefficient open-circuit-voltage polynomial, thermal
# lumped mass) kept as separate parameters, and 64 parallel cell strings. Training fits the
# parameters to a measured (here: synthetic) voltage/temperature log by truncated
# back-propagation through time: each step simulates an 8-sample window of the drive cycle,
# module by module, sample by sample, with small tensor operations in Python loops. Every
# operation is a tiny kernel (64 elements); the CPU cannot launch them as fast as the GPU runs
# them. There are about 7700 kernels per step (forward, backward and the optimizer).
#
# No NVTX. The loop logs every 7 steps (a loss.item()) and evaluates every 25 steps (a longer
# no-grad rollout of 60 samples), so steps differ. 3 warm-up steps, then 50 timed steps
# (numbered 1..50; evaluations after steps 25 and 50). GROUND TRUTH: the share of the timed loop
# the CPU spends issuing work (everything except waiting in .item() for the GPU), with the
# operations per step counted in one extra step after the loop.
# BLIND_SMALL=1: fewer modules, a shorter window and fewer steps for a CPU check.
import math
import os
import time

import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode

SMALL = os.environ.get("BLIND_SMALL") == "1"
MODULES = 3 if SMALL else 6
STRINGS = 64
WINDOW = 5 if SMALL else 8
EVAL_LEN = 20 if SMALL else 60
WARMUP = 1 if SMALL else 3
TIMED = 8 if SMALL else 50
LOG_EVERY = 7
EVAL_EVERY = 4 if SMALL else 25
DT = 1.0  # s
DEV = "cuda"


class ModuleECM(nn.Module):
    def __init__(self, k, n=STRINGS):
        super().__init__()
        self.n = n
        g = torch.Generator().manual_seed(100 + k)
        j = lambda s: 1.0 + s * (torch.rand(n, generator=g) - 0.5)  # noqa: E731
        self.log_r0 = nn.Parameter(torch.log(0.012 * j(0.2)))
        self.log_r1 = nn.Parameter(torch.log(0.008 * j(0.2)))
        self.log_tau1 = nn.Parameter(torch.log(12.0 * j(0.2)))
        self.log_r2 = nn.Parameter(torch.log(0.006 * j(0.2)))
        self.log_tau2 = nn.Parameter(torch.log(300.0 * j(0.2)))
        self.log_cap = nn.Parameter(torch.log(3600.0 * 5.0 * j(0.1)))
        self.ocv = nn.Parameter(torch.tensor([3.0, 1.4, -1.6, 1.1, -0.25]).repeat(n, 1))
        self.log_hcap = nn.Parameter(torch.log(torch.full((n,), 900.0)))

    def init_state(self):
        z = torch.zeros(self.n, device=self.log_r0.device)
        return [z + 0.9, z, z, z + 25.0]  # soc, v1, v2, temperature

    def step(self, state, i_cell, t_amb):
        soc, v1, v2, temp = state
        r0 = torch.exp(self.log_r0) * (1.0 + 0.01 * (25.0 - temp))
        r1 = torch.exp(self.log_r1)
        r2 = torch.exp(self.log_r2)
        a1 = torch.exp(-DT / torch.exp(self.log_tau1))
        a2 = torch.exp(-DT / torch.exp(self.log_tau2))
        v1 = a1 * v1 + r1 * (1 - a1) * i_cell
        v2 = a2 * v2 + r2 * (1 - a2) * i_cell
        soc = (soc - i_cell * DT / torch.exp(self.log_cap)).clamp(0.0, 1.0)
        c = self.ocv
        ocv = c[:, 0] + soc * (c[:, 1] + soc * (c[:, 2] + soc * (c[:, 3] + soc * c[:, 4])))
        v = ocv - v1 - v2 - r0 * i_cell
        heat = i_cell * i_cell * r0 + i_cell * (v1 + v2)
        temp = temp + DT * (heat - 0.05 * (temp - t_amb)) / torch.exp(self.log_hcap)
        return [soc, v1, v2, temp], v, temp


class Pack(nn.Module):
    def __init__(self):
        super().__init__()
        self.mods = nn.ModuleList([ModuleECM(k) for k in range(MODULES)])

    def rollout(self, states, current, t_amb):
        volts, temps = [], []
        for t in range(current.shape[0]):
            i_cell = current[t] / STRINGS
            vs, ts = [], []
            for m, mod in enumerate(self.mods):
                states[m], v, temp = mod.step(states[m], i_cell, t_amb)
                vs.append(v.mean())
                ts.append(temp.max())
            volts.append(torch.stack(vs))
            temps.append(torch.stack(ts))
        return states, torch.stack(volts), torch.stack(temps)


def drive_cycle(n, device):
    t = torch.arange(n, dtype=torch.float32, device=device)
    # urban stop-and-go with regenerative braking phases, amps for the whole pack
    i = 90 * torch.relu(torch.sin(2 * math.pi * t / 45.0)) - 35 * torch.relu(-torch.sin(2 * math.pi * t / 45.0 + 0.7))
    return i + 25 * torch.sin(2 * math.pi * t / 7.0) + 40


class OpCount(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not getattr(func, "is_view", False) and func.__name__ not in ("detach.default", "_to_copy.default"):
            self.n += 1  # views and detaches launch no kernel
        return func(*args, **(kwargs or {}))


def main():
    torch.manual_seed(0)
    total = (WARMUP + TIMED + 1) * WINDOW + EVAL_LEN + 1
    current = drive_cycle(total, DEV)
    # the "measured" log comes from a perturbed reference pack, simulated with all modules'
    # strings in one vector (the vectorised form the fit itself does not use)
    with torch.no_grad():
        ref = ModuleECM(7, n=MODULES * STRINGS).to(DEV)
        for p in ref.parameters():
            p.add_(0.05 * torch.randn_like(p) * p.abs())
        st = ref.init_state()
        vs, ts = [], []
        for t in range(total):
            st, v, temp = ref.step(st, current[t] / STRINGS, 25.0)
            vs.append(v.view(MODULES, STRINGS).mean(1))
            ts.append(temp.view(MODULES, STRINGS).amax(1))
        v_meas, t_meas = torch.stack(vs), torch.stack(ts)
    pack = Pack().to(DEV)
    opt = torch.optim.Adam(pack.parameters(), lr=2e-3, foreach=True)
    states = [m.init_state() for m in pack.mods]
    pos = 0
    blocked = 0.0

    def train_step():
        nonlocal states, pos
        win = slice(pos, pos + WINDOW)
        states = [[s.detach() for s in st] for st in states]
        states, v, tmp = pack.rollout(states, current[win], 25.0)
        loss = ((v - v_meas[win]) ** 2).mean() + 1e-3 * ((tmp - t_meas[win]) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        pos += WINDOW
        return loss

    def evaluate():
        with torch.no_grad():
            st = [m.init_state() for m in pack.mods]
            _, v, _ = pack.rollout(st, current[:EVAL_LEN], 25.0)
            return ((v - v_meas[:EVAL_LEN]) ** 2).mean().sqrt()

    for _ in range(WARMUP):
        train_step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for step in range(1, TIMED + 1):
        loss = train_step()
        if step % LOG_EVERY == 0:
            tb = time.perf_counter()
            lv = loss.item()
            blocked += time.perf_counter() - tb
            print(f"step {step:3d} loss {lv:.3e}", flush=True)
        if step % EVAL_EVERY == 0:
            rmse = evaluate()
            tb = time.perf_counter()
            rv = rmse.item()
            blocked += time.perf_counter() - tb
            print(f"step {step:3d} eval RMSE over {EVAL_LEN} s: {1e3 * rv:.2f} mV", flush=True)
    tb = time.perf_counter()
    torch.cuda.synchronize()
    blocked += time.perf_counter() - tb
    loop_s = time.perf_counter() - t0
    with OpCount() as oc:
        train_step()
    torch.cuda.synchronize()
    print(f"timed loop: {TIMED} steps in {loop_s:.3f} s ({1e3 * loop_s / TIMED:.1f} ms/step), "
          f"{oc.n} operations per training step ({MODULES} modules x {WINDOW} samples)")
    issuing = loop_s - blocked
    print(f"GROUND TRUTH: CPU issuing kernels = {issuing:.3f} s of {loop_s:.3f} s = "
          f"{100.0 * issuing / loop_s:.1f}% of the timed loop, {1e6 * issuing / (TIMED * oc.n):.1f} us of host "
          f"time per operation (launch-bound); waiting for the GPU {100.0 * blocked / loop_s:.1f}%")


if __name__ == "__main__":
    main()
