#!/usr/bin/env python3
"""PyTorch's own number for a gpubench scenario, measured the way gpubench measures it.

Trains torchvision's resnet50, transformers' BertForSequenceClassification, GPT2LMHeadModel (GPT-2 small) or
LlamaForCausalLM (TinyLlama-1.1B's configuration; both with labels = input_ids, transformers' own causal-LM loss) or
diffusers' UNet2DConditionModel (the SD v1.5 configuration, noise-prediction MSE as gpubench's sd-unet) on one synthetic batch already on the GPU (reused every step), with the scenario's batch size, precision, memory format and optimizer, `warmup_steps` untimed steps, then `dataset_size // batch_size` timed
steps. The device is synchronised at both ends of the timed region and timed on the host clock, with CUDA events per step,
as gpubench does. Prints one JSON object (and writes it to --json).

  python3 scripts/pytorch_reference.py --config configs/resnet50.yaml --batch-size 128 --json out.json

Precision names mean what they mean in gpubench: fp32 = TF32 off everywhere; tf32 = TF32 on for matmuls and cuDNN;
bf16 / fp16 = autocast (fp16 with GradScaler); amp = PyTorch AMP: fp16 autocast + GradScaler on GPUs (as gpubench --amp).
The optimizer is torch.optim.SGD / AdamW with PyTorch's default implementation (foreach on CUDA); --fused asks for
the fused kernel instead. --graph captures the whole step (forward, backward, fused optimizer) with torch.cuda.graph
after a side-stream warm-up, PyTorch's documented whole-network recipe, and replays it; --compile wraps the model in
torch.compile (the compilation happens in the warm-up and is reported as warmup_seconds).

--mode generate (gpt2, llama) runs transformers' generate as gpubench's mode generate is measured: a prompt of
--prompt-tokens, then --new-tokens greedy tokens, batch 1 by default; time to first token, prefill and decode
tokens/s and inter-token latencies per repetition (--compile: the static cache with torch.compile). With --graph it runs
gpt-fast's recipe on the same model instead of generate: transformers' static cache, the prompt's forward, then each
decode step (the forward at a position held on the device, the argmax, the token fed back) captured once as a CUDA
graph and replayed per token, so the host launches nothing per token; --graph --compile compiles the decode forward
first (torch.compile, default mode: the CUDA graph is the script's own; --coordinate-descent adds gpt-fast's inductor
settings, coordinate descent tuning among them).

--mode inference runs the model as gpubench's mode inference does: eval mode under torch.inference_mode(), no optimizer,
weights cast to the autocast type (bf16/fp16, as torch_dtype= pipelines load them) with autocast on; per-batch latency
percentiles from the same CUDA events. For sd-unet it is one denoising step as diffusers' StableDiffusionPipeline takes
it: the latents doubled for classifier-free guidance (scale 7.5), the UNet, then DDIMScheduler.step from t=500 to 480.

Under torchrun (WORLD_SIZE > 1) it trains with DistributedDataParallel over NCCL, PyTorch's defaults (25 MB buckets),
each rank on cuda:LOCAL_RANK with the scenario's batch size; an epoch is dataset_size samples over all ranks, and
rank 0 reports the aggregate throughput from the slowest rank's time, as gpubench does.
"""
import argparse
import json
import os
import sys
import time

# Read before torch is imported: importing it may call inductor's cache_dir(), which fills the variable in.
USER_INDUCTOR_CACHE_DIR = os.environ.get("TORCHINDUCTOR_CACHE_DIR")


def inductor_cache_dir(autocast_tag, user_dir, default_dir):
    """torch.compile's cache folder for a run under autocast to `autocast_tag` (bfloat16, float16, fp32): the user's
    TORCHINDUCTOR_CACHE_DIR where set, else one folder per autocast dtype beside inductor's default (torch 2.11's
    AOTAutograd cache does not key the dtype, so one folder for both would hand a bf16 run the fp16 graph)."""
    return user_dir if user_dir else f"{default_dir}-autocast-{autocast_tag}"


def load_scenario(path):
    if not path:
        return {}
    with open(path) as f:
        text = f.read()
    if path.endswith(".json"):
        return json.loads(text)
    import yaml  # PyYAML

    return yaml.safe_load(text) or {}


