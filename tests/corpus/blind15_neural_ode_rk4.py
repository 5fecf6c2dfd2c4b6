"""Blind batch 15: a neural ODE fitted to pendulum-network trajectories with a fixed-grid RK4.

A controls group learns the dynamics of a network of 4 coupled, damped pendulums (an 8-dimensional
state: angles and angular velocities) from simulated trajectories. The vector field is a small MLP,
f(t, y) = MLP([y, t]) with widths 9 -> 128 -> 128 -> 8 and tanh, and trajectories are integrated
the way `torchdiffeq.odeint(method="rk4")` does on a fixed grid, written out in Python: 40 output
times 0.1 s apart, 4 RK4 sub-steps between two of them, so 160 RK4 steps and 640 evaluations of
the MLP per forward pass, all of it recorded by autograd and back-propagated (no adjoint). Batch 256
trajectories, MSE on the 40 observed states, Adam, gradient clipping. fp32.

Every operation works on a 256 x 128 tensor or smaller, so each kernel runs for a few microseconds;
a training iteration is ~6,400 small kernels forward and ~12,000 backward, issued one by one by
PyTorch's eager dispatcher. There is no other Python work in the loop: the data are made on the GPU
once (a reference RK4 simulation of the true system from 4,096 random initial states), and each
iteration draws a batch by index. The loss is read every 10 iterations. No NVTX. 2 warm-up
iterations, then 60.

Ground truth printed at the end: host seconds in the forward, backward and optimizer calls against
the loop's seconds; and, measured just before the loop, the GPU time of 10 forward RK4 steps' kernels
queued back to back behind `torch.cuda._sleep` against the host time of the same 10 steps run
normally (the GPU's busy share when kernels are issued at the dispatcher's pace).
"""
import math
import time

import torch
import torch.nn as nn

torch.manual_seed(0)
dev = torch.device("cuda")

N_PEND = 4
STATE = 2 * N_PEND
HIDDEN = 128
BATCH, POOL = 256, 4096
N_OBS, DT_OBS, SUBSTEPS = 40, 0.1, 4
WARMUP, STEPS, LOG_EVERY = 2, 60, 10


def true_field(t, y):
    """4 damped pendulums on a ring, coupled by torsion springs, with a slow periodic drive."""
    th, om = y[:, :N_PEND], y[:, N_PEND:]
    coupling = torch.roll(th, 1, 1) + torch.roll(th, -1, 1) - 2 * th
    drive = 0.3 * math.sin(0.7 * t)
    acc = -9.81 * torch.sin(th) - 0.15 * om + 0.8 * coupling + drive
    return torch.cat([om, acc], 1)


class ODEFunc(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(STATE + 1, HIDDEN), nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, STATE)
        nn.init.zeros_(self.l3.bias)
        self.l3.weight.data.mul_(0.1)

    def forward(self, t, y):
        tt = torch.full_like(y[:, :1], t)
        h = torch.tanh(self.l1(torch.cat([y, tt], 1)))
        h = torch.tanh(self.l2(h))
        return self.l3(h)


def rk4_step(f, t, y, dt):
    k1 = f(t, y)
    k2 = f(t + dt / 2, y + dt / 2 * k1)
    k3 = f(t + dt / 2, y + dt / 2 * k2)
    k4 = f(t + dt, y + dt * k3)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def odeint_rk4(f, y0, n_obs, dt_obs, substeps):
    """Fixed-grid RK4, as torchdiffeq's `rk4` method on a grid of dt_obs / substeps."""
    ys, y, t = [], y0, 0.0
    h = dt_obs / substeps
    for _ in range(n_obs):
        for _ in range(substeps):
            y = rk4_step(f, t, y, h)
            t += h
        ys.append(y)
    return torch.stack(ys, 1)


@torch.no_grad()
def simulate_pool():
    g = torch.Generator(device=dev).manual_seed(1)
    y0 = torch.cat([torch.rand(POOL, N_PEND, device=dev, generator=g) * 2 - 1,
                    torch.randn(POOL, N_PEND, device=dev, generator=g) * 0.5], 1)
    traj = odeint_rk4(true_field, y0, N_OBS, DT_OBS, 16)            # finer grid for the "truth"
    return y0, traj + 0.01 * torch.randn(traj.shape, device=dev, generator=g)


func = ODEFunc().to(dev)
opt = torch.optim.Adam(func.parameters(), lr=2e-3)
pool_y0, pool_traj = simulate_pool()
g = torch.Generator(device=dev).manual_seed(2)
print(f"pool: {POOL} trajectories x {N_OBS} observations; {N_OBS * SUBSTEPS} RK4 steps a forward", flush=True)

fwd_s = bwd_s = opt_s = 0.0


def train_iteration(timed):
    global fwd_s, bwd_s, opt_s
    idx = torch.randint(0, POOL, (BATCH,), device=dev, generator=g)
    t0 = time.perf_counter()
    pred = odeint_rk4(func, pool_y0[idx], N_OBS, DT_OBS, SUBSTEPS)
    loss = (pred - pool_traj[idx]).pow(2).mean()
    t1 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    t2 = time.perf_counter()
    torch.nn.utils.clip_grad_norm_(func.parameters(), 1.0)
    opt.step()
    t3 = time.perf_counter()
    if timed:
        fwd_s += t1 - t0
        bwd_s += t2 - t1
        opt_s += t3 - t2
    return loss.detach()


for _ in range(WARMUP):
    train_iteration(False)
torch.cuda.synchronize()

# Calibration: 10 forward RK4 steps (no grad), paced by the host, then queued behind a sleep.
with torch.no_grad():
    y = pool_y0[:BATCH].clone()
    h = DT_OBS / SUBSTEPS
    torch.cuda.synchronize()
    c0 = time.perf_counter()
    for k in range(10):
        y = rk4_step(func, k * h, y, h)
    torch.cuda.synchronize()
    host_paced = time.perf_counter() - c0
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(200_000_000)
    e0.record()
    for k in range(10):
        y = rk4_step(func, k * h, y, h)
    e1.record()
    torch.cuda.synchronize()
    back_to_back = e0.elapsed_time(e1) / 1e3

running = torch.zeros((), device=dev)
t_loop = time.perf_counter()
for it in range(STEPS):
    running += train_iteration(True)
    if (it + 1) % LOG_EVERY == 0:
        print(f"iteration {it + 1}: trajectory MSE {running.item() / LOG_EVERY:.5f}", flush=True)
        running.zero_()
torch.cuda.synchronize()
loop = time.perf_counter() - t_loop
host = fwd_s + bwd_s + opt_s
print(f"ground truth: host in forward {fwd_s:.3f} s, backward {bwd_s:.3f} s, optimizer {opt_s:.3f} s "
      f"({host:.3f} s, {100 * host / loop:.1f}% of {loop:.3f} s loop); 10 RK4 steps: kernels back to back "
      f"{1e3 * back_to_back:.2f} ms vs host-paced {1e3 * host_paced:.2f} ms (GPU busy {100 * back_to_back / host_paced:.0f}%); "
      f"{STEPS} iterations", flush=True)
