#!/usr/bin/env python3
"""Trains one byte-level model on the training text and evaluates it on the
held-out text (training/corpus.py makes both).

    python3 training/train.py --model hybrid --seed 0 --out runs/hybrid-0
    python3 training/train.py --model softmax --seed 0 --out runs/softmax-0

`--model hybrid` is the gdn model description --config (default: the
bundled examples/nenya-kjv/model.json) trained from gdn's initialiser;
`--model softmax` the baseline with softmax attention in every block and an
MLP widened until its parameter count is the hybrid's (training/models.py).
Both see the same batches for the same seed: windows of --seq-len + 1
bytes at offsets drawn from a generator seeded by --seed.

Training: AdamW (betas 0.9, 0.95, weight decay 0.1 on matrices), linear
warm-up then cosine decay to a tenth of --lr, gradients clipped at norm 1,
bf16 autocast for the projections (norms, gates and the delta rule in
float32). Every --eval-every steps the held-out loss (bf16 autocast) is
logged.

The final evaluation rounds every weight to bf16 (the stored precision)
and runs in float32 without autocast and without TF32, as the compiled
model does: the held-out text is cut into consecutive windows of
--seq-len bytes, each window starts from empty state, and the loss is the
mean negative log-likelihood in nats of every byte after the first of each
window (`gdn-model --perplexity FILE --window N` computes the same). The
first --slice-windows windows are also reported on their own, for the CPU
test that compares the compiled model with this figure.

OUT gets log.json (the configuration, the loss curves and the final
losses); a hybrid also gets model.json and model.safetensors (bf16), a gdn
model that gdn-compile reads.
"""

import argparse
import copy
import json
import math
import os
import shutil
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import models  # noqa: E402
from gdn import model as gdn_model  # noqa: E402
from gdn import safetensors  # noqa: E402

DEFAULT_CONFIG = os.path.join(HERE, "..", "examples", "nenya-kjv",
                              "model.json")


def windows(data, length):
    """Consecutive windows of `length` bytes of `data` (the last may be
    shorter; one of fewer than 2 bytes predicts nothing and is dropped)."""
    out = [data[i:i + length] for i in range(0, len(data), length)]
    return [w for w in out if len(w) >= 2]


