"""Compiles the models of the GPU model check (gpu_model_check.py) for
CUDA into a folder: per model its description, seeded weights and the
directory `gdn-compile model.json --target=cuda` writes, and the Hugging
Face fixture checkpoints with transformers' logits, with a manifest
(models.json). See scripts/build-gpu-artifacts.sh."""

import argparse
import json
import os
import shutil
import subprocess
import sys

from gdn import model, safetensors

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))

from model_configs import hybrid_config  # noqa: E402

MANIFEST = "models.json"

# Timed only (the float64 reference would take minutes): about 124M
# parameters in the design document's shape (d_model 768, 12 layers in its
# pattern, GDN heads of 128), tied embeddings over a GPT-2-sized vocabulary.
NENYA_124M = {
    "vocab_size": 50257, "d_model": 768, "num_layers": 12,
    "layer_pattern": "nenya",
    "gdn": {"num_heads": 6, "head_dim": 128, "conv_size": 4},
    "mla": {"num_heads": 12, "q_lora_rank": 0, "kv_lora_rank": 256,
            "qk_nope_head_dim": 64, "qk_rope_head_dim": 32,
            "v_head_dim": 64, "rope_theta": 10000.0},
    "mlp_hidden_size": 2048, "norm_eps": 1e-6, "tie_embeddings": True,
    "max_context": 36864, "tokenizer": "ids"}

# The benchmark's larger model, built only on request (--only nenya-1.3b):
# about 1.3B parameters, d_model 2048, 24 layers in the same pattern.
NENYA_1_3B = {
    "vocab_size": 50257, "d_model": 2048, "num_layers": 24,
    "layer_pattern": "nenya",
    "gdn": {"num_heads": 16, "head_dim": 128, "conv_size": 4},
    "mla": {"num_heads": 16, "q_lora_rank": 0, "kv_lora_rank": 512,
            "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
            "v_head_dim": 128, "rope_theta": 10000.0},
    "mlp_hidden_size": 5632, "norm_eps": 1e-6, "tie_embeddings": True,
    "max_context": 36864, "tokenizer": "ids"}
# Timed by bench/bench_gpu_model.py alone, not by the check.
BENCH_ONLY = [("nenya-1.3b", NENYA_1_3B, 2)]
TIMED_ONLY = ("nenya-124m", "nenya-1.3b")


def models():
    """(name, config, weights seed) of every checked model: the bundled
    example and a hybrid with q LoRA and untied embeddings."""
    with open(os.path.join(ROOT, "examples", "nenya-tiny", "model.json")) as f:
        nenya_tiny = json.load(f)
    lora = hybrid_config(q_lora_rank=8, num_layers=5)
    return [("nenya-tiny", nenya_tiny, 0), ("hybrid-qlora", lora, 3),
            ("hybrid-qlora-rows4", lora, 3), ("hybrid-qlora-small", lora, 3),
            ("nenya-124m", NENYA_124M, 1)]


# Models compiled with options besides the defaults, on the hybrid with q
# LoRA (decode batches of 1 to 4 and prompts to 300 tokens): the
# projections' row groups (gdn-gpu-map-parallel-loops row-group, off by
# default; full and partial groups), and tensor cores for the rows after
# the 128-row blocks from one row on (gdn-gpu-tensor-core-projections
# small-row-blocks, 8 rows by default, for every projection of 64 outputs
# or more here; every decode step and prompt tail then ends inside a
# masked 64-row block).
COMPILE_FLAGS = {
    "hybrid-qlora-rows4": ["--cuda-projection-row-group=4"],
    "hybrid-qlora-small": ["--cuda-projection-small-row-blocks=1",
                           "--cuda-projection-small-row-min-outputs=64"]}


