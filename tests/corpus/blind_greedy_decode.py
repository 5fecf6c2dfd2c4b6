"""Corpus (blind, batch 2): token-by-token greedy decoding with a Hugging Face GPT-2.

Program: transformers' GPT2LMHeadModel (4 layers, d_model 512, random weights), batch 1, under
torch.inference_mode; 6 prompts of 16 tokens, each extended by 20 tokens with the KV cache, one
model call per token; the next token is read back with .item() every token to check for the end
token, as a hand-written generate loop does. No NVTX.
Expected, written before it was recorded (2026-11-26): launch-bound (each token's forward is
~100 tiny kernels; the CPU's launching and PyTorch's per-op overhead keep the GPU idle), at least
40% of the steady step. Steps: per prompt (6) or per token (120) are both defensible.
"""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=4, n_embd=512, n_head=8, n_positions=128, vocab_size=50257)
model = GPT2LMHeadModel(config).cuda().eval()
with torch.inference_mode():
    for prompt in range(6):
        ids = torch.randint(0, config.vocab_size, (1, 16), device="cuda")
        out = model(input_ids=ids, use_cache=True)
        past = out.past_key_values
        generated = []
        for _ in range(20):
            token = out.logits[:, -1].argmax(-1, keepdim=True)
            value = token.item()
            if value == config.eos_token_id:
                break
            generated.append(value)
            out = model(input_ids=token, past_key_values=past, use_cache=True)
            past = out.past_key_values
print("tokens of the last prompt", len(generated))
