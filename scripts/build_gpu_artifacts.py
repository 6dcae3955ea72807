"""Compiles the CUDA kernel configurations of the GPU check into a folder
with a manifest (see scripts/build-gpu-artifacts.sh)."""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from gdn.compiled import module_source

# (H, Hv, K, V) of the CPU test matrix plus the large K = V = 128 models.
HEADS = [(1, 1, 16, 16), (4, 4, 64, 64), (2, 4, 64, 128), (4, 4, 128, 128),
         (16, 16, 128, 128), (32, 32, 128, 128), (16, 32, 128, 128)]
ELEMENT_TYPES = ["f32", "bf16"]
# Variants of the decode timing configuration: threads per state column.
KEY_SPLIT_VARIANTS = [1, 4]
# The bf16 prefill timing configurations again with the token recurrence
# instead of the chunked tensor-core scan, timed side by side.
# Chunked-scan variants timed beside the default: (suffix, options).
SCAN_VARIANTS = [("vt64", ["--cuda-multiprocessors=1"]),
                 ("vt32", ["--cuda-value-tile=32", "--cuda-multiprocessors=1"]),
                 ("w8", ["--cuda-scan-warps=8"])]
RECURRENT_VARIANTS = [(16, 16, 128, 128), (32, 32, 128, 128),
                      (16, 32, 128, 128)]


def config_name(h, hv, k, v, et):
    return f"h{h}_hv{hv}_k{k}_v{v}_{et}"


def compile_config(compiler, out, name, config, extra=()):
    """Compiles one configuration; returns its manifest entry."""
    source = module_source(config["heads"], config["value_heads"],
                           config["key_dim"], config["value_dim"],
                           config["element_type"],
                           config["beta_element_type"], config["scale"])
    library = f"{name}.so"
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(source)
    try:
        command = [compiler, f.name, "--target=cuda", "--emit=shared",
                   *extra, "-o", os.path.join(out, library)]
        result = subprocess.run(command, capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if result.returncode != 0:
        sys.exit(f"compiling {name} failed:\n{result.stderr}")
    print(f"built {library}")
    return {"library": library, "config": config}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--compiler", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    manifest = {}
    for (h, hv, k, v) in HEADS:
        for et in ELEMENT_TYPES:
            name = config_name(h, hv, k, v, et)
            config = dict(heads=h, value_heads=hv, key_dim=k, value_dim=v,
                          element_type=et, beta_element_type="f32",
                          scale=k ** -0.5)
            manifest[name] = compile_config(args.compiler, args.out, name,
                                            config)
    base = config_name(16, 32, 128, 128, "bf16")
    for splits in KEY_SPLIT_VARIANTS:
        name = f"{base}_ks{splits}"
        manifest[name] = compile_config(
            args.compiler, args.out, name, manifest[base]["config"],
            [f"--cuda-key-splits={splits}"])
    for (h, hv, k, v) in RECURRENT_VARIANTS:
        base = config_name(h, hv, k, v, "bf16")
        manifest[f"{base}_recurrent"] = compile_config(
            args.compiler, args.out, f"{base}_recurrent",
            manifest[base]["config"], ["--cuda-chunked-prefill=false"])
    # Tiling variants of the chunked scan: (value tile, warps).
    for suffix, options in SCAN_VARIANTS:
        for (h, hv, k, v) in RECURRENT_VARIANTS:
            base = config_name(h, hv, k, v, "bf16")
            name = f"{base}_{suffix}"
            manifest[name] = compile_config(
                args.compiler, args.out, name, manifest[base]["config"],
                options)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
