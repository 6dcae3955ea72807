#!/usr/bin/env python3
"""The held-out loss of a gdn model (model.json and its safetensors) in
PyTorch, float32 without TF32, as training/train.py's final evaluation:

    python3 training/evaluate.py MODEL.json [--weights W] --text FILE
                                 [--window 512] [--windows N]

prints the mean negative log-likelihood in nats per byte of the first N
windows of FILE (all by default); `gdn-model --perplexity FILE --window
512` computes the same with the compiled model.
"""

import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import models  # noqa: E402
from gdn import model as gdn_model  # noqa: E402
from train import evaluate  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--weights")
    parser.add_argument("--text", required=True)
    parser.add_argument("--window", type=int, default=512)
    parser.add_argument("--windows", type=int, default=0,
                        help="windows evaluated from the start (0: all)")
    parser.add_argument("--device",
                        default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    config, weights = gdn_model.load_model(args.config, args.weights)
    lm = models.HybridLM(config, weights=weights).to(args.device).eval()
    with open(args.text, "rb") as f:
        text = f.read()
    loss, count = evaluate(lm, text, args.window, torch.device(args.device),
                           limit=args.windows or None)
    print(json.dumps({"text": args.text, "window": args.window,
                      "windows": args.windows, "predicted": count,
                      "loss": loss}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
