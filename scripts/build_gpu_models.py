"""Compiles the models of the GPU model check (gpu_model_check.py) for
CUDA into a folder: per model its description, seeded weights and the
directory `gdn-compile model.json --target=cuda` writes, with a manifest
(models.json). See scripts/build-gpu-artifacts.sh."""

import argparse
import json
import os
import subprocess
import sys

from gdn import model, safetensors

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))

from model_configs import hybrid_config  # noqa: E402

MANIFEST = "models.json"


def models():
    """(name, config, weights seed) of every checked model: the bundled
    example and a hybrid with q LoRA and untied embeddings."""
    with open(os.path.join(ROOT, "examples", "nenya-tiny", "model.json")) as f:
        nenya_tiny = json.load(f)
    lora = hybrid_config(q_lora_rank=8, num_layers=5)
    return [("nenya-tiny", nenya_tiny, 0), ("hybrid-qlora", lora, 3)]


def build(compiler, out, name, config, seed, target):
    """The model's folder; the weights in f32 and in bf16 (one library
    loads either)."""
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    config_path = os.path.join(folder, "model.json")
    with open(config_path, "w") as f:
        json.dump(config, f, indent=1)
    weights = model.init_weights(config, seed)
    weights_path = os.path.join(folder, "model.safetensors")
    safetensors.save(weights_path, weights, "f32")
    safetensors.save(os.path.join(folder, "model-bf16.safetensors"), weights,
                     "bf16")
    command = [compiler, config_path, f"--target={target}", "-o",
               os.path.join(folder, "compiled")]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"compiling {name} failed:\n{result.stderr}")
    print(f"built {name}")
    return {"config": f"{name}/model.json",
            "weights": f"{name}/model.safetensors",
            "weights_bf16": f"{name}/model-bf16.safetensors",
            "library": f"{name}/compiled/libgdn-model.so",
            "executable": f"{name}/compiled/gdn-model"}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--compiler", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--target", default="cuda",
                        help="cuda, or cpu to try the check script here")
    args = parser.parse_args()
    manifest = {name: build(args.compiler, args.out, name, config, seed,
                            args.target)
                for name, config, seed in models()}
    with open(os.path.join(args.out, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
