"""Corpus (blind, batch 13): a sentence-embedding service that pads every batch to 512 tokens.

Expected verdict: tests/corpus/BLIND13_EXPECTED.md.

A BERT-base-sized encoder (12 layers, width 768, 12 heads, GELU MLP of 3072, learned positions,
randomly initialised: no weights are downloaded) serves embedding requests. Requests arrive in
bursts of 1-64 short texts (8-96 tokens, ~28 on average: search queries and titles); the server
drains its queue into one batch per burst, "tokenizes" it (synthetic token ids) with the settings
copied from the model card, padding="max_length" and max_length=512, and runs the encoder in fp32
(the model was never cast to half precision) under torch.inference_mode, with the padding mask
passed to scaled_dot_product_attention. The embedding is the mask-weighted mean of the last layer,
L2-normalised and returned with .cpu().numpy(). No NVTX. 3 warm-up bursts, then 160.

The last line printed gives the encoder's GPU time (CUDA events around every forward) against the
loop's total, the number of bursts, and the share of real tokens among the padded positions.
"""
import math
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = "cuda"
VOCAB = 30522
MAX_LENGTH = 512
D_MODEL = 768
HEADS = 12
LAYERS = 12
FFN = 3072
WARMUP = 3
BURSTS = 160
PAD_ID, CLS_ID, SEP_ID = 0, 101, 102


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.out = nn.Linear(D_MODEL, D_MODEL)

    def forward(self, x, mask):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, D_MODEL // HEADS).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out(y.transpose(1, 2).reshape(b, t, D_MODEL))


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = SelfAttention()
        self.ln1 = nn.LayerNorm(D_MODEL, eps=1e-12)
        self.fc1 = nn.Linear(D_MODEL, FFN)
        self.fc2 = nn.Linear(FFN, D_MODEL)
        self.ln2 = nn.LayerNorm(D_MODEL, eps=1e-12)

    def forward(self, x, mask):
        x = self.ln1(x + self.attn(x, mask))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Embedding(MAX_LENGTH, D_MODEL)
        self.typ = nn.Embedding(2, D_MODEL)
        self.ln = nn.LayerNorm(D_MODEL, eps=1e-12)
        self.layers = nn.ModuleList(EncoderLayer() for _ in range(LAYERS))

    def forward(self, ids, attention_mask):
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.ln(self.tok(ids) + self.pos(positions)[None] + self.typ(torch.zeros_like(ids)))
        mask = attention_mask[:, None, None, :].bool()          # keys that are real tokens
        for layer in self.layers:
            x = layer(x, mask)
        return x


def tokenize(texts, padding="max_length", max_length=MAX_LENGTH):
    """Stand-in for the tokenizer call: [CLS] ids [SEP], padded to max_length."""
    ids = np.full((len(texts), max_length), PAD_ID, dtype=np.int64)
    mask = np.zeros((len(texts), max_length), dtype=np.int64)
    for i, t in enumerate(texts):
        row = [CLS_ID] + t[:max_length - 2] + [SEP_ID]
        ids[i, :len(row)] = row
        mask[i, :len(row)] = 1
    return {"input_ids": ids, "attention_mask": mask}


def request_stream(rng, n_bursts):
    for _ in range(n_bursts):
        n = int(rng.integers(1, 65))
        lengths = np.clip(rng.lognormal(math.log(24), 0.5, size=n), 8, 96).astype(int)
        yield [list(rng.integers(1000, VOCAB, size=int(k))) for k in lengths]


def main():
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    model = Encoder().to(DEVICE).eval()
    start_ev = torch.cuda.Event(enable_timing=True)
    end_ev = torch.cuda.Event(enable_timing=True)

    served = 0
    forward_gpu_s = 0.0
    real_tokens = padded_tokens = 0
    index = {}
    loop_start = None
    for b, texts in enumerate(request_stream(rng, WARMUP + BURSTS)):
        if b == WARMUP:
            torch.cuda.synchronize()
            loop_start = time.perf_counter()
        enc = tokenize(texts)
        ids = torch.from_numpy(enc["input_ids"]).to(DEVICE)
        mask = torch.from_numpy(enc["attention_mask"]).to(DEVICE)
        with torch.inference_mode():
            start_ev.record()
            hidden = model(ids, mask)
            end_ev.record()
            m = mask[..., None].to(hidden.dtype)
            emb = F.normalize((hidden * m).sum(1) / m.sum(1), dim=-1)
            vectors = emb.cpu().numpy()
        if b >= WARMUP:
            forward_gpu_s += start_ev.elapsed_time(end_ev) / 1e3
            real_tokens += int(enc["attention_mask"].sum())
            padded_tokens += enc["attention_mask"].size
            served += len(texts)
        for i, v in enumerate(vectors):
            index[(b, i)] = v
        if b % 40 == 0:
            print(f"burst {b}: {len(texts)} texts, {served} served", flush=True)
    loop_s = time.perf_counter() - loop_start
    print(f"gpu: encoder forward {forward_gpu_s:.2f} s on the GPU (CUDA events) of loop "
          f"{loop_s:.2f} s; {BURSTS} bursts, {served} texts; real tokens "
          f"{100 * real_tokens / padded_tokens:.1f}% of the {padded_tokens} padded positions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