def build(compiler, out, name, config, seed, target, extra=(),
          timed_only=None):
    """The model's folder; the weights in f32 and in bf16 (one library
    loads either). A timed-only model keeps no weights in the folder (they
    are too large to carry): the check makes them again from the seed."""
    if timed_only is None:
        timed_only = name in TIMED_ONLY
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    config_path = os.path.join(folder, "model.json")
    with open(config_path, "w") as f:
        json.dump(config, f, indent=1)
    weights = model.init_weights(config, seed)
    weights_path = os.path.join(folder, "model.safetensors")
    safetensors.save(weights_path, weights, "bf16" if timed_only else "f32")
    if not timed_only:
        safetensors.save(os.path.join(folder, "model-bf16.safetensors"),
                         weights, "bf16")
    # The timed model runs long prompts' delta rules on the chunked scan
    # (bf16 copies of q, k, v: --cuda-bf16-scan-inputs, whose error exceeds
    # the check's bf16 bound on hybrid-qlora, docs/performance.md); the
    # checked libraries keep the default.
    scan = ["--cuda-bf16-scan-inputs"] if target == "cuda" else []
    flags = (COMPILE_FLAGS.get(name, []) if target == "cuda" else []) + \
        list(extra)
    command = [compiler, config_path, f"--target={target}", "-o",
               os.path.join(folder, "compiled")] + (scan if timed_only
                                                    else []) + flags
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"compiling {name} failed:\n{result.stderr}")
    if not timed_only:
        # The same model compiled from the bf16 file: its matrices stay
        # bf16 on the device.
        bf16_command = [compiler, config_path, f"--target={target}",
                        "--weights=" + os.path.join(folder,
                                                    "model-bf16.safetensors"),
                        "-o", os.path.join(folder, "compiled-bf16")] + flags
        result = subprocess.run(bf16_command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"compiling {name} (bf16) failed:\n{result.stderr}")
    print(f"built {name}")
    if timed_only:
        os.unlink(weights_path)
        return {"config": f"{name}/model.json", "seed": seed,
                "weights": f"{name}/model.safetensors",
                "library": f"{name}/compiled/libgdn-model.so",
                "executable": f"{name}/compiled/gdn-model",
                "timed_only": True}
    return {"config": f"{name}/model.json",
            "weights": f"{name}/model.safetensors",
            "weights_bf16": f"{name}/model-bf16.safetensors",
            "library": f"{name}/compiled/libgdn-model.so",
            "library_bf16": f"{name}/compiled-bf16/libgdn-model.so",
            "executable": f"{name}/compiled/gdn-model"}


CHECKPOINTS = ("qwen3_5_text", "qwen3_5", "qwen3_next")


def build_checkpoint(compiler, out, name, target, extra=()):
    """A Hugging Face fixture (test/fixtures/huggingface) copied with
    transformers' reference logits, and compiled."""
    source = os.path.join(ROOT, "test", "fixtures", "huggingface", name)
    folder = os.path.join(out, name)
    shutil.copytree(source, folder, dirs_exist_ok=True)
    command = [compiler, folder, f"--target={target}", "-o",
               os.path.join(folder, "compiled")] + list(extra)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"compiling {name} failed:\n{result.stderr}")
    print(f"built {name}")
    return {"checkpoint": name, "reference": f"{name}/reference.npz",
            "library": f"{name}/compiled/libgdn-model.so",
            "executable": f"{name}/compiled/gdn-model"}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--compiler", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--target", default="cuda",
                        help="cuda, or cpu to try the check script here")
    parser.add_argument("--only", default="",
                        help="one model by name (bench/bench_gpu_model.py "
                             "times nenya-124m or nenya-1.3b alone)")
    parser.add_argument("--compile-flag", action="append", default=[],
                        help="a gdn-compile flag for every model (repeat "
                             "for more), e.g. --compile-flag="
                             "--cuda-merge-launches")
    parser.add_argument("--variant", action="append", default=[],
                        metavar="LABEL=FLAGS",
                        help="also build nenya-tiny and nenya-124m with "
                             "these gdn-compile flags (comma-separated) as "
                             "nenya-tiny-LABEL (checked) and "
                             "nenya-124m-LABEL (timed; bench_gpu_model.py "
                             "--variant LABEL=.../nenya-124m-LABEL/compiled)"
                             ", e.g. --variant stages3="
                             "--cuda-projection-tile-stages=3; repeatable")
    args = parser.parse_args()
    variants = []
    for spec in args.variant:
        label, sep, flags = spec.partition("=")
        if not sep or not label or not flags or not label.replace(
                "-", "").isalnum():
            parser.error(f"--variant: expected LABEL=FLAG[,FLAG...] with a "
                         f"label of letters, digits and dashes, got "
                         f"{spec!r}")
        variants.append((label, flags.split(",")))
    names = [name for name, _, _ in models() + BENCH_ONLY]
    if args.only and args.only not in names:
        parser.error(f"--only: expected one of {', '.join(names)}, got "
                     f"{args.only!r}")
    chosen = models() + [m for m in BENCH_ONLY if m[0] == args.only]
    manifest = {name: build(args.compiler, args.out, name, config, seed,
                            args.target, args.compile_flag)
                for name, config, seed in chosen
                if args.only in ("", name)}
    # The variants of the two models that the check runs and times.
    for label, flags in variants:
        for name, config, seed in models():
            if name not in ("nenya-tiny", "nenya-124m") or \
                    args.only not in ("", name):
                continue
            manifest[f"{name}-{label}"] = build(
                args.compiler, args.out, f"{name}-{label}", config, seed,
                args.target, args.compile_flag + flags,
                timed_only=name in TIMED_ONLY)
    for name in CHECKPOINTS if not args.only else ():
        manifest[name] = build_checkpoint(args.compiler, args.out, name,
                                          args.target, args.compile_flag)
    # One model built on request joins the models already in the folder.
    path = os.path.join(args.out, MANIFEST)
    if args.only and os.path.exists(path):
        with open(path) as f:
            manifest = {**json.load(f), **manifest}
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
