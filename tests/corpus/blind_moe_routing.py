"""Corpus (blind, batch 2): a mixture-of-experts layer that routes tokens with nonzero().

Program: 4096 tokens of width 1024, a router picks one of 16 experts per token; for each expert
the token indices come from (route == e).nonzero() - a sync that waits for the GPU - and the
expert's two small GEMMs run on those tokens (bf16). Forward and backward, AdamW (fused). No NVTX.
20 steps.
Expected, written before it was recorded (2026-11-26): sync-stall, naming the nonzero() line
(16 syncs a step, each draining the queue, so the GPU idles while the CPU launches the next
expert), at least 25% of the steady step; launch-bound second. 20 steps (within 3).
"""
import torch
from torch import nn

torch.manual_seed(0)
experts = nn.ModuleList([nn.Sequential(nn.Linear(1024, 2048), nn.GELU(), nn.Linear(2048, 1024))
                         for _ in range(16)]).cuda()
router = nn.Linear(1024, 16).cuda()
opt = torch.optim.AdamW(list(experts.parameters()) + list(router.parameters()), lr=1e-4,
                        fused=True)
x = torch.randn(4096, 1024, device="cuda")
for step in range(20):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        route = router(x).argmax(-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(experts):
            idx = (route == e).nonzero().squeeze(1)
            out = out.index_add(0, idx, expert(x[idx]).float())
        loss = out.pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
print("last loss", loss.item())