@torch.no_grad()
def evaluate(model, data, length, device, batch=64, limit=None):
    """(mean NLL in nats per predicted byte, predicted bytes) over the
    windows of `data`."""
    pieces = windows(data, length)[:limit]
    total, count = 0.0, 0
    for size in sorted({len(p) for p in pieces}):
        same = [p for p in pieces if len(p) == size]
        for i in range(0, len(same), batch):
            ids = torch.tensor(np.stack([np.frombuffer(p, np.uint8)
                                         for p in same[i:i + batch]]),
                               dtype=torch.long, device=device)
            logits = model(ids[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                   ids[:, 1:].reshape(-1), reduction="sum")
            total += float(loss)
            count += ids[:, 1:].numel()
    return total / count, count


def learning_rate(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def build(args, config):
    if args.model == "hybrid":
        return models.HybridLM(config, seed=args.seed), config
    baseline = models.softmax_config(config, models.parity_mlp_hidden(config))
    return models.SoftmaxLM(baseline, seed=args.seed), baseline


def parameter_count(model):
    return sum(p.numel() for p in model.parameters())


def bf16_rounded(model):
    """A copy of `model` whose parameters hold bf16-rounded values."""
    rounded = copy.deepcopy(model)
    with torch.no_grad():
        for p in rounded.parameters():
            p.copy_(p.to(torch.bfloat16).float())
    return rounded


def export(model, config_path, out, meta):
    """model.json (a copy of the description) and bf16 model.safetensors
    of a trained hybrid."""
    shutil.copyfile(config_path, os.path.join(out, "model.json"))
    safetensors.save(os.path.join(out, "model.safetensors"), model.weights(),
                     dtype="bf16", metadata=meta)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("hybrid", "softmax"),
                        required=True)
    parser.add_argument("--config", default=DEFAULT_CONFIG,
                        help="the hybrid's gdn model description; the "
                             "baseline is derived from it")
    parser.add_argument("--data", default=os.path.join(HERE, "data"),
                        help="directory with train.txt and heldout.txt")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--eval-windows", type=int, default=0,
                        help="held-out windows of the evaluations during "
                             "training (0: all)")
    parser.add_argument("--slice-windows", type=int, default=32)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    with open(os.path.join(args.data, "train.txt"), "rb") as f:
        train = f.read()
    with open(os.path.join(args.data, "heldout.txt"), "rb") as f:
        heldout = f.read()
    config = gdn_model.load_config(args.config)
    model, shape = build(args, config)
    model.to(device)
    print(f"{args.model} seed {args.seed}: {parameter_count(model)} "
          f"parameters", flush=True)

    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1},
         {"params": rest, "weight_decay": 0.0}],
        lr=args.lr, betas=(0.9, 0.95), eps=1e-8,
        fused=device.type == "cuda")
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True

    data = torch.tensor(np.frombuffer(train, np.uint8), dtype=torch.long,
                        device=device)
    offsets = torch.Generator(device="cpu").manual_seed(args.seed)
    span = args.seq_len + 1
    log = {"model": args.model, "seed": args.seed, "config": shape,
           "parameters": parameter_count(model), "steps": args.steps,
           "batch": args.batch, "seq_len": args.seq_len, "lr": args.lr,
           "train_bytes": len(train), "heldout_bytes": len(heldout),
           "train_loss": [], "heldout_loss": []}
    start = time.time()
    for step in range(args.steps):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, args.steps, args.lr,
                                        args.warmup)
        starts = torch.randint(0, len(train) - span, (args.batch,),
                               generator=offsets)
        index = starts[:, None].to(device) + torch.arange(span, device=device)
        ids = data[index]
        with torch.autocast(device.type, dtype=torch.bfloat16,
                            enabled=device.type == "cuda"):
            logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               ids[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 10 == 0:
            log["train_loss"].append([step, float(loss)])
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            model.eval()
            with torch.autocast(device.type, dtype=torch.bfloat16,
                                enabled=device.type == "cuda"):
                held, _ = evaluate(model, heldout, args.seq_len, device,
                                   limit=args.eval_windows or None)
            model.train()
            log["heldout_loss"].append([step + 1, held])
            print(f"  step {step + 1}/{args.steps}: train {float(loss):.4f} "
                  f"held-out {held:.4f} ({time.time() - start:.0f} s)",
                  flush=True)
    log["train_seconds"] = time.time() - start
    log["tokens"] = args.steps * args.batch * args.seq_len

    # The final figures: bf16 weights, float32 arithmetic, no TF32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    os.makedirs(args.out, exist_ok=True)
    if args.model == "hybrid":
        # The figure is of the file written, read back.
        export(model, args.config, args.out,
               {"format": "pt", "generator": "training/train.py",
                "seed": str(args.seed), "steps": str(args.steps)})
        final = models.HybridLM(config, weights=safetensors.load(
            os.path.join(args.out, "model.safetensors"))).to(device)
    else:
        final = bf16_rounded(model)
    final.eval()
    log["final_heldout_loss"], log["final_heldout_bytes"] = evaluate(
        final, heldout, args.seq_len, device)
    log["slice_heldout_loss"], log["slice_heldout_bytes"] = evaluate(
        final, heldout, args.seq_len, device, limit=args.slice_windows)
    log["slice_windows"] = args.slice_windows
    print(f"{args.model} seed {args.seed}: held-out loss "
          f"{log['final_heldout_loss']:.4f} nats/byte "
          f"({log['final_heldout_loss'] / math.log(2):.4f} bits/byte) after "
          f"{log['tokens']} tokens in {log['train_seconds']:.0f} s",
          flush=True)
    with open(os.path.join(args.out, "log.json.partial"), "w") as f:
        json.dump(log, f, indent=1)
    os.replace(os.path.join(args.out, "log.json.partial"),
               os.path.join(args.out, "log.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
