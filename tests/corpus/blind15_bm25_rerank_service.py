"""Blind batch 15: a search service with a pure-Python BM25 retriever and a GPU cross-encoder.

A documentation-search service answers each request in two rounds, the way many retrieval
prototypes do:

1. BM25 over an inverted index kept as Python dicts (term -> list of (doc id, term frequency)),
   scored in a Python loop over the postings of each query term, then `heapq.nlargest` for the
   top 64 candidates;
2. a cross-encoder (a 4-layer transformer, width 256, bf16 autocast) scores the 64
   (query, document) pairs at 96 tokens on the GPU; the scores come back with `.tolist()`;
3. pseudo-relevance feedback: the words of the 8 best-ranked documents are counted in Python
   (`collections.Counter`), weighted by IDF, and the 8 best new terms are added to the query;
4. BM25 again for the expanded query, and the cross-encoder again on the new candidates.

So each request runs two model calls of a few milliseconds of GPU time each, separated by tens of
milliseconds of Python. The corpus is synthetic: 40,000 documents of 40-200 words drawn from a
Zipf-distributed vocabulary of 30,000 words; queries are 3-6 words whose frequency ranks are log-uniform between 8 and 3,000. The
index is built once before the loop. NVTX: one `search_request` range per request
(torch.cuda.nvtx). 3 warm-up requests, then 150.

Ground truth printed at the end: seconds in the Python retrieval (BM25, top-k, feedback terms,
building the pair tensors) and seconds in the two cross-encoder calls (launches, GPU time and the
read-back), against the loop's seconds; the number of requests.
"""
import collections
import heapq
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

dev = torch.device("cuda")
torch.manual_seed(0)

N_DOCS, VOCAB = 40_000, 30_000
TOP_K, FEEDBACK_DOCS, EXPAND_TERMS = 64, 8, 8
SEQ, Q_LEN = 96, 16
K1, B = 1.2, 0.75
WARMUP, REQUESTS = 3, 150
CLS, SEP, PAD = 1, 2, 0


def build_corpus(rng):
    ranks = np.arange(1, VOCAB + 1)
    p = 1.0 / ranks ** 1.07
    p /= p.sum()
    lengths = rng.integers(40, 201, N_DOCS)
    words = rng.choice(VOCAB, size=int(lengths.sum()), p=p) + 3     # ids 0-2 are special tokens
    docs, o = [], 0
    for n in lengths:
        docs.append(words[o:o + n].tolist())
        o += n
    return docs


def build_index(docs):
    postings = collections.defaultdict(list)
    for d, words in enumerate(docs):
        for w, tf in collections.Counter(words).items():
            postings[w].append((d, tf))
    avgdl = sum(map(len, docs)) / len(docs)
    idf = {w: math.log(1 + (len(docs) - len(p) + 0.5) / (len(p) + 0.5)) for w, p in postings.items()}
    return postings, idf, avgdl


def bm25_scores(query, postings, idf, doc_len, avgdl):
    scores = collections.defaultdict(float)
    for w in query:
        plist = postings.get(w)
        if not plist:
            continue
        weight = idf[w]
        for d, tf in plist:
            norm = K1 * (1 - B + B * doc_len[d] / avgdl)
            scores[d] += weight * tf * (K1 + 1) / (tf + norm)
    return heapq.nlargest(TOP_K, scores.items(), key=lambda kv: kv[1])


def expand_query(query, ranked_docs, docs, idf):
    counts = collections.Counter()
    for d in ranked_docs[:FEEDBACK_DOCS]:
        counts.update(docs[d])
    weighted = sorted(((c * idf.get(w, 0.0), w) for w, c in counts.items() if w not in query), reverse=True)
    return list(query) + [w for _, w in weighted[:EXPAND_TERMS]]


def pair_tensor(query, cand, docs):
    q = [CLS] + query[:Q_LEN - 2] + [SEP]
    rows = []
    for d, _ in cand:
        row = (q + docs[d])[:SEQ - 1] + [SEP]
        rows.append(row + [PAD] * (SEQ - len(row)))
    return torch.tensor(rows, dtype=torch.long)


class CrossEncoder(nn.Module):
    def __init__(self, width=256, layers=4, heads=4):
        super().__init__()
        self.tok = nn.Embedding(VOCAB + 3, width)
        self.pos = nn.Parameter(torch.randn(SEQ, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.score = nn.Linear(width, 1)

    def forward(self, ids):
        pad = ids == PAD
        h = self.encoder(self.tok(ids) + self.pos, src_key_padding_mask=pad)
        return self.score(self.norm(h[:, 0])).squeeze(-1)


@torch.inference_mode()
def rerank(model, ids):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        s = model(ids.to(dev, non_blocking=True))
    return s.float().cpu().tolist()


def main():
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    docs = build_corpus(rng)
    postings, idf, avgdl = build_index(docs)
    doc_len = [len(d) for d in docs]
    print(f"index: {N_DOCS} documents, {len(postings)} terms, {sum(map(len, postings.values()))} postings "
          f"({time.perf_counter() - t0:.1f} s)", flush=True)
    model = CrossEncoder().to(dev).eval()
    # Queries: 3-6 words, frequency ranks log-uniform between 8 and 3,000.
    queries = [(np.exp(rng.uniform(math.log(8), math.log(3000), rng.integers(3, 7))).astype(int) + 3).tolist()
               for _ in range(WARMUP + REQUESTS)]

    retrieval_s = model_s = 0.0

    def handle(query, timed):
        nonlocal retrieval_s, model_s
        t0 = time.perf_counter()
        cand = bm25_scores(query, postings, idf, doc_len, avgdl)
        ids = pair_tensor(query, cand, docs)
        t1 = time.perf_counter()
        scores = rerank(model, ids)
        t2 = time.perf_counter()
        ranked = [cand[i][0] for i in sorted(range(len(cand)), key=scores.__getitem__, reverse=True)]
        expanded = expand_query(query, ranked, docs, idf)
        cand2 = bm25_scores(expanded, postings, idf, doc_len, avgdl)
        ids2 = pair_tensor(expanded, cand2, docs)
        t3 = time.perf_counter()
        scores2 = rerank(model, ids2)
        t4 = time.perf_counter()
        best = max(range(len(cand2)), key=scores2.__getitem__)
        if timed:
            retrieval_s += (t1 - t0) + (t3 - t2)
            model_s += (t2 - t1) + (t4 - t3)
        return cand2[best][0]

    for q in queries[:WARMUP]:
        handle(q, False)
    torch.cuda.synchronize()

    t_loop = time.perf_counter()
    for r, q in enumerate(queries[WARMUP:]):
        torch.cuda.nvtx.range_push("search_request")
        top = handle(q, True)
        torch.cuda.nvtx.range_pop()
        if (r + 1) % 25 == 0:
            print(f"request {r + 1}: top document {top}, {time.perf_counter() - t_loop:.2f} s", flush=True)
    loop = time.perf_counter() - t_loop
    print(f"ground truth: Python retrieval {retrieval_s:.3f} s, cross-encoder calls {model_s:.3f} s, of {loop:.3f} s "
          f"loop (retrieval {100 * retrieval_s / loop:.1f}%, model {100 * model_s / loop:.1f}%); "
          f"{2 * REQUESTS} model calls; {REQUESTS} requests", flush=True)


if __name__ == "__main__":
    main()
