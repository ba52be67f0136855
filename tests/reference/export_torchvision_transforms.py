#!/usr/bin/env python3
"""Exports torchvision's ImageNet training transforms and PIL's JPEG decoding for tests/engine/transforms_parity_test.cpp.

Writes OUTDIR/transforms/:
  transforms.json - a 97x71 RGB test image (row-major bytes), crop cases (top, left, height, width, flip, size) and,
                    for each, torchvision's normalised output through PIL (the standard recipe: resized_crop on a
                    PIL image, hflip, to_tensor, normalize) and through uint8 tensors (antialias=True)
  gray.jpg, cmyk.jpg, progressive.jpg - JPEGs written by PIL, with PIL's decoding of each (convert("RGB")) in the JSON
"""
import json
import pathlib
import sys

import numpy as np
import torch
from PIL import Image
from torchvision.transforms import InterpolationMode
from torchvision.transforms import functional as F

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def main() -> int:
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "reference") / "transforms"
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    h, w = 71, 97
    yy, xx = np.mgrid[0:h, 0:w]
    arr = np.stack([(xx * 255 // (w - 1)), (yy * 255 // (h - 1)), ((xx * 7 + yy * 13) % 256)], axis=-1).astype(np.int32)
    arr = np.clip(arr + rng.integers(-40, 41, size=arr.shape), 0, 255).astype(np.uint8)
    pil = Image.fromarray(arr, "RGB")
    cases = []
    for top, left, ch, cw, flip, size in [(5, 7, 50, 60, False, 32), (0, 0, 71, 97, True, 48), (10, 20, 40, 30, True, 64),
                                          (3, 3, 66, 90, False, 24), (30, 40, 17, 23, False, 16)]:
        p = F.resized_crop(pil, top, left, ch, cw, [size, size], InterpolationMode.BILINEAR)
        if flip:
            p = F.hflip(p)
        pil_out = F.normalize(F.to_tensor(p), MEAN, STD)
        t = torch.from_numpy(arr).permute(2, 0, 1).contiguous()
        tt = F.resized_crop(t, top, left, ch, cw, [size, size], InterpolationMode.BILINEAR, antialias=True)
        if flip:
            tt = F.hflip(tt)
        tensor_out = F.normalize(tt.float() / 255.0, MEAN, STD)
        cases.append({"top": top, "left": left, "height": ch, "width": cw, "flip": flip, "size": size,
                      "pil": pil_out.flatten().tolist(), "tensor": tensor_out.flatten().tolist()})
    decoded = {}
    Image.fromarray(arr[:, :, 1], "L").save(out / "gray.jpg", quality=90)
    pil.convert("CMYK").save(out / "cmyk.jpg", quality=90)
    pil.save(out / "progressive.jpg", quality=90, progressive=True)
    for name in ("gray", "cmyk", "progressive"):
        rgb = np.asarray(Image.open(out / f"{name}.jpg").convert("RGB"))
        decoded[name] = {"width": rgb.shape[1], "height": rgb.shape[0], "rgb": rgb.flatten().tolist()}
    doc = {"width": w, "height": h, "image": arr.flatten().tolist(), "mean": MEAN, "std": STD, "cases": cases,
           "decoded": decoded}
    (out / "transforms.json").write_text(json.dumps(doc))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
