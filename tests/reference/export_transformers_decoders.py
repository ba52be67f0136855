#!/usr/bin/env python3
"""Exports transformers' GPT2LMHeadModel and LlamaForCausalLM for the C++ parity test
(tests/engine/decoder_parity_test.cpp).

For each model, OUTDIR/<name>_transformers.pt (torch.save, read in C++ with torch::jit::pickle_load) holds:
- the full-size model's parameter names and shapes in transformers' order and its parameter count (GPT-2 small from
  GPT2Config(); TinyLlama-1.1B's configuration), built on the meta device, so nothing is allocated or downloaded;
- a reduced model (same code, small sizes) with every parameter, an input batch, its eval-mode logits and the
  causal-LM loss transformers computes with labels = input_ids;
- for mode: generate, the reduced model with its matrices scaled up tenfold (so greedy decoding does not repeat one
  token, and the top two logits differ by 1e-3 or more at every step), a prompt of 8 tokens per sequence, the 64
  tokens `generate(do_sample=False)` gives after it (KV cache, no end-of-sequence stop), and the logits of the whole
  generated sequences (one forward, no cache) at every position.
"""
import pathlib
import sys

import torch
import transformers


def tinyllama_config(**overrides):
    base = dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048, rms_norm_eps=1e-5,
                rope_theta=10000.0, tie_word_embeddings=False, attention_bias=False, mlp_bias=False)
    base.update(overrides)
    return transformers.LlamaConfig(**base)


def generation_reference(model, vocab):
    """Greedy decoding by transformers, with a copy of `model` whose matrices are scaled up tenfold."""
    import copy
    model = copy.deepcopy(model).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.mul_(10)
    model.generation_config.eos_token_id = None  # 64 tokens whatever they are
    torch.manual_seed(3)
    prompt = torch.randint(0, vocab, (2, 8))
    with torch.no_grad():
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=64, do_sample=False,
                             pad_token_id=0)
        logits = model(out).logits
    return {
        "generate_state": {n: p.detach().clone() for n, p in model.named_parameters()},
        "generate_prompt": prompt,
        "generate_tokens": out[:, prompt.size(1):].contiguous(),
        "generate_logits": logits,
    }


def export(name, full_model, small_model, vocab, out):
    names_shapes = [(n, list(p.shape)) for n, p in full_model.named_parameters()]
    small_model.eval()
    torch.manual_seed(1)
    ids = torch.randint(0, vocab, (2, 24))
    with torch.no_grad():
        result = small_model(input_ids=ids, labels=ids)
    params = list(small_model.named_parameters())
    generation = generation_reference(small_model, vocab)
    torch.save(
        {
            **generation,
            "param_names": [n for n, _ in names_shapes],
            "param_shapes": [s for _, s in names_shapes],
            "parameters": sum(p.numel() for p in full_model.parameters()),
            "small_param_names": [n for n, _ in params],
            "state": {n: p.detach().clone() for n, p in params},
            "input_ids": ids,
            "logits": result.logits,
            "loss": result.loss.reshape(1),
        },
        out / f"{name}_transformers.pt",
    )
    print(f"{name}: transformers {transformers.__version__}, {sum(p.numel() for p in full_model.parameters())} "
          f"parameters (full size), exported to {out}")


def main() -> int:
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "reference")
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    with torch.device("meta"):
        gpt2_full = transformers.GPT2LMHeadModel(transformers.GPT2Config())
        llama_full = transformers.LlamaForCausalLM(tinyllama_config())
    gpt2_small = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=500, n_embd=64, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0,
                                attn_implementation="sdpa"))
    llama_small = transformers.LlamaForCausalLM(tinyllama_config(
        vocab_size=500, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, attn_implementation="sdpa"))
    export("gpt2", gpt2_full, gpt2_small, 500, out)
    export("llama", llama_full, llama_small, 500, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
