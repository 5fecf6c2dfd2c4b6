"""Corpus (blind, batch 7): policy-gradient steps rewarded by an external grader process.

Program: a policy (token embedding, 4 TransformerEncoderLayer of width 768, a 1,000-way action
head; bf16 autocast, fused AdamW) emits 128 discrete actions for each of 64 episodes a step,
sampled with torch.multinomial and read back with .cpu().tolist(). The episodes are scored by an
external grader, as a sandboxed verifier would be: subprocess.run starts `python3 -c GRADER`,
writes the actions to its stdin as text and waits for one score per episode on its stdout (~20-40
ms to start the interpreter plus ~30-50 ms of scoring in the child), while the training process
sleeps and the GPU idles. The rewards, less their mean, then weight the log-probabilities in a
REINFORCE loss; backward and the optimiser step follow (~5-10 ms of GPU work a step in all). No
NVTX. 60 steps; one line printed at the end (the time in subprocess.run, measured in-program).
"""
import subprocess
import sys
import time

import torch
from torch import nn

STEPS, EPISODES, LENGTH, ACTIONS, WIDTH = 60, 64, 128, 1000, 768
GRADER = r"""
import sys
scores = []
for line in sys.stdin:
    acts = [int(a) for a in line.split()]
    score, seen = 0.0, set()
    for a, b in zip(acts, acts[1:]):
        score += 1.0 if b > a else -0.5
        score -= 1.0 if (a, b) in seen else 0.0
        seen.add((a, b))
    for i in range(len(acts)):
        for j in range(i + 1, min(i + 32, len(acts))):
            if abs(acts[i] - acts[j]) < 8:
                score -= 0.1
    scores.append(score / len(acts))
print(" ".join("%.5f" % s for s in scores))
"""


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(ACTIONS, WIDTH)
        layer = nn.TransformerEncoderLayer(WIDTH, 12, 4 * WIDTH, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.body = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
        self.head = nn.Linear(WIDTH, ACTIONS)

    def forward(self, observations):
        return self.head(self.body(self.embed(observations)))


torch.manual_seed(0)
policy = Policy().cuda()
opt = torch.optim.AdamW(policy.parameters(), lr=1e-5, fused=True)
generator = torch.Generator(device="cuda").manual_seed(0)
graded, start = 0.0, time.perf_counter()
for step in range(STEPS):
    observations = torch.randint(0, ACTIONS, (EPISODES, LENGTH), device="cuda",
                                 generator=generator)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = policy(observations).float()
    log_probs = logits.log_softmax(-1)
    actions = torch.multinomial(log_probs.exp().flatten(0, 1), 1, generator=generator)
    actions = actions.view(EPISODES, LENGTH)
    text = "\n".join(" ".join(map(str, row)) for row in actions.cpu().tolist())
    t = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", GRADER], input=text, capture_output=True,
                            text=True, check=True)
    graded += time.perf_counter() - t
    rewards = torch.tensor([float(s) for s in result.stdout.split()], device="cuda")
    advantage = (rewards - rewards.mean())[:, None]
    loss = -(advantage * log_probs.gather(-1, actions[..., None])[..., 0]).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
total = time.perf_counter() - start
print(f"steps {STEPS} last loss {loss.item():.4f}; grader {graded:.2f} s of {total:.2f} s")
