# Is a 200-step bf16 ResNet-50 curve on one batch (lr 0.02, momentum 0.9) chaotic? Two runs that differ only by a
# 1e-3 relative perturbation of the input images: their largest loss difference relative to the first loss.
import sys, torch, torchvision
torch.set_num_threads(2)
def curve(perturb, steps):
    torch.manual_seed(21)
    net = torchvision.models.resnet50(num_classes=10).to(memory_format=torch.channels_last)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(16, 3, 64, 64, generator=g).contiguous(memory_format=torch.channels_last)
    t = torch.randint(0, 10, (16,), generator=g)
    if perturb: x = x * (1 + 1e-3 * torch.randn(x.shape, generator=g))
    opt = torch.optim.SGD(net.parameters(), lr=float(sys.argv[1]), momentum=0.9)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(net(x), t)
        loss.backward(); opt.step(); out.append(loss.item())
    return out
steps = int(sys.argv[2])
a = curve(False, steps); b = curve(True, steps)
worst = max(abs(p - q) / a[0] for p, q in zip(a, b))
print("lr", sys.argv[1], "largest difference / first loss:", round(worst, 3))
print("every 10th:", [(round(p, 2), round(q, 2)) for p, q in list(zip(a, b))[::10]])
