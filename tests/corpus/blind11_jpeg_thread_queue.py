"""Corpus (blind, batch 11): an image classifier fed through a queue by a JPEG-decoding thread.

Program: ResNet-50 training (torchvision, random init, 100 classes; bf16 autocast, channels_last,
SGD with Nesterov momentum, cudnn.benchmark) on a folder of JPEGs. At start-up the program writes
the "dataset" it would normally read: 512 synthetic photos (smooth colour fields with noise, 500-640
x 375-480, quality 90) in a temporary folder under the current directory (removed at exit). No
DataLoader: a hand-written loader thread shuffles the files every epoch and, for each batch of 64,
maps load_example over a ThreadPoolExecutor of 3 threads (open, decode, RandomResizedCrop to 224
with PIL's resize(box=...), random flip, np.asarray), stacks the images to uint8, pins the batch and
puts it on a queue.Queue of depth 4. The training loop takes batches with queue.get(), uploads with
non_blocking=True, normalises on the GPU and runs the step. The GPU work is real, ~20-35 ms a step
(ResNet-50 forward and backward at 64 x 224^2), but decoding and resizing 64 JPEGs takes longer:
timed here (a slower machine, one usable core, smaller images) at ~3.8 ms an image, ~1.1 ms of it
the JPEG decode and ~1.1 ms the resize, both in Pillow's C code, which lets go of the GIL; opening,
the per-image NumPy generator and the rest hold it. Expected on the device: ~2.5-3.5 ms an image,
~55-80 ms a batch with 3 threads sharing the GIL with each other and with the training loop's ~10 ms
of launches. NVTX: a "train_step" range around the GPU part of each step only (the upload, forward,
backward, optimizer), not around queue.get(). Loss printed every 20 steps. 100 steps, the first 5
with cudnn's autotuning. One line printed at the end: seconds the training loop spent blocked in
queue.get() over steps 5-99, measured in-program, against their total.

Expected, written before it was recorded (2026-11-26): input-bound, 55-88% of the steady step (the
printed queue.get() share is the ground truth), the training thread blocked in queue.get()
(threading's Condition.wait) while the loader's threads run load_example (PIL's JPEG decode and
resize, np.asarray); the GPU busy only during the train_step ranges, idle between them. 100 steps
(within 3; the train_step ranges, which exclude the wait: steps measured from range start to range
start). The trap: inside its NVTX ranges the program looks gpu-bound, and the GPU is busy a good
part of the time. Misses: gpu-bound (whatever share the kernels have inside the ranges), sync-stall
(the blocked thread waits on a Python lock, not on the GPU; loss.item() every 20 steps), cpu-work on
the main thread, launch-bound, copies (9.6 MB a batch, pinned).
Advice that helps: decode in processes (DataLoader with num_workers, or a process pool), a faster
decoder (PIL-SIMD, DALI / nvJPEG on the GPU, torchvision.io.decode_jpeg on the device), smaller
stored images or a pre-resized cache; not GPU-side tuning.
"""
import math
import os
import queue
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from PIL import Image

N_IMAGES, CLASSES = 512, 100
BATCH, STEPS, WARMUP_STEPS = 64, 100, 5
DECODE_THREADS, QUEUE_DEPTH, CROP = 3, 4, 224
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def write_dataset(folder, n):
    rng = np.random.default_rng(0)
    files, labels = [], []
    for i in range(n):
        w, h = int(rng.integers(500, 641)), int(rng.integers(375, 481))
        coarse = rng.integers(0, 256, size=(6, 8, 3), dtype=np.uint8)
        smooth = Image.fromarray(coarse).resize((w, h), Image.Resampling.BICUBIC)
        img = np.asarray(smooth, dtype=np.int16)
        img = img + rng.integers(-18, 19, size=(h, w, 1), dtype=np.int16)
        path = os.path.join(folder, f"img_{i:05d}.jpg")
        Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(path, quality=90)
        files.append(path)
        labels.append(int(rng.integers(0, CLASSES)))
    return files, np.array(labels, dtype=np.int64)


def load_example(job):
    """Open, decode, RandomResizedCrop(224, scale=(0.25, 1)), horizontal flip."""
    path, seed = job
    rng = np.random.default_rng(seed)
    with Image.open(path) as im:
        im = im.convert("RGB")
        w, h = im.size
        for _ in range(10):
            area = w * h * rng.uniform(0.25, 1.0)
            ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
            cw, ch = int(round(math.sqrt(area * ratio))), int(round(math.sqrt(area / ratio)))
            if 0 < cw <= w and 0 < ch <= h:
                break
        else:
            cw, ch = min(w, h), min(w, h)
        x0, y0 = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
        im = im.resize((CROP, CROP), Image.Resampling.BILINEAR, box=(x0, y0, x0 + cw, y0 + ch))
        if rng.random() < 0.5:
            im = im.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        return np.asarray(im)


def loader_thread(files, labels, out, stop):
    pool = ThreadPoolExecutor(DECODE_THREADS, thread_name_prefix="decode")
    epoch = 0
    try:
        while not stop.is_set():
            order = np.random.default_rng(epoch).permutation(len(files))
            for b in range(len(files) // BATCH):
                idx = order[b * BATCH:(b + 1) * BATCH]
                jobs = [(files[i], epoch * len(files) + int(i)) for i in idx]
                images = np.stack(list(pool.map(load_example, jobs)))
                batch = (torch.from_numpy(images).pin_memory(), torch.from_numpy(labels[idx]))
                while not stop.is_set():
                    try:
                        out.put(batch, timeout=0.1)
                        break
                    except queue.Full:
                        pass
                if stop.is_set():
                    return
            epoch += 1
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def main():
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    workdir = tempfile.mkdtemp(prefix="jpegs-", dir=os.getcwd())
    stop = threading.Event()
    try:
        t = time.perf_counter()
        files, labels = write_dataset(workdir, N_IMAGES)
        print(f"wrote {len(files)} JPEGs in {time.perf_counter() - t:.1f} s")

        model = torchvision.models.resnet50(num_classes=CLASSES).cuda()
        model = model.to(memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                              weight_decay=5e-5)
        mean = torch.tensor(MEAN, device="cuda").view(1, 3, 1, 1) * 255
        std = torch.tensor(STD, device="cuda").view(1, 3, 1, 1) * 255

        batches = queue.Queue(maxsize=QUEUE_DEPTH)
        loader = threading.Thread(target=loader_thread, args=(files, labels, batches, stop),
                                  name="loader", daemon=True)
        loader.start()

        waited = 0.0
        start = None
        for step in range(STEPS):
            if step == WARMUP_STEPS:
                torch.cuda.synchronize()
                start = time.perf_counter()
                waited = 0.0
            t0 = time.perf_counter()
            images, targets = batches.get()
            waited += time.perf_counter() - t0

            torch.cuda.nvtx.range_push("train_step")
            x = images.cuda(non_blocking=True).permute(0, 3, 1, 2).float()
            x = ((x - mean) / std).contiguous(memory_format=torch.channels_last)
            y = targets.cuda(non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            torch.cuda.nvtx.range_pop()
            if step % 20 == 0:
                print(f"step {step}: loss {loss.item():.4f}, queue {batches.qsize()}")
        torch.cuda.synchronize()
        total = time.perf_counter() - start
        stop.set()
        loader.join(timeout=10)
        print(f"steps {WARMUP_STEPS}-{STEPS - 1}: blocked in queue.get() {waited:.2f} s "
              f"({100 * waited / total:.0f}%) of loop {total:.2f} s")
    finally:
        stop.set()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
