#!/usr/bin/python3
"""Compiles a hybrid model with gdn-compile and generates text with it:
prefill of the prompt, then cached decode one token at a time.

    /usr/bin/python3 examples/nenya-tiny/generate.py "The prompt" -n 32
    /usr/bin/python3 examples/nenya-tiny/generate.py --ids 1,2,3 -n 8 \\
        --temperature 0.8 --seed 7

The weights are model.safetensors beside the description (make_weights.py
writes them). Prints the generated tokens (and text, for the byte
tokenizer), prefill and decode tokens/s, and the cache bytes per sequence.
The bundled weights are random and the embeddings tied, so the model
mostly repeats a token of its input; what matters is that the output is the
model's own, computed by compiled code (python/tests/test_model_step_compiled.py
checks that code against the float64 reference).
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import numpy as np  # noqa: E402

from gdn import compiled_model, model  # noqa: E402


def _sample(logits, temperature, rng):
    if temperature == 0:
        return np.argmax(logits, axis=-1)
    scaled = logits.astype(np.float64) / temperature
    scaled -= scaled.max(axis=-1, keepdims=True)
    p = np.exp(scaled)
    p /= p.sum(axis=-1, keepdims=True)
    return np.array([rng.choice(len(row), p=row) for row in p])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prompt", nargs="?", default="Linear attention ",
                        help="text prompt (byte tokenizer)")
    parser.add_argument("--ids", default=None,
                        help="comma-separated token ids instead of text")
    parser.add_argument("--config", default=os.path.join(HERE, "model.json"))
    parser.add_argument("--weights", default=None,
                        help="safetensors file (default: beside --config)")
    parser.add_argument("-n", "--tokens", type=int, default=32,
                        help="tokens to generate (default: %(default)s)")
    parser.add_argument("--temperature", type=float, default=0.0,
                        help="0 for greedy (default)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.tokens < 0:
        parser.error("-n/--tokens must be >= 0")
    if args.temperature < 0:
        parser.error("--temperature must be >= 0")

    try:
        print(f"compiling {args.config} (cached after the first run) ...",
              file=sys.stderr, flush=True)
        start = time.perf_counter()
        compiled = compiled_model.CompiledModel(args.config, args.weights)
        print(f"ready in {time.perf_counter() - start:.1f} s",
              file=sys.stderr)
        config = compiled.config
        if args.ids is not None:
            ids = [int(t) for t in args.ids.split(",")]
        elif config["tokenizer"] == "bytes":
            ids = list(model.byte_tokenize(args.prompt))
        else:
            parser.error("this model has no text tokenizer: pass --ids")
        if not ids:
            parser.error("the prompt is empty")
        rng = np.random.default_rng(args.seed)

        start = time.perf_counter()
        logits = compiled.prefill(np.array([ids]))[:, -1]
        prefill_s = time.perf_counter() - start
        generated = []
        start = time.perf_counter()
        for i in range(args.tokens):
            token = _sample(logits, args.temperature, rng)
            generated.append(int(token[0]))
            if i + 1 < args.tokens:
                logits = compiled.decode(token)
            if args.tokens >= 64 and (i + 1) % 64 == 0:
                print(f"  {i + 1}/{args.tokens} tokens", file=sys.stderr)
        decode_s = time.perf_counter() - start
    except (ValueError, RuntimeError, OSError) as e:
        print(f"generate: {e}", file=sys.stderr)
        return 1

    print(f"prompt tokens:    {len(ids)}")
    print(f"generated tokens: {generated}")
    if config["tokenizer"] == "bytes":
        print(f"generated text:   {model.byte_detokenize(generated)!r}")
    print(f"prefill: {len(ids) / prefill_s:.0f} tokens/s "
          f"({prefill_s * 1e3:.1f} ms)")
    if len(generated) > 1:
        print(f"decode:  {(len(generated) - 1) / decode_s:.0f} tokens/s")
    cache = compiled.cache_nbytes()
    print(f"cache:   {cache['gdn'] + cache['mla']} bytes per sequence "
          f"(GDN {cache['gdn']}, MLA {cache['mla']}) at "
          f"{compiled.position} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