def gpubench_catalog(path=None):
    """gpubench's model catalog: `gpubench list --format json` (or that JSON saved to `path`)."""
    if path:
        with open(path) as f:
            return json.load(f)
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = os.environ.get("GPUBENCH_BINARY") or os.path.join(root, "build", "gpubench")
    out = subprocess.run([binary, "list", "--format", "json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def model_defaults(model, catalog=None):
    """What a gpubench run of `model` on a GPU resolves to when the scenario sets nothing else."""
    for m in gpubench_catalog(catalog)["models"]:
        if m["name"] == model:
            return m["gpu_defaults"]
    raise SystemExit("gpubench has no model '%s'" % model)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", help="gpubench scenario file (YAML or JSON)")
    p.add_argument("--model", choices=["resnet50", "bert-base", "sd-unet", "gpt2", "llama"])
    p.add_argument("--mode", choices=["train", "inference", "generate"])
    p.add_argument("--prompt-tokens", type=int, help="--mode generate: prompt tokens per sequence (default 512)")
    p.add_argument("--new-tokens", type=int, help="--mode generate: tokens generated after the prompt (default 128)")
    p.add_argument("--repetitions", type=int, default=5, help="--mode generate: timed generations (default 5)")
    p.add_argument("--latent-size", type=int, help="sd-unet: latent height and width (default 64: 512 px images)")
    p.add_argument("--seq-len", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--fused", action="store_true", help="fused optimizer kernel (PyTorch's default is foreach)")
    p.add_argument("--graph", action="store_true", help="capture the whole step in a CUDA graph (implies --fused)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--coordinate-descent", action="store_true",
                   help="--mode generate --graph --compile: gpt-fast's inductor settings (coordinate descent tuning)")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--precision", choices=["fp32", "tf32", "bf16", "fp16", "amp", "fp8"],
                   help="fp8: torchao's float8 training (tensorwise scaling) of the Linear layers, bf16 autocast "
                        "around them, the LM head and classifiers kept in bf16 as gpubench's default (needs torchao)")
    p.add_argument("--memory-format", choices=["auto", "contiguous", "channels_last"])
    p.add_argument("--dataset-size", type=int, help="samples per timed epoch")
    p.add_argument("--warmup-steps", type=int)
    p.add_argument("--image-size", type=int)
    p.add_argument("--device", default=None)
    p.add_argument("--json", help="also write the result here")
    p.add_argument("--trace", help="after the timed steps, profile --trace-steps more with torch.profiler and write "
                   "the Chrome trace here (steps marked gpubench::profiled_step, as gpubench --profile does)")
    p.add_argument("--trace-steps", type=int, default=5)
    p.add_argument("--catalog", help="gpubench's model catalog (`gpubench list --format json` saved to a file); default: "
                   "ask $GPUBENCH_BINARY, else build/gpubench")
    a = p.parse_args(argv)
    s = load_scenario(a.config)
    opt = s.get("optimizer", {})
    if isinstance(opt, str):
        opt = {"name": opt}
    model = a.model or s.get("model", "resnet50")
    # Every default is gpubench's own, as `gpubench list --format json` publishes it (a GPU run's resolved scenario):
    # nothing here repeats the registry.
    d = model_defaults(model, a.catalog)
    d_opt = d["optimizer"]
    same_optimizer = opt.get("name", d_opt["name"]) == d_opt["name"]
    fallback = {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4} if opt.get("name") == "sgd" else \
               {"lr": 1e-3, "weight_decay": 1e-2}  # PyTorch's defaults when the scenario names another optimizer
    def opt_value(key):
        if key in opt:
            return opt[key]
        return d_opt.get(key) if same_optimizer else fallback.get(key, d_opt.get(key))
    def key(name):
        return s.get(name, d.get(name))
    cfg = {
        "model": model,
        "mode": a.mode or s.get("mode", d["mode"]),
        "seq_len": a.seq_len or key("seq_len"),
        "num_labels": key("num_labels"),
        "fused": a.fused or a.graph,
        "graph": a.graph,
        "compile": a.compile,
        "coordinate_descent": a.coordinate_descent,
        "batch_size": a.batch_size or key("batch_size"),
        "latent_size": a.latent_size or key("latent_size"),
        "precision": a.precision or key("precision"),
        "memory_format": a.memory_format or s.get("memory_format", "auto"),
        "dataset_size": a.dataset_size or key("dataset_size"),
        "warmup_steps": a.warmup_steps if a.warmup_steps is not None else key("warmup_steps"),
        "image_size": a.image_size or key("image_size"),
        "num_classes": key("num_classes"),
        "device": a.device or s.get("device", "cuda"),
        # the decoders' shapes (null: the reference model's own)
        "layers": key("layers"), "width": key("width") or key("hidden"), "heads": key("heads"),
        "kv_heads": key("kv_heads"), "intermediate": key("intermediate"), "vocab": key("vocab"),
        "optimizer": {"name": opt.get("name", d_opt["name"]),
                      "lr": a.lr or opt_value("lr"),
                      "momentum": opt_value("momentum") if opt_value("momentum") is not None else 0.9,
                      "weight_decay": opt_value("weight_decay"),
                      "nesterov": opt.get("nesterov", bool(d_opt.get("nesterov")))},
        "prompt_tokens": a.prompt_tokens or s.get("prompt_tokens", 512),
        "new_tokens": a.new_tokens or s.get("new_tokens", 128),
        "repetitions": a.repetitions,
        "json": a.json,
        "trace": a.trace,
        "trace_steps": a.trace_steps,
    }
    if cfg["dataset_size"] < cfg["batch_size"]:
        p.error("dataset_size is smaller than batch_size")
    if cfg["mode"] == "generate":
        if model not in ("gpt2", "llama"):
            p.error("--mode generate runs gpt2 and llama")
        if a.batch_size is None and "batch_size" not in s:
            cfg["batch_size"] = 1  # as gpubench's generate
        cfg["dataset_size"] = max(cfg["dataset_size"], cfg["batch_size"])
    if cfg["mode"] != "train" and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        p.error("--mode inference under torchrun is not supported here")
    if model == "sd-unet" and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        p.error("sd-unet under torchrun is not supported here")
    if (a.graph or a.compile) and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        p.error("--graph/--compile under torchrun are not supported here")
    if a.graph and cfg["precision"] == "fp16" and cfg["mode"] == "train":
        p.error("--graph with fp16: GradScaler's skip decision is not captured here; use bf16 or fp32")
    return cfg


def generate_reference(cfg, model, dev, precision, library_version):
    """transformers' generate with gpubench's shapes: greedy, a KV cache, weights in the autocast type, new_tokens
    tokens whatever they are (no end-of-sequence stop). Time to first token is the prefill's forward (with its cache) to its
    argmax; a CUDA event per generated token (recorded by a logits processor as each token is chosen) gives the
    inter-token latencies. --compile: the static cache and torch.compile of the forward (transformers' documented
    recipe for fast generation), reported as its own mode; its compilation happens in the warm-up."""
    import torch
    import transformers

    prompt = generate_prompt(cfg, model, dev, precision)
    bs, prompt_len, fresh = cfg["batch_size"], cfg["prompt_tokens"], cfg["new_tokens"]
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    mask = torch.ones_like(prompt)
    extra = {}
    mode = "eager"
    compile_error = None
    if cfg["compile"]:
        try:
            # mode="reduce-overhead" (CUDA graphs) stops in transformers 5's static cache ("accessing tensor output
            # of CUDAGraphs that has been overwritten", H200, 2026-12-01): the default mode runs.
            model.forward = torch.compile(model.forward, fullgraph=True)
            extra = {"cache_implementation": "static"}
            mode = "compile_static_cache"
        except Exception as e:  # noqa: BLE001: the record says why it did not run
            compile_error = repr(e)

    class Marks(transformers.LogitsProcessor):
        def __init__(self):
            self.events = []

        def __call__(self, input_ids, scores):
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            self.events.append(e)
            return scores

    def once(marks=None):
        with torch.inference_mode():
            return model.generate(prompt, attention_mask=mask, max_new_tokens=fresh, min_new_tokens=fresh,
                                  do_sample=False, logits_processor=[marks] if marks else None, **extra)

    t0 = time.perf_counter()
    for _ in range(2 if cfg["compile"] else 1):
        once()
    torch.cuda.synchronize(dev)
    warmup_s = time.perf_counter() - t0
    reps = []
    for _ in range(cfg["repetitions"]):
        marks = Marks()
        start = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        start.record()
        out = once(marks)
        torch.cuda.synchronize(dev)
        e2e = time.perf_counter() - t0
        assert out.shape[1] == prompt_len + fresh, out.shape
        ttft = start.elapsed_time(marks.events[0])
        itl = [marks.events[i].elapsed_time(marks.events[i + 1]) for i in range(len(marks.events) - 1)]
        reps.append(generation(bs, prompt_len, ttft, e2e, itl))
    return emit(generate_record(cfg, reps, mode, warmup_s, compile_error, library_version, dev, precision),
                cfg["json"])


def generate_prompt(cfg, model, dev, precision):
    """Both generate references' start: the model in eval mode with its weights in the precision's type (as gpubench
    holds them), and the prompt, [batch_size, prompt_tokens] random token ids (seed 0) on the device."""
    import torch

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    model.eval()
    if dtype is not None:
        model.to(dtype)
    torch.manual_seed(0)
    return torch.randint(0, model.config.vocab_size, (cfg["batch_size"], cfg["prompt_tokens"]), device=dev)


def generation(bs, prompt_len, ttft_ms, e2e_s, itl_ms):
    """One timed generation's figures from its TTFT, end-to-end time and inter-token latencies."""
    return {"ttft_ms": ttft_ms, "e2e_ms": e2e_s * 1e3, "itl_ms": itl_ms,
            "prefill_tokens_per_s": bs * prompt_len / (ttft_ms / 1e3),
            "decode_tokens_per_s": bs * len(itl_ms) / (sum(itl_ms) / 1e3) if itl_ms else None}


def generate_record(cfg, reps, mode, warmup_s, compile_error, library_version, dev, precision, **extra):
    """The generate reference's record: medians over the repetitions, ITL percentiles over every token of them."""
    import torch

    def median(v):
        v = sorted(x for x in v if x is not None)
        return v[len(v) // 2] if v else None

    itl_all = sorted(x for r in reps for x in r["itl_ms"])

    def pct(q):
        at = (len(itl_all) - 1) * q / 100.0
        lo = int(at)
        hi = min(lo + 1, len(itl_all) - 1)
        return itl_all[lo] + (itl_all[hi] - itl_all[lo]) * (at - lo)
    return {
        "tool": "pytorch", "torch_version": torch.__version__, "model_library_version": library_version,
        "device_name": torch.cuda.get_device_name(dev), "mode": mode, "generate": True,
        "scenario": {k: v for k, v in cfg.items() if k not in ("json", "trace", "trace_steps")},
        "precision_resolved": precision, "batch_size": cfg["batch_size"], "prompt_tokens": cfg["prompt_tokens"],
        "new_tokens": cfg["new_tokens"], "warmup_seconds": warmup_s, "compile_error": compile_error,
        "ttft_ms": median(r["ttft_ms"] for r in reps),
        "prefill_tokens_per_s": median(r["prefill_tokens_per_s"] for r in reps),
        "decode_tokens_per_s": median(r["decode_tokens_per_s"] for r in reps),
        "e2e_latency_ms": median(r["e2e_ms"] for r in reps),
        "itl_p50_ms": pct(50) if itl_all else None, "itl_p90_ms": pct(90) if itl_all else None,
        "itl_p99_ms": pct(99) if itl_all else None,
        "peak_allocated_bytes": torch.cuda.max_memory_allocated(dev), **extra,
        "repetitions": [{k: v for k, v in r.items() if k != "itl_ms"} for r in reps],
    }


def static_cache_decoder(model, prompt, fresh, forward=None):
    """gpt-fast's decode loop over transformers' static cache, for `model` and `prompt` [batch, P]: returns (prefill,
    step, tokens). prefill() empties the cache, runs the prompt's forward (positions 0..P-1) and puts its argmax, the
    first new token, in the token buffer; step() feeds that token at the position held in a device tensor, writes the
    argmax back into it and moves the position on, with no host work (so it can be captured as a CUDA graph); tokens
    [batch, fresh] holds every new token. `forward`: the decode step's forward (model.forward, or a compiled one)."""
    import torch
    import transformers

    bs, plen = prompt.shape
    dev = prompt.device
    cache = transformers.StaticCache(config=model.config, max_cache_len=plen + fresh)
    forward = forward or model.forward
    token = torch.zeros(bs, 1, dtype=torch.long, device=dev)
    pos = torch.zeros(1, dtype=torch.long, device=dev)
    tokens = torch.zeros(bs, fresh, dtype=torch.long, device=dev)

    def prefill():
        with torch.inference_mode():
            # transformers 5's static layers keep their own fill count on the device (and write there, whatever
            # cache_position says): a new prompt needs it reset
            cache.reset()
            positions = torch.arange(plen, device=dev)
            logits = model(input_ids=prompt, cache_position=positions, past_key_values=cache, use_cache=True).logits
            token.copy_(logits[:, -1:].argmax(-1))
            tokens[:, :1].copy_(token)
            pos.fill_(plen)

    def step():
        with torch.inference_mode():
            logits = forward(input_ids=token, position_ids=pos.view(1, 1).expand(bs, 1), cache_position=pos,
                             past_key_values=cache, use_cache=True).logits
            token.copy_(logits[:, -1:].argmax(-1))
            tokens.index_copy_(1, pos - (plen - 1), token)
            pos.add_(1)

    return prefill, step, tokens


def graph_generate_reference(cfg, model, dev, precision, library_version):
    """--mode generate --graph: static_cache_decoder's loop, the decode step captured once as a CUDA graph after a
    side-stream warm-up and replayed per token (--compile: its forward compiled first); TTFT is the prompt's forward
    to its argmax, each replay one inter-token latency (CUDA events), as gpubench's mode generate measures them."""
    import torch

    prompt = generate_prompt(cfg, model, dev, precision)
    bs, prompt_len, fresh = cfg["batch_size"], cfg["prompt_tokens"], cfg["new_tokens"]
    inductor = None
    if cfg["compile"] and cfg.get("coordinate_descent"):  # gpt-fast's inductor settings (f77cd0e:results/2026-12-03-h200-decode-
        # greedy-tail: on the H200 TinyLlama 531 tokens/s with them against 560 without in the call before, GPT-2
        # 1,904 against 1,892, and one first compile's tokens went wrong from the third on: so opt-in)
        import torch._inductor.config as inductor_config

        inductor_config.coordinate_descent_tuning = True
        inductor_config.triton.unique_kernel_names = True
        inductor_config.fx_graph_cache = True
        inductor = "coordinate_descent_tuning, fx_graph_cache (gpt-fast's settings)"
    forward = torch.compile(model.forward, fullgraph=True) if cfg["compile"] else None
    prefill, step, tokens = static_cache_decoder(model, prompt, fresh, forward)
    mode = "compile_cuda_graph_static_cache" if cfg["compile"] else "cuda_graph_static_cache"
    t0 = time.perf_counter()
    try:
        prefill()
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):
            for _ in range(3):  # the warm-up (and compilation) PyTorch's graph recipe asks for
                step()
        torch.cuda.current_stream(dev).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        torch.cuda.synchronize(dev)
    except Exception as e:  # noqa: BLE001: the record says why this form did not run
        emit({"tool": "pytorch", "mode": mode, "generate": True, "status": "error", "reason": repr(e)}, cfg["json"])
        return 1
    warmup_s = time.perf_counter() - t0
    reps = []
    for _ in range(cfg["repetitions"]):
        events = [torch.cuda.Event(enable_timing=True) for _ in range(fresh + 1)]
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        events[0].record()
        prefill()
        events[1].record()
        for i in range(fresh - 1):
            graph.replay()
            events[i + 2].record()
        torch.cuda.synchronize(dev)
        e2e = time.perf_counter() - t0
        ttft = events[0].elapsed_time(events[1])
        itl = [events[i].elapsed_time(events[i + 1]) for i in range(1, fresh)]
        reps.append(generation(bs, prompt_len, ttft, e2e, itl))
    agree = None
    if cfg["compile"]:  # the compiled step's tokens against the model's own forward, step by step, untimed
        eager_prefill, eager_step, eager_tokens = static_cache_decoder(model, prompt, fresh)
        eager_prefill()
        for _ in range(fresh - 1):
            eager_step()
        agree = leading_agreement(tokens, eager_tokens)
        if agree < min(8, fresh):
            print(f"warning: the compiled step's tokens leave the uncompiled forward's after {agree} of {fresh}",
                  file=sys.stderr)
    return emit(generate_record(cfg, reps, mode, warmup_s, None, library_version, dev, precision,
                                first_tokens=tokens[0, :8].tolist(), inductor=inductor,
                                tokens_agree_with_uncompiled=agree), cfg["json"])


def leading_agreement(a, b):
    """How many leading new tokens two [batch, fresh] token tables (tensors or lists of rows) share in every sequence."""
    rows_a = a.tolist() if hasattr(a, "tolist") else a
    rows_b = b.tolist() if hasattr(b, "tolist") else b
    count = 0
    width = min(len(r) for r in rows_a + rows_b)
    for i in range(width):
        if any(ra[i] != rb[i] for ra, rb in zip(rows_a, rows_b)):
            break
        count += 1
    return count


def emit(result, path):
    """The result as JSON on standard output, and in `path` when one is given."""
    text = json.dumps(result, indent=2)
    if path:
        with open(path, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0


def main(argv):
    cfg = parse_args(argv)
    import torch
    import torchvision

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        import torch.distributed as dist

        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
        dist.init_process_group("nccl", device_id=dev)
    else:
        dev = torch.device("cuda" if cfg["device"] in ("auto", "rocm") else cfg["device"])
    precision = cfg["precision"]
    if precision == "amp":
        precision = "fp16"  # torch.autocast("cuda")'s default dtype, with a GradScaler
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    channels_last = cfg["memory_format"] == "channels_last" or (cfg["memory_format"] == "auto" and dev.type == "cuda")
    mf = torch.channels_last if channels_last else torch.contiguous_format

    torch.manual_seed(0)
    bs = cfg["batch_size"]
    inference = cfg["mode"] == "inference"
    if cfg["model"] == "bert-base":
        import transformers

        shape = {k: v for k, v in (("num_hidden_layers", cfg["layers"]), ("hidden_size", cfg["width"]),
                                   ("num_attention_heads", cfg["heads"])) if v is not None}
        if cfg["width"] is not None:
            shape["intermediate_size"] = 4 * cfg["width"]
        model = transformers.BertForSequenceClassification(
            transformers.BertConfig(num_labels=cfg["num_labels"], **shape)).to(dev)
        channels_last = False
        x = torch.randint(1, model.config.vocab_size, (bs, cfg["seq_len"]), device=dev)  # full length: no mask
        y = torch.randint(0, cfg["num_labels"], (bs,), device=dev)
        forward = (lambda: model(input_ids=x).logits) if inference else (lambda: loss_fn(model(input_ids=x).logits, y))
        torch_version_of_model = transformers.__version__
    elif cfg["model"] in ("gpt2", "llama"):
        import transformers

        if cfg["model"] == "gpt2":
            shape = {k: v for k, v in (("n_layer", cfg["layers"]), ("n_embd", cfg["width"]), ("n_head", cfg["heads"]),
                                       ("vocab_size", cfg["vocab"])) if v is not None}
            config = transformers.GPT2Config(attn_implementation="sdpa", **shape)
        else:  # gpubench's llama keys (TinyLlama-1.1B by default)
            config = transformers.LlamaConfig(
                vocab_size=cfg["vocab"], hidden_size=cfg["width"], intermediate_size=cfg["intermediate"],
                num_hidden_layers=cfg["layers"], num_attention_heads=cfg["heads"], num_key_value_heads=cfg["kv_heads"],
                max_position_embeddings=max(2048, cfg["seq_len"]), rms_norm_eps=1e-5, rope_theta=10000.0,
                tie_word_embeddings=False, attn_implementation="sdpa")
        model = transformers.AutoModelForCausalLM.from_config(config).to(dev)
        channels_last = False
        if cfg["mode"] == "generate":
            run = graph_generate_reference if cfg["graph"] else generate_reference
            return run(cfg, model, dev, precision, transformers.__version__)
        x = torch.randint(0, config.vocab_size, (bs, cfg["seq_len"]), device=dev)
        if inference:
            forward = lambda: model(input_ids=x).logits
        else:
            forward = lambda: model(input_ids=x, labels=x).loss  # transformers' shift and fp32 cross-entropy
        torch_version_of_model = transformers.__version__
    elif cfg["model"] == "sd-unet" and inference:
        import diffusers

        model = diffusers.UNet2DConditionModel(sample_size=cfg["latent_size"], cross_attention_dim=768).to(dev)
        channels_last = False
        n = cfg["latent_size"]
        latents = torch.randn(bs, 4, n, n, device=dev)
        prompt_embeds = torch.randn(2 * bs, 77, 768, device=dev)  # negative then positive, concatenated once
        scheduler = diffusers.DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                            clip_sample=False, set_alpha_to_one=False)
        scheduler.set_timesteps(50)
        t = torch.tensor(500, device=dev)

        def forward():
            latent_in = torch.cat([latents] * 2)
            noise_pred = model(latent_in, t, encoder_hidden_states=prompt_embeds).sample
            uncond, text = noise_pred.chunk(2)
            noise_pred = uncond + 7.5 * (text - uncond)
            return scheduler.step(noise_pred, 500, latents).prev_sample

        torch_version_of_model = diffusers.__version__
    elif cfg["model"] == "sd-unet":
        import diffusers

        # The SD v1.5 UNet: diffusers' defaults are SD 1.x's but for the 768-wide text context (MODELS.md).
        model = diffusers.UNet2DConditionModel(sample_size=cfg["latent_size"], cross_attention_dim=768).to(dev)
        channels_last = False
        n = cfg["latent_size"]
        x0 = torch.randn(bs, 4, n, n, device=dev)
        noise = torch.randn_like(x0)
        context = torch.randn(bs, 77, 768, device=dev)
        t = torch.randint(0, 1000, (bs,), device=dev)
        betas = torch.linspace(0.00085 ** 0.5, 0.012 ** 0.5, 1000, device=dev) ** 2
        alpha_bar = torch.cumprod(1 - betas, 0)[t].view(bs, 1, 1, 1)
        xt = alpha_bar.sqrt() * x0 + (1 - alpha_bar).sqrt() * noise
        forward = lambda: torch.nn.functional.mse_loss(model(xt, t, encoder_hidden_states=context).sample.float(), noise)
        torch_version_of_model = diffusers.__version__
    else:
        model = torchvision.models.resnet50(num_classes=cfg["num_classes"]).to(dev, memory_format=mf)
        size = cfg["image_size"]
        x = torch.randn(bs, 3, size, size, device=dev).contiguous(memory_format=mf)
        y = torch.randint(0, cfg["num_classes"], (bs,), device=dev)
        forward = (lambda: model(x)) if inference else (lambda: loss_fn(model(x), y))
        torch_version_of_model = torchvision.__version__
    if precision == "fp8" and not inference:
        # torchao's float8 training (its default recipe: tensorwise dynamic scaling, e4m3 forward, e5m2 gradients),
        # on the Linear layers gpubench's rule converts: dimensions multiples of 16, heads kept.
        try:
            from torchao.float8 import convert_to_float8_training
        except ImportError as e:
            raise SystemExit(f"--precision fp8 needs torchao (pip install torchao): {e}")

        def converted(mod, fqn):
            return (isinstance(mod, torch.nn.Linear) and not fqn.endswith(("lm_head", "classifier"))
                    and mod.in_features % 16 == 0 and mod.out_features % 16 == 0)

        convert_to_float8_training(model, module_filter_fn=converted)
    if world > 1:
        # The forwards above call `model` when they run: they go through DDP now.
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev.index])
    o = cfg["optimizer"]
    fused = {"fused": True} if cfg["fused"] else {}
    autocast_dtype = {"bf16": torch.bfloat16, "fp8": torch.bfloat16, "fp16": torch.float16}.get(precision)
    if inference:
        model.eval()
        if autocast_dtype is not None:
            model.to(autocast_dtype)
        opt = None
    elif o["name"] == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=o["lr"], momentum=o["momentum"],
                              weight_decay=o["weight_decay"], nesterov=o["nesterov"], **fused)
    else:
        capturable = {"capturable": True} if cfg["graph"] else {}
        opt = torch.optim.AdamW(model.parameters(), lr=o["lr"], weight_decay=o["weight_decay"], **fused, **capturable)
    if cfg["compile"]:
        # torch 2.11's AOTAutograd cache keys a graph by whether autocast is on, not by its dtype (pytorch/pytorch
        # #181564, #191110): a bf16 run after an fp16 one with the same model reuses the fp16 graph and measures fp16
        # (seen on the H200: results/2026-12-02-h200-resnet-pipeline). One inductor cache folder per autocast dtype
        # keeps warm re-runs of the same precision and never crosses them; a folder the user set is left alone.
        # (Call 2 there showed the reverse too: an fp16 run after a bf16 one measured bf16.)
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir

        tag = str(autocast_dtype).replace("torch.", "") if autocast_dtype is not None else "fp32"
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache_dir(tag, USER_INDUCTOR_CACHE_DIR, default_cache_dir())
        # Every forward above calls `model` when it runs (late binding): they all run the compiled module now, with
        # each model's own loss (transformers' ForCausalLMLoss for the decoders).
        model = torch.compile(model)
    scaler = torch.amp.GradScaler("cuda") if precision == "fp16" and not inference else None
    loss_fn = torch.nn.CrossEntropyLoss()

    def infer_step():
        with torch.inference_mode(), torch.autocast(dev.type, dtype=autocast_dtype or torch.float32,
                                                    enabled=autocast_dtype is not None):
            return forward()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=autocast_dtype or torch.float32, enabled=autocast_dtype is not None):
            loss = forward()
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss.detach()

    if inference:
        step = infer_step
    else:
        model.train()
    t_w = time.perf_counter()
    for _ in range(cfg["warmup_steps"]):
        step()
    torch.cuda.synchronize(dev)
    if cfg["graph"]:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_loss = step()

        def step():
            graph.replay()
            return static_loss if inference else static_loss.clone()
    torch.cuda.synchronize(dev)
    warmup_s = time.perf_counter() - t_w
    steps = cfg["dataset_size"] // (bs * world)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
    torch.cuda.reset_peak_memory_stats(dev)
    torch.cuda.synchronize(dev)
    t0 = time.perf_counter()
    events[0].record()
    losses = []
    for i in range(steps):
        out = step()
        if not inference:
            losses.append(out)
        events[i + 1].record()
    torch.cuda.synchronize(dev)
    seconds = time.perf_counter() - t0
    rank_seconds = [seconds]
    if world > 1:
        gathered = [torch.zeros(1, device=dev, dtype=torch.float64) for _ in range(world)]
        dist.all_gather(gathered, torch.tensor([seconds], device=dev, dtype=torch.float64))
        rank_seconds = [float(t.item()) for t in gathered]
        seconds = max(rank_seconds)
    step_ms = sorted(events[i].elapsed_time(events[i + 1]) for i in range(steps))

    def pct(q):  # numpy's linear interpolation, as gpubench's percentiles
        pos = (len(step_ms) - 1) * q / 100.0
        lo = int(pos)
        hi = min(lo + 1, len(step_ms) - 1)
        return step_ms[lo] + (step_ms[hi] - step_ms[lo]) * (pos - lo)
    if cfg.get("trace") and rank == 0:
        # As gpubench --profile: after the timed steps, one unrecorded step under the profiler, then marked steps.
        from torch.profiler import ProfilerActivity, profile, record_function

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize(dev)
            for _ in range(cfg["trace_steps"]):
                with record_function("gpubench::profiled_step"):
                    step()
            torch.cuda.synchronize(dev)
        prof.export_chrome_trace(cfg["trace"])
    result = {
        "tool": "pytorch",
        "torch_version": torch.__version__,
        "model_library_version": torch_version_of_model,
        "cudnn_version": torch.backends.cudnn.version(),
        "device_name": torch.cuda.get_device_name(dev),
        "scenario": {k: v for k, v in cfg.items() if k not in ("json", "trace", "trace_steps")},
        "precision_resolved": precision,
        "mode": "cuda_graph" if cfg["graph"] else ("compile" if cfg["compile"] else "eager"),
        "compile_cache_dir": os.environ.get("TORCHINDUCTOR_CACHE_DIR") if cfg["compile"] else None,
        "optimizer_implementation": "none" if inference else "fused" if cfg["fused"] else "foreach",
        "channels_last": channels_last,
        "world_size": world,
        "rank_seconds": rank_seconds,
        "steps": steps,
        "samples": steps * bs * world,
        "seconds": seconds,
        "samples_per_s": steps * bs * world / seconds,
        "steps_per_s": steps / seconds,
        "tokens_per_s": steps * bs * world * cfg["seq_len"] / seconds if cfg["model"] in ("gpt2", "llama", "bert-base") else None,
        "latency_p50_ms": pct(50),
        "latency_p90_ms": pct(90),
        "latency_p99_ms": pct(99),
        "step_ms_median": step_ms[len(step_ms) // 2],
        "peak_allocated_bytes": torch.cuda.max_memory_allocated(dev),
        "peak_reserved_bytes": torch.cuda.max_memory_reserved(dev),
        "warmup_seconds": warmup_s,
        "loss_first": float(losses[0]) if losses else None,
        "loss_last": float(losses[-1]) if losses else None,
    }
    if world > 1:
        dist.destroy_process_group()
        if rank != 0:
            return 0
    return emit(result, cfg["json"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
