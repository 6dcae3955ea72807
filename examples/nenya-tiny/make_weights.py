#!/usr/bin/env python3
"""Writes the deterministic weights of the model described by model.json
(gdn.model.init_weights with seed 0) as safetensors.

    python3 examples/nenya-tiny/make_weights.py [-o OUT] [--dtype f32|bf16]
                                                [--config model.json]

By default the config is model.json beside this script and the weights go to
model.safetensors beside the config. The file is generated, never committed.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from gdn import model, safetensors  # noqa: E402

SEED = 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=os.path.join(HERE, "model.json"),
                        help="the model description (default: %(default)s)")
    parser.add_argument("-o", "--output", default=None,
                        help="the safetensors file to write (default: "
                             "model.safetensors beside the config)")
    parser.add_argument("--dtype", choices=sorted(safetensors.DTYPES),
                        default="f32", help="stored element type "
                                            "(default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        config = model.load_config(args.config)
    except ValueError as e:
        print(f"make_weights: {e}", file=sys.stderr)
        return 1
    output = args.output or model.default_weights_path(args.config)
    weights = model.init_weights(config, seed=SEED)
    safetensors.save(output, weights, dtype=args.dtype,
                     metadata={"format": "pt", "seed": str(SEED),
                               "generator": "examples/nenya-tiny/"
                                            "make_weights.py"})
    count = sum(w.size for w in weights.values())
    print(f"wrote {output}: {len(weights)} tensors, {count} parameters, "
          f"{args.dtype}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
