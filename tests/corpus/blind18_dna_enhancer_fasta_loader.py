"""Enhancer-activity prediction from DNA sequence.

A Basenji-style 1D CNN (a wide first convolution, a dilated residual tower, a multi-task head over
32 cell types) is trained on 2 kb windows cut from a FASTA genome. The genome is written as a
wrapped FASTA file under /tmp and parsed at start-up, the way a lab script reads hg38. Each
training example is cut out of the chromosome string in the Dataset, randomly shifted,
reverse-complemented half the time, sometimes replaced by a dinucleotide-shuffled negative, and
one-hot encoded with a per-base dictionary lookup. Two DataLoader workers do all of that.
"""
import os
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

DEVICE = "cuda"
WORK_DIR = "/tmp/blind18_dna"
N_CHROM = 6
CHROM_LEN = 2_000_000
LINE_WIDTH = 60
SEQ_LEN = 2000
MAX_SHIFT = 3
N_TASKS = 32
N_TRAIN = 9_200
N_VAL = 800
BATCH = 128
WORKERS = 2
EPOCHS = 5
STEPS_PER_EPOCH = 70
LOG_EVERY = 25
EVAL_EVERY = 100
EVAL_BATCHES = 6
NEG_FRACTION = 0.15
WIDTH = 320

ONEHOT = {
    "A": (1.0, 0.0, 0.0, 0.0),
    "C": (0.0, 1.0, 0.0, 0.0),
    "G": (0.0, 0.0, 1.0, 0.0),
    "T": (0.0, 0.0, 0.0, 1.0),
    "N": (0.25, 0.25, 0.25, 0.25),
}
COMPLEMENT = str.maketrans("ACGTN", "TGCAN")


def write_fasta(path, rng):
    """A synthetic genome: GC-varying chromosomes with a few N gaps, wrapped at 60 columns."""
    alphabet = np.frombuffer(b"ACGT", dtype=np.uint8)
    with open(path, "w") as f:
        for c in range(N_CHROM):
            gc = 0.38 + 0.08 * c / N_CHROM
            p = [(1 - gc) / 2, gc / 2, gc / 2, (1 - gc) / 2]
            seq = rng.choice(alphabet, size=CHROM_LEN, p=p)
            for _ in range(4):  # assembly gaps
                s = int(rng.integers(0, CHROM_LEN - 5000))
                seq[s:s + int(rng.integers(500, 5000))] = ord("N")
            text = seq.tobytes().decode()
            f.write(f">chr{c + 1}\n")
            for i in range(0, CHROM_LEN, LINE_WIDTH):
                f.write(text[i:i + LINE_WIDTH])
                f.write("\n")


def read_fasta(path):
    genome, name, lines = {}, None, []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith(">"):
                if name is not None:
                    genome[name] = "".join(lines).upper()
                name, lines = line[1:].split()[0], []
            else:
                lines.append(line)
    if name is not None:
        genome[name] = "".join(lines).upper()
    return genome


def dinucleotide_shuffle(seq, rnd):
    """Altschul-Erikson style: shuffle the successor lists of each base, then walk them."""
    succ = {}
    for a, b in zip(seq, seq[1:]):
        succ.setdefault(a, []).append(b)
    for k in succ:
        rnd.shuffle(succ[k])
    pos = {k: 0 for k in succ}
    out = [seq[0]]
    cur = seq[0]
    for _ in range(len(seq) - 1):
        lst = succ.get(cur)
        if not lst or pos[cur] >= len(lst):
            break
        nxt = lst[pos[cur]]
        pos[cur] += 1
        out.append(nxt)
        cur = nxt
    s = "".join(out)
    return (s + seq[len(s):])[:len(seq)]


class EnhancerWindows(Dataset):
    def __init__(self, genome, intervals, targets, train):
        self.genome = genome
        self.intervals = intervals
        self.targets = targets
        self.train = train

    def __len__(self):
        return len(self.intervals)

    def __getitem__(self, i):
        rnd = random.Random(i * 7919 + random.getrandbits(20)) if self.train else random.Random(i)
        chrom, start = self.intervals[i]
        shift = rnd.randint(-MAX_SHIFT, MAX_SHIFT) if self.train else 0
        s = start + shift
        seq = self.genome[chrom][s:s + SEQ_LEN]
        y = self.targets[i]
        if self.train and rnd.random() < NEG_FRACTION:
            seq = dinucleotide_shuffle(seq, rnd)
            y = np.zeros_like(y)
        if self.train and rnd.random() < 0.5:
            seq = seq.translate(COMPLEMENT)[::-1]
        x = np.array([ONEHOT[c] for c in seq], dtype=np.float32).T.copy()
        gc = (seq.count("G") + seq.count("C")) / len(seq)
        return x, y, np.float32(gc)


