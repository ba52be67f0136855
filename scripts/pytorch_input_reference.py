#!/usr/bin/env python3
"""PyTorch's standard ImageNet input recipe on a JPEG ImageFolder, for comparison with gpubench's `data: folder`.

torchvision.datasets.ImageFolder + PIL + RandomResizedCrop(224) / RandomHorizontalFlip / ToTensor / Normalize, fed
by a DataLoader (workers, pinned memory), as torchvision's references/classification/train.py does.

  --mode per-core   decode + augment in this process, one image at a time (images/s on one core)
  --mode loader     the DataLoader alone, --workers processes (images/s delivered)
  --mode train      ResNet-50 training fed by the DataLoader (bf16 or fp16 autocast, channels_last, SGD)
Prints one JSON line: {"mode", "images", "seconds", "img_per_s", ...}.
"""
import argparse
import json
import time

import torch
import torchvision
from torchvision import transforms


def dataset(path):
    tf = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    return torchvision.datasets.ImageFolder(path, tf)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--mode", choices=["per-core", "loader", "train"], default="loader")
    ap.add_argument("--workers", type=int, default=15)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--images", type=int, default=0, help="images to time (default: the whole folder)")
    ap.add_argument("--precision", choices=["bf16", "fp16"], default="bf16")
    ap.add_argument("--warmup-steps", type=int, default=10)
    ap.add_argument("--steps", type=int, default=0, help="train: timed steps (default: one epoch)")
    a = ap.parse_args()
    ds = dataset(a.path)
    n = a.images or len(ds)
    out = {"mode": a.mode, "path": a.path, "torch": torch.__version__, "torchvision": torchvision.__version__}
    if a.mode == "per-core":
        torch.set_num_threads(1)
        idx = torch.randperm(len(ds))[:n].tolist()
        for i in idx[:20]:
            ds[i]
        t0 = time.perf_counter()
        for i in idx:
            ds[i]
        dt = time.perf_counter() - t0
        out.update(images=n, seconds=dt, img_per_s=n / dt)
    else:
        loader = torch.utils.data.DataLoader(ds, batch_size=a.batch_size, shuffle=True, num_workers=a.workers,
                                             pin_memory=True, drop_last=True, persistent_workers=True,
                                             prefetch_factor=4)
        if a.mode == "loader":
            it = iter(loader)
            next(it)  # workers started
            t0 = time.perf_counter()
            count = 0
            for x, y in it:
                count += x.shape[0]
            dt = time.perf_counter() - t0
            out.update(images=count, seconds=dt, img_per_s=count / dt, workers=a.workers)
        else:
            dev = torch.device("cuda")
            model = torchvision.models.resnet50().to(dev).to(memory_format=torch.channels_last)
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
            dtype = torch.bfloat16 if a.precision == "bf16" else torch.float16
            scaler = torch.amp.GradScaler(enabled=a.precision == "fp16")
            crit = torch.nn.CrossEntropyLoss()
            torch.backends.cudnn.benchmark = True

            def step(x, y):
                x = x.to(dev, non_blocking=True).contiguous(memory_format=torch.channels_last)
                y = y.to(dev, non_blocking=True)
                with torch.autocast("cuda", dtype=dtype):
                    loss = crit(model(x), y)
                opt.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()

            it = iter(loader)
            for _ in range(a.warmup_steps):
                x, y = next(it)
                step(x, y)
            torch.cuda.synchronize()
            steps = a.steps or len(loader)
            t0 = time.perf_counter()
            done = 0
            it = iter(loader)  # a fresh epoch, as gpubench times one
            for x, y in it:
                step(x, y)
                done += 1
                if done >= steps:
                    break
            torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            count = done * a.batch_size
            out.update(images=count, seconds=dt, img_per_s=count / dt, workers=a.workers, precision=a.precision,
                       batch_size=a.batch_size)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
