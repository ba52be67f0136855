"""ResNet-50's stem convolution (3 -> 64 channels, 7x7, stride 2, pad 3) at bs 256, 224 px, forward and weight
gradient, timed with CUDA events for each dtype and memory format, with the kernels cuDNN picks (torch.profiler).
Why: gpubench's bf16 step pays 1.55 + 0.89 ms in cuDNN's 3-channel bf16 kernel where fp16 pays 0.40 + 0.48 ms.
Usage: python3 stem_conv.py > stem_conv.txt"""
import torch
import torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity

torch.backends.cudnn.benchmark = True
dev = "cuda"


def case(dtype, x_fmt, w_fmt, out_to_cl=False, steps=20):
    x = torch.randn(256, 3, 224, 224, device=dev, dtype=dtype).contiguous(memory_format=x_fmt)
    w = torch.randn(64, 3, 7, 7, device=dev, dtype=dtype).contiguous(memory_format=w_fmt).requires_grad_()
    g = torch.randn(256, 64, 112, 112, device=dev, dtype=dtype).contiguous(memory_format=torch.channels_last)

    def fwd():
        y = F.conv2d(x, w, stride=2, padding=3)
        if out_to_cl:
            y = y.contiguous(memory_format=torch.channels_last)
        return y

    def step():
        y = fwd()
        (gw,) = torch.autograd.grad(y, w, g)
        return gw

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    times = {}
    for name, fn in (("forward", fwd), ("forward+wgrad", step)):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(steps):
            fn()
        b.record()
        torch.cuda.synchronize()
        times[name] = a.elapsed_time(b) / steps
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    kernels = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            k = kernels.setdefault(e.name, [0, 0.0])
            k[0] += 1
            k[1] += e.device_time / 1000.0
    return times, kernels


fmts = {"nchw": torch.contiguous_format, "nhwc": torch.channels_last}
for dtype in (torch.float16, torch.bfloat16):
    for xf in ("nhwc", "nchw"):
        for wf in ("nhwc", "nchw"):
            for to_cl in ((False, True) if (xf, wf) == ("nchw", "nchw") else (False,)):
                t, ks = case(dtype, fmts[xf], fmts[wf], to_cl)
                print(f"{str(dtype)[6:]:9s} x {xf} w {wf}{' then ->nhwc' if to_cl else ''}: forward {t['forward']:.3f} ms, "
                      f"forward+wgrad {t['forward+wgrad']:.3f} ms", flush=True)
                for name, (n, ms) in sorted(ks.items(), key=lambda kv: -kv[1][1])[:4]:
                    print(f"      {ms / 3:7.3f} ms/step  x{n // 3}  {name[:150]}")
