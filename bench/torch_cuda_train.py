#!/usr/bin/env python3
"""torch_cuda_train: a small PyTorch training loop for the GPU proof (scripts/gpu-proof.sh).

A CNN on random 32x32 images, SGD, pinned host batches copied with non_blocking=True, the loss
read back every 10 steps. The measured steps run inside the NVTX range "train" (so a trainprof
trace can be cut to exactly what torch.profiler sees) and each step inside "step". Run it
plain, under `trainprof record`, or with --torch-profiler FILE (torch.profiler around the
measured steps, CPU + CUDA activities, Chrome JSON written to FILE); never both tools at once:
CUPTI has one subscriber per process.

Writes --summary FILE: {"tool", "steps", "step_ms" (every measured step), "median_step_ms",
"device", "torch"}. Exit 77 when torch or the requested device is missing."""
import argparse
import json
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--torch-profiler", metavar="FILE")
    ap.add_argument("--tool", default="none", help="label for the summary")
    ap.add_argument("--summary", required=True)
    a = ap.parse_args()
    try:
        import torch
        import torch.nn as nn
    except ImportError as e:
        print("torch_cuda_train: no torch (%s)" % e)
        sys.exit(77)
    if a.device == "cuda" and not torch.cuda.is_available():
        print("torch_cuda_train: no CUDA device")
        sys.exit(77)
    dev = torch.device(a.device)
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(64 * 16, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    pin = a.device == "cuda"
    xs = [torch.randn(a.batch, 3, 32, 32).pin_memory() if pin else torch.randn(a.batch, 3, 32, 32)
          for _ in range(4)]
    ys = [torch.randint(0, 10, (a.batch,)) for _ in range(4)]
    if pin:
        ys = [y.pin_memory() for y in ys]
    nvtx = torch.cuda.nvtx if a.device == "cuda" else None

    def step(i):
        x = xs[i % 4].to(dev, non_blocking=True)
        y = ys[i % 4].to(dev, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if i % 10 == 0:
            loss.item()  # a read-back every 10 steps, as training loops log

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    for i in range(a.warmup):
        step(i)
    sync()
    times = []

    def measured():
        if nvtx:
            nvtx.range_push("train")
        for i in range(a.steps):
            t0 = time.perf_counter()
            if nvtx:
                nvtx.range_push("step")
            step(i)
            sync()
            if nvtx:
                nvtx.range_pop()
            times.append((time.perf_counter() - t0) * 1e3)
        if nvtx:
            nvtx.range_pop()

    if a.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if a.device == "cuda" else [])
        with profile(activities=acts) as prof:
            measured()
        prof.export_chrome_trace(a.torch_profiler)
    else:
        measured()
    with open(a.summary, "w") as f:
        json.dump({"tool": a.tool, "steps": a.steps, "step_ms": times,
                   "median_step_ms": statistics.median(times), "device": a.device,
                   "torch": torch.__version__}, f)


main()
