#!/usr/bin/env python3
"""Exports transformers' BertForSequenceClassification for the C++ parity test (tests/engine/bert_parity_test.cpp).

Writes OUTDIR/bert_transformers.pt (torch.save, read in C++ with torch::jit::pickle_load) holding the parameter
names and shapes in transformers' order, every parameter, an input batch with padding, its attention mask and the
eval-mode logits. The model is built from BertConfig() (BERT-base, 2 labels) with random initialisation: nothing is
downloaded.
"""
import pathlib
import sys

import torch
import transformers


def main() -> int:
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "reference")
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(transformers.BertConfig()).eval()
    ids = torch.randint(1, 30522, (2, 24))
    mask = torch.ones(2, 24, dtype=torch.long)
    mask[1, 17:] = 0  # the second sequence is padded
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits
    params = list(model.named_parameters())
    torch.save(
        {
            "param_names": [n for n, _ in params],
            "param_shapes": [list(p.shape) for _, p in params],
            "state": {n: p.detach().clone() for n, p in params},
            "input_ids": ids,
            "attention_mask": mask,
            "logits": logits,
        },
        out / "bert_transformers.pt",
    )
    print(f"transformers {transformers.__version__}: {sum(p.numel() for _, p in params)} parameters exported to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
