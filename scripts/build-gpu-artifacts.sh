#!/usr/bin/env bash
# Builds what the GPU machine needs into one small folder (default
# out/gpu): the CUDA kernels of every configuration the GPU check uses, as
# shared libraries with a manifest, the pure-Python gdn package, and the
# check script. Copy the folder to the GPU machine and run
#   python3 gpu_check.py
# there (it needs CUDA's driver, numpy and torch; no MLIR).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/out/gpu}
"$ROOT/scripts/setup.sh"
rm -rf "$OUT"
mkdir -p "$OUT"
PYTHONPATH="$ROOT/python" /usr/bin/python3 "$ROOT/scripts/build_gpu_artifacts.py" \
  --compiler "$ROOT/build/bin/gdn-compile" --out "$OUT"
cp -r "$ROOT/python/gdn" "$OUT/gdn"
rm -rf "$OUT/gdn/__pycache__"
cp "$ROOT/scripts/gpu_check.py" "$OUT/gpu_check.py"
du -sh "$OUT"
