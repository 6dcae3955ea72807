#!/usr/bin/env python3
"""A real-size Hugging Face checkpoint on the CPU: the shape of a small
Qwen3.5 (qwen3_5_text: hidden 1024, 24 layers in the L, L, L, F pattern,
GDN 16/16 heads of 128, attention 8/2 heads of 256, vocab 248320, tied
embeddings), random bf16 weights made here, compiled by gdn-compile and run
by its gdn-model. Prints the weights' bytes, the peak resident memory of
gdn-model (the bf16 matrices are read from the mapped file, not copied),
prefill tokens/s, decode ms per token and the decode bytes floor: (weight
bytes + state and cache bytes) / the memory copy bandwidth measured in the
same run.

    /usr/bin/python3 bench/bench_checkpoint_cpu.py [--out DIR] [--tokens 512]
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

from gdn import cache, safetensors  # noqa: E402

LAYERS = 24
CONFIG = {
    "model_type": "qwen3_5_text", "vocab_size": 248320, "hidden_size": 1024,
    "num_hidden_layers": LAYERS, "intermediate_size": 3584,
    "layer_types": ["full_attention" if (i + 1) % 4 == 0 else
                    "linear_attention" for i in range(LAYERS)],
    "linear_num_key_heads": 16, "linear_num_value_heads": 16,
    "linear_key_head_dim": 128, "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4, "num_attention_heads": 8,
    "num_key_value_heads": 2, "head_dim": 256, "rms_norm_eps": 1e-6,
    "max_position_embeddings": 32768, "tie_word_embeddings": True,
    "hidden_act": "silu",
    "rope_parameters": {"rope_type": "default", "rope_theta": 1e7,
                        "partial_rotary_factor": 0.25}}


def make_checkpoint(folder, compiler):
    os.makedirs(folder, exist_ok=True)
    config_path = os.path.join(folder, "config.json")
    weights_path = os.path.join(folder, "model.safetensors")
    with open(config_path, "w") as f:
        json.dump(CONFIG, f, indent=1)
    if os.path.exists(weights_path):
        return weights_path
    # The weight names and shapes gdn-compile expects, from its own error on
    # an empty file would be roundabout: they follow docs/huggingface.md.
    d, f, v = CONFIG["hidden_size"], CONFIG["intermediate_size"], \
        CONFIG["vocab_size"]
    keys, values = 16 * 128, 16 * 128
    rng = np.random.default_rng(0)

    def matrix(rows, cols):
        return (rng.standard_normal((rows, cols), dtype=np.float32)
                / np.float32(np.sqrt(cols)))

    tensors = {"model.embed_tokens.weight": matrix(v, d),
               "model.norm.weight": np.zeros(d, np.float32)}
    for i, kind in enumerate(CONFIG["layer_types"]):
        p = f"model.layers.{i}."
        tensors[p + "input_layernorm.weight"] = np.zeros(d, np.float32)
        tensors[p + "post_attention_layernorm.weight"] = np.zeros(d, np.float32)
        tensors[p + "mlp.gate_proj.weight"] = matrix(f, d)
        tensors[p + "mlp.up_proj.weight"] = matrix(f, d)
        tensors[p + "mlp.down_proj.weight"] = matrix(d, f)
        if kind == "linear_attention":
            a = p + "linear_attn."
            tensors[a + "in_proj_qkv.weight"] = matrix(2 * keys + values, d)
            tensors[a + "in_proj_z.weight"] = matrix(values, d)
            tensors[a + "in_proj_b.weight"] = matrix(16, d)
            tensors[a + "in_proj_a.weight"] = matrix(16, d)
            tensors[a + "conv1d.weight"] = rng.standard_normal(
                (2 * keys + values, 1, 4), dtype=np.float32) * 0.5
            tensors[a + "dt_bias"] = np.ones(16, np.float32)
            tensors[a + "A_log"] = np.log(rng.uniform(1, 16, 16)).astype(
                np.float32)
            tensors[a + "norm.weight"] = np.ones(128, np.float32)
            tensors[a + "out_proj.weight"] = matrix(d, values)
        else:
            a = p + "self_attn."
            tensors[a + "q_proj.weight"] = matrix(2 * 8 * 256, d)
            tensors[a + "k_proj.weight"] = matrix(2 * 256, d)
            tensors[a + "v_proj.weight"] = matrix(2 * 256, d)
            tensors[a + "o_proj.weight"] = matrix(d, 8 * 256)
            tensors[a + "q_norm.weight"] = np.zeros(256, np.float32)
            tensors[a + "k_norm.weight"] = np.zeros(256, np.float32)
    safetensors.save(weights_path, tensors, "bf16")
    return weights_path


def copy_bandwidth():
    """Bytes per second of a 512 MiB numpy copy (read + write), best of 3."""
    source = np.ones(64 << 20, np.float64)
    target = np.empty_like(source)
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        np.copyto(target, source)
        best = max(best, 2 * source.nbytes / (time.perf_counter() - start))
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "out",
                                                      "qwen3_5-0.8b"))
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--decode", type=int, default=32)
    args = parser.parse_args()
    compiler = cache.find_compiler()
    weights = make_checkpoint(args.out, compiler)
    compiled = os.path.join(args.out, "compiled")
    start = time.perf_counter()
    if not os.path.exists(os.path.join(compiled, "gdn-model")):
        subprocess.run([compiler, args.out, "-o", compiled], check=True)
    compile_seconds = time.perf_counter() - start
    ids = np.random.default_rng(1).integers(0, CONFIG["vocab_size"],
                                            args.tokens)
    run = subprocess.run(
        [os.path.join(compiled, "gdn-model"), "--quiet",
         "--ids=" + ",".join(map(str, ids)), "-n", str(args.decode)],
        capture_output=True, text=True, check=True)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    prefill = float(re.search(r"prefill: (\d+) tokens/s", run.stdout)[1])
    decode_ms = float(re.search(r"\(([\d.]+) ms per step\)", run.stdout)[1])
    cache_bytes = int(re.search(r"cache: +(\d+) bytes", run.stdout)[1])
    weight_bytes = os.path.getsize(weights)
    bandwidth = copy_bandwidth()
    floor_ms = (weight_bytes + cache_bytes) / bandwidth * 1e3
    print(run.stdout)
    print("| weights (bf16) | gdn-model peak RSS | compile s | prefill "
          f"{args.tokens} tok/s | decode ms/token | bytes floor ms "
          "(copy bandwidth) |")
    print("|---|---|---|---|---|---|")
    print(f"| {weight_bytes / 2**30:.2f} GiB | {peak / 2**30:.2f} GiB | "
          f"{compile_seconds:.0f} | {prefill:.0f} | {decode_ms:.1f} | "
          f"{floor_ms:.1f} ({bandwidth / 1e9:.1f} GB/s) |")


if __name__ == "__main__":
    main()
