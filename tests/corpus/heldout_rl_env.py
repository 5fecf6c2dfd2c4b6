"""Corpus (held out): a reinforcement-learning style loop: a NumPy environment between updates.

Planted: CPU work outside CUDA calls. Each step simulates 64 environments in NumPy and Python
(~6 ms), copies the observations to the GPU, runs a small policy and value network forward and
backward (~1 ms of GPU work) and copies the actions back. NVTX "iteration N" ranges. Written
after the analysis was tuned: a check, not a target.
"""
import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
rng = np.random.default_rng(0)
policy = nn.Sequential(nn.Linear(128, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(),
                       nn.Linear(256, 8)).cuda()
opt = torch.optim.Adam(policy.parameters(), lr=3e-4)
state = rng.standard_normal((64, 128)).astype(np.float32)


def simulate(state, actions):
    out = state.copy()
    for e in range(len(out)):  # per-environment physics in Python
        a = actions[e]
        for _ in range(20):
            out[e] = 0.99 * out[e] + 0.01 * np.tanh(out[e] * (a + 1))
    return out


for it in range(40):
    torch.cuda.nvtx.range_push(f"iteration {it}")
    obs = torch.from_numpy(state).cuda()
    logits = policy(obs)
    actions = torch.distributions.Categorical(logits=logits).sample()
    loss = -(logits.log_softmax(-1).gather(1, actions[:, None])).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    state = simulate(state, actions.cpu().numpy())
    torch.cuda.nvtx.range_pop()
print("done")
