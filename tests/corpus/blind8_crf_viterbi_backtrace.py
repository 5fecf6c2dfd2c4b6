"""Corpus (blind, batch 8): a BiLSTM-CRF tagger whose Viterbi backtrace reads one tag at a time.

Program: a named-entity tagger (word embeddings, 2-layer bidirectional LSTM with 256 hidden
units, emission layer, linear-chain CRF with 17 BIO tags) labels batches of 32 sentences of
8-80 words, as a batch annotation job does over a corpus (inference mode, fp32). The CRF decode
is written as in the popular pytorch-crf package: the Viterbi recursion runs on the GPU,
vectorised over the batch (~4 small kernels per time step), and the backtrace walks each
sentence backwards in Python, reading every tag with .item() (`hist[idx][best_tags[-1]]`),
and slicing the history with a CUDA tensor (`history[:seq_ends[idx]]`, another read). That is
~1,400 .item() round trips a batch, each a 4-byte device-to-host copy and a stream
synchronisation, with the GPU idle in between; the LSTM and the recursion hold ~3-5 ms of the
step. No NVTX. 50 steps; one line printed at the end (the time in the backtrace, and its count
of .item() calls, measured in-program, against the loop's total).

Expected, written before it was recorded (2026-11-26): sync-stall, 65-90% of the steady-state
step time, naming the per-element `.item()` line of the backtrace (thousands of synchronising
reads a step, the GPU idle); 50 steps (within 2). A third to a half of each read's time is
inside the CUDA calls (the copy and the synchronisation), the rest is the two tensor indexings
and the Python around them. Acceptable second reading: copies, if it names the same `.item()`
line and says the cost is the count of tiny synchronous device-to-host copies, not their bytes
(the advice is the same: one `.tolist()` of the history per batch, or the backtrace on the
GPU). A cpu-work finding on the backtrace loop is a near miss (right place; but the cure is to
stop reading one element at a time, not to speed up the Python). Misses: launch-bound (the
recursion's ~320 tiny kernels a step hold ~8-15%), gpu-bound, input-bound.
"""
import random
import time

import torch
from torch import nn

VOCAB, EMBED, HIDDEN, TAGS = 30000, 128, 256, 17
BATCH, MIN_WORDS, MAX_WORDS, STEPS = 32, 8, 80, 50


class CRF(nn.Module):
    def __init__(self, num_tags):
        super().__init__()
        self.start_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.end_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags).uniform_(-0.1, 0.1))
        self.item_calls = 0
        self.backtrace_seconds = 0.0

    def decode(self, emissions, mask):
        """emissions: (seq_len, batch, tags); mask: (seq_len, batch) bool."""
        seq_length, batch_size = mask.shape
        score = self.start_transitions + emissions[0]
        history = []
        for i in range(1, seq_length):
            broadcast_score = score.unsqueeze(2)
            broadcast_emission = emissions[i].unsqueeze(1)
            next_score = broadcast_score + self.transitions + broadcast_emission
            next_score, indices = next_score.max(dim=1)
            score = torch.where(mask[i].unsqueeze(1), next_score, score)
            history.append(indices)
        score += self.end_transitions

        t = time.perf_counter()
        seq_ends = mask.long().sum(dim=0) - 1
        best_tags_list = []
        for idx in range(batch_size):
            _, best_last_tag = score[idx].max(dim=0)
            best_tags = [best_last_tag.item()]
            for hist in reversed(history[:seq_ends[idx]]):
                best_last_tag = hist[idx][best_tags[-1]]
                best_tags.append(best_last_tag.item())
            best_tags.reverse()
            best_tags_list.append(best_tags)
            self.item_calls += len(best_tags) + 1  # + the slice bound read from seq_ends
        self.backtrace_seconds += time.perf_counter() - t
        return best_tags_list


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMBED, padding_idx=0)
        self.lstm = nn.LSTM(EMBED, HIDDEN // 2, num_layers=2, bidirectional=True)
        self.emit = nn.Linear(HIDDEN, TAGS)
        self.crf = CRF(TAGS)

    def forward(self, words, mask):
        h, _ = self.lstm(self.embed(words))
        return self.crf.decode(self.emit(h), mask)


def make_batch(rng):
    lengths = sorted((rng.randint(MIN_WORDS, MAX_WORDS) for _ in range(BATCH)), reverse=True)
    words = torch.zeros(lengths[0], BATCH, dtype=torch.long)
    for b, n in enumerate(lengths):
        words[:n, b] = torch.randint(1, VOCAB, (n,))
    return words, words != 0


def main():
    torch.manual_seed(0)
    rng = random.Random(0)
    model = Tagger().cuda().eval()
    batches = [make_batch(rng) for _ in range(STEPS + 1)]
    with torch.inference_mode():
        words, mask = batches[0]
        model(words.cuda(), mask.cuda())  # warm-up: cuDNN LSTM plans, allocator
    model.crf.item_calls, model.crf.backtrace_seconds = 0, 0.0

    tagged = entities = 0
    start = time.perf_counter()
    with torch.inference_mode():
        for step in range(STEPS):
            words, mask = batches[step + 1]
            paths = model(words.cuda(), mask.cuda())
            tagged += sum(len(p) for p in paths)
            entities += sum(tag % 2 == 1 for p in paths for tag in p)  # B- tags are odd
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    crf = model.crf
    print(f"steps {STEPS}; {tagged} words tagged, {entities} entities; backtrace "
          f"{crf.backtrace_seconds:.2f} s ({crf.item_calls} .item() reads) of loop {total:.2f} s")


if __name__ == "__main__":
    main()
