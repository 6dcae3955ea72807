#!/usr/bin/python3
"""Prefill and decode speed of a compiled hybrid model across context
lengths, with the same model's all-GDN and all-MLA variants side by side.

    OMP_NUM_THREADS=2 /usr/bin/python3 bench/bench_model.py
    /usr/bin/python3 bench/bench_model.py --contexts 256,1024 --steps 4

For each variant (the description's layer kinds; every layer GDN; every
layer MLA) and context length L, the script compiles the model once
(gdn.CompiledModel over gdn-compile --emit=shared), prefills one random
prompt of L tokens, then decodes --steps tokens, and prints prefill tokens/s,
the mean decode step time and tokens/s, and the cache bytes per sequence. A GDN
layer's decode cost does not depend on L (its state is fixed-size); an MLA
layer attends over all L cached tokens, so its share grows with L.
"""

import argparse
import copy
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import numpy as np  # noqa: E402

from gdn import compiled_model, model, safetensors  # noqa: E402

DEFAULT_CONFIG = os.path.join(HERE, "..", "examples", "nenya-tiny",
                              "model.json")


def _variants(config, names):
    layers = config["num_layers"]
    result = {}
    for name in names:
        variant = copy.deepcopy(config)
        if name in ("gdn", "mla"):
            variant.pop("layer_pattern", None)
            variant["layer_types"] = [name] * layers
        result[name] = variant
    return result


def _measure(compiled, context, steps, rng):
    vocab = compiled.config["vocab_size"]
    prompt = rng.integers(0, vocab, size=(1, context))
    start = time.perf_counter()
    logits = compiled.prefill(prompt)
    prefill_s = time.perf_counter() - start
    token = np.argmax(logits[:, -1], axis=-1)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        logits = compiled.decode(token)
        times.append(time.perf_counter() - start)
        token = np.argmax(logits, axis=-1)
    cache = compiled.cache_nbytes()
    return prefill_s, float(np.median(times)), cache["gdn"] + cache["mla"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=DEFAULT_CONFIG,
                        help="model description (default: nenya-tiny)")
    parser.add_argument("--contexts", default="256,512,1024,2048,4096,8192",
                        help="prompt lengths (default: %(default)s)")
    parser.add_argument("--variants", default="hybrid,gdn,mla",
                        help="hybrid (the description), gdn, mla "
                             "(default: %(default)s)")
    parser.add_argument("--steps", type=int, default=8,
                        help="decode steps per context (median reported)")
    args = parser.parse_args(argv)
    contexts = [int(c) for c in args.contexts.split(",")]
    names = args.variants.split(",")
    for name in names:
        if name not in ("hybrid", "gdn", "mla"):
            parser.error(f"--variants: unknown variant '{name}'")
    base = model.load_config(args.config)
    # Room for the prompt and the decoded tokens at the longest context.
    base["max_context"] = max(base["max_context"],
                              max(contexts) + args.steps)
    print(f"{'variant':8} {'context':>8} {'prefill tok/s':>14} "
          f"{'decode ms':>10} {'decode tok/s':>13} {'cache bytes':>12}")
    with tempfile.TemporaryDirectory(prefix="gdn-bench-") as tmp:
        for name, config in _variants(base, names).items():
            directory = os.path.join(tmp, name)
            os.makedirs(directory)
            config_path = os.path.join(directory, "model.json")
            with open(config_path, "w") as f:
                json.dump(config, f)
            weights = model.init_weights(model.load_config(config), seed=0)
            safetensors.save(os.path.join(directory, "model.safetensors"),
                             weights)
            print(f"# compiling {name} ...", file=sys.stderr, flush=True)
            compiled = compiled_model.CompiledModel(config_path)
            rng = np.random.default_rng(0)
            for context in contexts:
                prefill_s, step_s, cache = _measure(compiled, context,
                                                    args.steps, rng)
                print(f"{name:8} {context:8d} {context / prefill_s:14.0f} "
                      f"{step_s * 1e3:10.2f} {1 / step_s:13.0f} "
                      f"{cache:12d}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
