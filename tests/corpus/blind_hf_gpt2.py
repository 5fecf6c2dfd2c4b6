"""Corpus (blind, batch 2): a Hugging Face GPT-2 trained from a random initialisation.

Program: transformers' GPT2LMHeadModel (6 layers, d_model 768, 12 heads), sequences of 512
tokens, batch 16, bf16 autocast, torch.optim.AdamW (foreach), random token ids made on the GPU,
the loss read with .item() every step. No NVTX. 20 steps.
Expected, written before it was recorded (2026-11-26): gpu-bound; the GPU busy for at least
90% of the steady step; 20 steps (within 3).
"""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=6, n_embd=768, n_head=12, n_positions=512, vocab_size=50257)
model = GPT2LMHeadModel(config).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(20):
    ids = torch.randint(0, config.vocab_size, (16, 512), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(input_ids=ids, labels=ids).loss
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    value = loss.item()
print("last loss", value)