class ResBlock(nn.Module):
    def __init__(self, ch, dilation):
        super().__init__()
        self.bn = nn.BatchNorm1d(ch)
        self.conv = nn.Conv1d(ch, ch // 2, 3, padding=dilation, dilation=dilation)
        self.bn2 = nn.BatchNorm1d(ch // 2)
        self.proj = nn.Conv1d(ch // 2, ch, 1)

    def forward(self, x):
        h = self.conv(F.gelu(self.bn(x)))
        h = self.proj(F.gelu(self.bn2(h)))
        return x + h


class EnhancerCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv1d(4, WIDTH, 15, padding=7), nn.BatchNorm1d(WIDTH),
                                  nn.GELU(), nn.MaxPool1d(2))
        self.conv2 = nn.Sequential(nn.Conv1d(WIDTH, WIDTH, 11, padding=5), nn.BatchNorm1d(WIDTH),
                                   nn.GELU(), nn.MaxPool1d(4))
        self.tower = nn.Sequential(*[ResBlock(WIDTH, d) for d in (1, 2, 4, 8, 16)])
        self.pool = nn.MaxPool1d(5)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(WIDTH * (SEQ_LEN // 40), 512),
                                  nn.GELU(), nn.Dropout(0.2), nn.Linear(512, N_TASKS))
        self.gc_head = nn.Linear(1, N_TASKS)

    def forward(self, x, gc):
        h = self.pool(self.tower(self.conv2(self.stem(x))))
        return self.head(h) + self.gc_head(gc[:, None])


def make_loader(ds, shuffle):
    return DataLoader(ds, batch_size=BATCH, shuffle=shuffle, num_workers=WORKERS,
                      pin_memory=True, drop_last=True)


def evaluate(model, val_ds):
    model.eval()
    wait = 0.0
    correct = total = 0.0
    auc_proxy = []
    it = iter(make_loader(val_ds, shuffle=False))
    with torch.no_grad(), torch.autocast(device_type=DEVICE, dtype=torch.bfloat16):
        for _ in range(EVAL_BATCHES):
            t0 = time.perf_counter()
            x, y, gc = next(it)
            wait += time.perf_counter() - t0
            x, y, gc = x.to(DEVICE, non_blocking=True), y.to(DEVICE), gc.to(DEVICE)
            p = torch.sigmoid(model(x, gc).float())
            correct += ((p > 0.5) == (y > 0.5)).float().sum().item()
            total += y.numel()
            pos = p[y > 0.5].mean() if (y > 0.5).any() else p.new_tensor(0.5)
            auc_proxy.append((pos - p[y < 0.5].mean()).item())
    del it
    model.train()
    return correct / total, float(np.mean(auc_proxy)), wait


def main():
    t_start = time.perf_counter()
    os.makedirs(WORK_DIR, exist_ok=True)
    rng = np.random.default_rng(18)
    random.seed(18)
    torch.manual_seed(18)
    fasta = os.path.join(WORK_DIR, "genome.fa")
    write_fasta(fasta, rng)
    genome = read_fasta(fasta)
    names = sorted(genome)

    def sample_intervals(n):
        out = []
        while len(out) < n:
            c = names[int(rng.integers(len(names)))]
            s = int(rng.integers(MAX_SHIFT + 1, CHROM_LEN - SEQ_LEN - MAX_SHIFT - 1))
            if genome[c][s:s + SEQ_LEN].count("N") < SEQ_LEN // 10:
                out.append((c, s))
        return out

    prior = rng.uniform(0.05, 0.4, size=N_TASKS)
    train_iv = sample_intervals(N_TRAIN)
    val_iv = sample_intervals(N_VAL)
    train_y = (rng.random((N_TRAIN, N_TASKS)) < prior).astype(np.float32)
    val_y = (rng.random((N_VAL, N_TASKS)) < prior).astype(np.float32)
    train_ds = EnhancerWindows(genome, train_iv, train_y, train=True)
    val_ds = EnhancerWindows(genome, val_iv, val_y, train=False)
    print(f"genome: {len(genome)} chromosomes, {sum(map(len, genome.values())) / 1e6:.1f} Mb; "
          f"setup {time.perf_counter() - t_start:.1f} s", flush=True)

    torch.backends.cudnn.benchmark = True
    model = EnhancerCNN().to(DEVICE)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    total_steps = EPOCHS * STEPS_PER_EPOCH
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=total_steps)
    pos_weight = torch.full((N_TASKS,), 2.0, device=DEVICE)

    step = 0
    train_wait = eval_wait = 0.0
    running = torch.zeros((), device=DEVICE)
    torch.cuda.synchronize()
    loop_t0 = time.perf_counter()
    for epoch in range(EPOCHS):
        it = iter(make_loader(train_ds, shuffle=True))
        for _ in range(STEPS_PER_EPOCH):
            t0 = time.perf_counter()
            x, y, gc = next(it)
            train_wait += time.perf_counter() - t0
            x = x.to(DEVICE, non_blocking=True)
            y = y.to(DEVICE, non_blocking=True)
            gc = gc.to(DEVICE, non_blocking=True)
            with torch.autocast(device_type=DEVICE, dtype=torch.bfloat16):
                logits = model(x, gc)
            loss = F.binary_cross_entropy_with_logits(logits.float(), y, pos_weight=pos_weight)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            running += loss.detach()
            step += 1
            if step % LOG_EVERY == 0:
                print(f"epoch {epoch} step {step}: loss {running.item() / LOG_EVERY:.4f} "
                      f"lr {sched.get_last_lr()[0]:.2e}", flush=True)
                running.zero_()
            if step % EVAL_EVERY == 0:
                acc, sep, w = evaluate(model, val_ds)
                eval_wait += w
                print(f"  eval step {step}: acc {acc:.3f} separation {sep:+.4f}", flush=True)
        del it
    torch.cuda.synchronize()
    loop = time.perf_counter() - loop_t0

    acc, sep, _ = evaluate(model, val_ds)
    torch.save(model.state_dict(), os.path.join(WORK_DIR, "enhancer_cnn.pt"))
    print(f"final: acc {acc:.3f} separation {sep:+.4f}; {step} steps; "
          f"total {time.perf_counter() - t_start:.1f} s")
    waited = train_wait + eval_wait
    print(f"GROUND TRUTH: seconds in next(loader) {waited:.2f} (train {train_wait:.2f}, "
          f"eval {eval_wait:.2f}) of loop {loop:.2f} ({100 * waited / loop:.1f}%)")


if __name__ == "__main__":
    main()
