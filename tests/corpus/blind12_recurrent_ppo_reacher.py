"""Corpus (blind, batch 12): recurrent PPO on a vectorised NumPy arm, in the style of CleanRL.

Program: PPO with an LSTM actor-critic (continuous actions, a Normal policy from torch.distributions
with its default argument validation) trained on 16 copies of a planar two-link reaching arm (MuJoCo
Reacher-like: torques on two joints, a random target, 50-step episodes, auto reset), the arm
integrated in NumPy, vectorised over the 16 copies (~40 NumPy calls a step). Written the way
CleanRL's ppo_atari_lstm.py is: each rollout step runs the policy on the device (a Linear encoder,
the done-masked state fed to nn.LSTM for one time step, actor and critic heads, Normal's sample,
log_prob and entropy), writes the step into the rollout buffers, reads the action back with
`.cpu().numpy()`, steps the arms, and uploads reward, observation and done flags with
torch.tensor(...).to(device). Every 32 steps: GAE in a reversed Python loop over the buffers on the
device, then 2 epochs x 2 minibatches of 8 environments, each replaying the 32 steps through nn.LSTM
one step at a time in a Python loop (get_states), the clipped PPO loss, backward, clip_grad_norm_
and Adam, with CleanRL's per-minibatch `clipfrac.item()`. Everything is tiny: batch 16 or 8, hidden
128; ~50 kernels a rollout step and ~700-900 a minibatch, a few microseconds each, against ~8-15 us
of PyTorch dispatch, module and autograd overhead per op on the CPU. The arms cost ~50-100 us a
step. Hidden syncs: Normal's validation (`torch._is_all_true` on loc and scale, and on the sample in
log_prob) and the action read-back, 4 a rollout step, each waiting only for the few kernels just
queued. NVTX: one "ppo_iteration" range per iteration with "rollout" and "learn" inside. 1 warm-up
iteration (cuDNN and lazy module loading), then 20 iterations (640 environment steps x 16 arms),
~100,000-120,000 kernels in all (~103,000 non-view aten calls in a CPU run here); mean episodic
return printed every 5 iterations. One line printed at the end: seconds in the policy calls of the
rollout (forward, sampling, buffer writes, read-back), in the learn phase, in the arms' step, and
the loop's total, measured in-program.

Expected, written before it was recorded (2026-11-27): launch-bound, 65-90% of the steady iteration
(the policy calls plus the learn phase, as printed; the GPU busy only ~15-35% of the loop), naming
the many small kernels of the LSTM step loop (get_states: nn.LSTM's cuDNN kernels, the done-mask
multiplications, cat) and its backward, the Linear/tanh heads, Normal's log_prob/entropy/sample ops,
the GAE loop's elementwise kernels and Adam, with the GPU idle between launches; 20 steps (the
ppo_iteration ranges; 640 environment steps also defensible). Misses: cpu-work naming the NumPy arm
(~5-12%) or Python outside PyTorch (the time is PyTorch's per-op dispatch and launch path),
sync-stall (4 syncs a rollout step, each after a few microseconds of queued work; the action
read-back is inherent to the loop), copies (a few hundred bytes each way), gpu-bound, input-bound.
Advice that helps: fewer, larger kernels: more environments per step (256 instead of 16), a fused
recurrent step (nn.LSTM over the whole sequence with packed episode boundaries instead of the
per-step loop, or torch.compile / CUDA graphs of the policy step and of get_states), a hand-written
Gaussian head without validation; or run such a small policy on the CPU. Not a faster environment.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.distributions.normal import Normal

NUM_ENVS, NUM_STEPS, ITERATIONS, WARMUP_ITERATIONS = 16, 32, 20, 1
UPDATE_EPOCHS, NUM_MINIBATCHES = 2, 2
GAMMA, GAE_LAMBDA, CLIP_COEF, ENT_COEF, VF_COEF, MAX_GRAD_NORM = 0.99, 0.95, 0.2, 0.0, 0.5, 0.5
LEARNING_RATE, LOG_EVERY = 3e-4, 5


class ReacherVecEnv:
    """Planar two-link arms reaching for a target, integrated in NumPy for all copies at once."""

    LINK1, LINK2, DT, FRAME_SKIP, GEAR, DAMPING, EPISODE_LEN = 0.1, 0.11, 0.01, 2, 20.0, 1.0, 50
    obs_dim, act_dim = 10, 2

    def __init__(self, n, seed):
        self.n = n
        self.rng = np.random.default_rng(seed)
        self.q = np.zeros((n, 2))
        self.qd = np.zeros((n, 2))
        self.target = np.zeros((n, 2))
        self.t = np.zeros(n, dtype=np.int64)
        self.episode_return = np.zeros(n)
        self.finished_returns = []
        self._reset(np.arange(n))

    def _reset(self, idx):
        k = len(idx)
        self.q[idx] = self.rng.uniform(-0.1, 0.1, (k, 2))
        self.qd[idx] = self.rng.uniform(-0.005, 0.005, (k, 2))
        radius = self.rng.uniform(0.05, 0.2, k)
        angle = self.rng.uniform(-np.pi, np.pi, k)
        self.target[idx, 0] = radius * np.cos(angle)
        self.target[idx, 1] = radius * np.sin(angle)
        self.t[idx] = 0
        self.episode_return[idx] = 0.0

    def _fingertip(self):
        a1 = self.q[:, 0]
        a12 = a1 + self.q[:, 1]
        return np.stack([self.LINK1 * np.cos(a1) + self.LINK2 * np.cos(a12),
                         self.LINK1 * np.sin(a1) + self.LINK2 * np.sin(a12)], axis=1)

    def observe(self):
        return np.concatenate([np.cos(self.q), np.sin(self.q), self.target, self.qd,
                               self._fingertip() - self.target], axis=1).astype(np.float32)

    def step(self, action):
        a = np.clip(action, -1.0, 1.0)
        for _ in range(self.FRAME_SKIP):
            # Joint accelerations from the torques, viscous damping and a coupling term.
            coupling = 0.3 * np.sin(self.q[:, 1:2]) * self.qd[:, ::-1]
            qdd = self.GEAR * a - self.DAMPING * self.qd - coupling
            self.qd += self.DT * qdd
            self.q += self.DT * self.qd
        dist = np.linalg.norm(self._fingertip() - self.target, axis=1)
        reward = -dist - 0.1 * np.square(a).sum(axis=1)
        self.episode_return += reward
        self.t += 1
        done = self.t >= self.EPISODE_LEN
        if done.any():
            idx = np.flatnonzero(done)
            self.finished_returns.extend(self.episode_return[idx].tolist())
            self._reset(idx)
        return self.observe(), reward.astype(np.float32), done


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden=128):
        super().__init__()
        self.encoder = nn.Sequential(layer_init(nn.Linear(obs_dim, 128)), nn.Tanh())
        self.lstm = nn.LSTM(128, hidden)
        for name, param in self.lstm.named_parameters():
            if "bias" in name:
                nn.init.constant_(param, 0)
            elif "weight" in name:
                nn.init.orthogonal_(param, 1.0)
        self.actor_mean = nn.Sequential(layer_init(nn.Linear(hidden, 64)), nn.Tanh(),
                                        layer_init(nn.Linear(64, act_dim), std=0.01))
        self.actor_logstd = nn.Parameter(torch.zeros(1, act_dim))
        self.critic = nn.Sequential(layer_init(nn.Linear(hidden, 64)), nn.Tanh(),
                                    layer_init(nn.Linear(64, 1), std=1.0))

    def get_states(self, x, lstm_state, done):
        hidden = self.encoder(x)
        batch_size = lstm_state[0].shape[1]
        hidden = hidden.reshape((-1, batch_size, self.lstm.input_size))
        done = done.reshape((-1, batch_size))
        new_hidden = []
        for h, d in zip(hidden, done):
            keep = (1.0 - d).view(1, -1, 1)
            h, lstm_state = self.lstm(h.unsqueeze(0), (keep * lstm_state[0], keep * lstm_state[1]))
            new_hidden += [h]
        new_hidden = torch.flatten(torch.cat(new_hidden), 0, 1)
        return new_hidden, lstm_state

    def get_value(self, x, lstm_state, done):
        hidden, _ = self.get_states(x, lstm_state, done)
        return self.critic(hidden)

    def get_action_and_value(self, x, lstm_state, done, action=None):
        hidden, lstm_state = self.get_states(x, lstm_state, done)
        action_mean = self.actor_mean(hidden)
        action_std = torch.exp(self.actor_logstd.expand_as(action_mean))
        probs = Normal(action_mean, action_std)
        if action is None:
            action = probs.sample()
        return (action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(hidden),
                lstm_state)


def main():
    torch.manual_seed(1)
    np.random.seed(1)
    device = torch.device("cuda")
    envs = ReacherVecEnv(NUM_ENVS, seed=1)
    agent = Agent(envs.obs_dim, envs.act_dim).to(device)
    optimizer = optim.Adam(agent.parameters(), lr=LEARNING_RATE, eps=1e-5)

    obs = torch.zeros((NUM_STEPS, NUM_ENVS, envs.obs_dim), device=device)
    actions = torch.zeros((NUM_STEPS, NUM_ENVS, envs.act_dim), device=device)
    logprobs = torch.zeros((NUM_STEPS, NUM_ENVS), device=device)
    rewards = torch.zeros((NUM_STEPS, NUM_ENVS), device=device)
    dones = torch.zeros((NUM_STEPS, NUM_ENVS), device=device)
    values = torch.zeros((NUM_STEPS, NUM_ENVS), device=device)

    next_obs = torch.tensor(envs.observe()).to(device)
    next_done = torch.zeros(NUM_ENVS, device=device)
    next_lstm_state = (torch.zeros(1, NUM_ENVS, agent.lstm.hidden_size, device=device),
                       torch.zeros(1, NUM_ENVS, agent.lstm.hidden_size, device=device))
    batch_size = NUM_ENVS * NUM_STEPS
    envs_per_batch = NUM_ENVS // NUM_MINIBATCHES
    env_inds = np.arange(NUM_ENVS)
    flat_inds = np.arange(batch_size).reshape(NUM_STEPS, NUM_ENVS)

    in_policy = in_env = in_learn = 0.0
    start = None
    global_step = 0
    for iteration in range(WARMUP_ITERATIONS + ITERATIONS):
        if iteration == WARMUP_ITERATIONS:
            torch.cuda.synchronize()
            start = time.perf_counter()
            in_policy = in_env = in_learn = 0.0
        timed = iteration >= WARMUP_ITERATIONS
        if timed:
            torch.cuda.nvtx.range_push("ppo_iteration")
            torch.cuda.nvtx.range_push("rollout")
        initial_lstm_state = (next_lstm_state[0].clone(), next_lstm_state[1].clone())
        for step in range(NUM_STEPS):
            global_step += NUM_ENVS
            t0 = time.perf_counter()
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value, next_lstm_state = agent.get_action_and_value(
                    next_obs, next_lstm_state, next_done)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob
            action_np = action.cpu().numpy()
            t1 = time.perf_counter()
            next_obs_np, reward, done = envs.step(action_np)
            t2 = time.perf_counter()
            rewards[step] = torch.tensor(reward).to(device).view(-1)
            next_obs = torch.tensor(next_obs_np).to(device)
            next_done = torch.tensor(done, dtype=torch.float32).to(device)
            t3 = time.perf_counter()
            in_policy += (t1 - t0) + (t3 - t2)
            in_env += t2 - t1
        if timed:
            torch.cuda.nvtx.range_pop()
            torch.cuda.nvtx.range_push("learn")

        t0 = time.perf_counter()
        with torch.no_grad():
            next_value = agent.get_value(next_obs, next_lstm_state, next_done).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(NUM_STEPS)):
                if t == NUM_STEPS - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + GAMMA * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = (delta + GAMMA * GAE_LAMBDA * nextnonterminal
                                              * lastgaelam)
            returns = advantages + values

        b_obs = obs.reshape((-1, envs.obs_dim))
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape((-1, envs.act_dim))
        b_dones = dones.reshape(-1)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)
        clipfracs = []
        for epoch in range(UPDATE_EPOCHS):
            np.random.shuffle(env_inds)
            for start_env in range(0, NUM_ENVS, envs_per_batch):
                mb_env_inds = env_inds[start_env:start_env + envs_per_batch]
                mb_inds = flat_inds[:, mb_env_inds].ravel()  # time-major, as get_states expects
                _, newlogprob, entropy, newvalue, _ = agent.get_action_and_value(
                    b_obs[mb_inds],
                    (initial_lstm_state[0][:, mb_env_inds], initial_lstm_state[1][:, mb_env_inds]),
                    b_dones[mb_inds],
                    b_actions[mb_inds],
                )
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > CLIP_COEF).float().mean().item()]
                mb_advantages = b_advantages[mb_inds]
                mb_advantages = ((mb_advantages - mb_advantages.mean())
                                 / (mb_advantages.std() + 1e-8))
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - CLIP_COEF, 1 + CLIP_COEF)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()
                newvalue = newvalue.view(-1)
                v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                v_clipped = b_values[mb_inds] + torch.clamp(newvalue - b_values[mb_inds],
                                                            -CLIP_COEF, CLIP_COEF)
                v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
                entropy_loss = entropy.mean()
                loss = pg_loss - ENT_COEF * entropy_loss + v_loss * VF_COEF
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), MAX_GRAD_NORM)
                optimizer.step()
        if timed:
            in_learn += time.perf_counter() - t0
            torch.cuda.nvtx.range_pop()
            torch.cuda.nvtx.range_pop()

        if timed and (iteration - WARMUP_ITERATIONS + 1) % LOG_EVERY == 0:
            recent = envs.finished_returns[-32:]
            print(f"iteration {iteration - WARMUP_ITERATIONS + 1}/{ITERATIONS} step {global_step}: "
                  f"return {np.mean(recent) if recent else float('nan'):.2f} "
                  f"pg {pg_loss.item():.4f} v {v_loss.item():.4f} kl {approx_kl.item():.4f} "
                  f"clipfrac {np.mean(clipfracs):.3f}")
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    torch_calls = in_policy + in_learn
    print(f"iterations {ITERATIONS} x {NUM_STEPS} steps x {NUM_ENVS} arms: policy calls in the "
          f"rollout {in_policy:.2f} s + learn phase {in_learn:.2f} s = {torch_calls:.2f} s "
          f"({100 * torch_calls / total:.0f}%), arms' step {in_env:.2f} s "
          f"({100 * in_env / total:.0f}%), of loop {total:.2f} s")


if __name__ == "__main__":
    main()
