#!/usr/bin/env python3
"""Exports torchvision's resnet50 for the C++ parity test (tests/engine/torchvision_parity_test.cpp).

Writes OUTDIR/resnet50_torchvision.pt (torch.save, read in C++ with torch::pickle_load) holding:
  param_names/param_shapes, buffer_names/buffer_shapes  - torchvision's enumeration order
  state        - every parameter and buffer, with BatchNorm statistics perturbed so eval-mode BN is not an identity
  input/output - a 2x3x64x64 batch and torchvision's eval-mode logits for it
  fresh_std    - per-parameter standard deviation of a freshly initialised model (initialisation check)
No weights are downloaded: the model is built from torchvision's code with random initialisation.
"""
import pathlib
import sys

import torch
import torchvision


def main() -> int:
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "reference")
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    fresh = torchvision.models.resnet50()
    fresh_std = {n: float(p.detach().std()) for n, p in fresh.named_parameters() if p.numel() >= 4096}

    model = torchvision.models.resnet50()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
    model.eval()
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        y = model(x)
    params = list(model.named_parameters())
    buffers = list(model.named_buffers())
    torch.save(
        {
            "param_names": [n for n, _ in params],
            "param_shapes": [list(p.shape) for _, p in params],
            "buffer_names": [n for n, _ in buffers],
            "buffer_shapes": [list(b.shape) for _, b in buffers],
            "state": {k: v.clone() for k, v in model.state_dict().items()},
            "input": x,
            "output": y,
            "fresh_std": fresh_std,
        },
        out / "resnet50_torchvision.pt",
    )
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}: "
          f"{sum(p.numel() for _, p in params)} parameters exported to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
