#!/usr/bin/env bash
# Builds what the GPU machine needs into one small folder (default
# out/gpu): the CUDA kernels of every configuration the GPU check uses, as
# shared libraries with a manifest, the models of the GPU model check
# compiled for CUDA (models/), the pure-Python gdn package, and the check
# scripts. Copy the folder to the GPU machine and run
#   python3 gpu_check.py; python3 gpu_model_check.py
# there (they need CUDA's driver and numpy, gpu_check.py torch too; no
# MLIR).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/out/gpu}
"$ROOT/scripts/setup.sh"
rm -rf "$OUT"
mkdir -p "$OUT"
PYTHONPATH="$ROOT/python" /usr/bin/python3 "$ROOT/scripts/build_gpu_artifacts.py" \
  --compiler "$ROOT/build/bin/gdn-compile" --out "$OUT"
PYTHONPATH="$ROOT/python" /usr/bin/python3 "$ROOT/scripts/build_gpu_models.py" \
  --compiler "$ROOT/build/bin/gdn-compile" --out "$OUT/models"
cp -r "$ROOT/python/gdn" "$OUT/gdn"
rm -rf "$OUT/gdn/__pycache__"
cp "$ROOT/scripts/gpu_check.py" "$ROOT/scripts/gpu_model_check.py" \
  "$ROOT/scripts/gpu_serving_check.py" "$ROOT/scripts/gpu_pool_check.py" \
  "$ROOT/scripts/gpu_profile_model.py" "$OUT/"
du -sh "$OUT"
