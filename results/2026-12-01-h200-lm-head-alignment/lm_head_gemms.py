#!/usr/bin/env python3
"""The LM head's three GEMMs and the cross-entropy of GPT-2 small's step (8192 tokens x 768 -> 50,257 words, bf16),
timed with CUDA events at the vocabulary as it is (50,257, odd: the logits' rows are not 16-byte aligned) and padded
to a multiple of 64 (50,304, nanoGPT's padding) or 8 (50,264). Also the fp32 cross-entropy forward+backward on the
logits, as transformers' loss and gpubench's ATen path compute it. Prints one JSON object."""
import json
import torch
import torch.nn.functional as F


def timed(fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def main():
    dev = torch.device("cuda")
    m, k = 8192, 768
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "tokens": m, "hidden": k}
    h = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    for v in (50257, 50264, 50304):
        w = torch.randn(v, k, device=dev, dtype=torch.bfloat16) * 0.02
        g = torch.randn(m, v, device=dev, dtype=torch.bfloat16)
        fwd = timed(lambda: h @ w.t())
        dgrad = timed(lambda: g @ w)
        wgrad = timed(lambda: g.t() @ h)
        flops = 2 * m * k * v
        out[str(v)] = {"fwd_ms": fwd, "dgrad_ms": dgrad, "wgrad_ms": wgrad,
                       "tflops": {"fwd": flops / fwd / 1e9, "dgrad": flops / dgrad / 1e9, "wgrad": flops / wgrad / 1e9}}
    # the padded buffer sliced back: a view with the aligned stride feeds the fp32 loss
    v = 50257
    labels = torch.randint(0, v, (m,), device=dev)
    logits = (torch.randn(m, v, device=dev, dtype=torch.bfloat16)).requires_grad_(True)

    def ce():
        loss = F.cross_entropy(logits.float(), labels)
        loss.backward()
    out["cross_entropy_fp32_fwd_bwd_ms"] = timed(ce, 10)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
