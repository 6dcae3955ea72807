#!/usr/bin/env bash
# Builds what gpu_examples_check.py needs into one folder (default
# out/gpu-examples): the bundled .mlir examples compiled for CUDA (an
# executable and a library), the CPU executable's output to compare with,
# the bundled model's cost report, the gdn package and the check script.
# Copy the folder to the GPU machine and run python3 gpu_examples_check.py.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/out/gpu-examples}
COMPILE=$ROOT/build/bin/gdn-compile
"$ROOT/scripts/setup.sh"
rm -rf "$OUT"
mkdir -p "$OUT"
"$COMPILE" "$ROOT/examples/delta_rule.mlir" --quiet --target=cuda --emit=exe -o "$OUT/delta_rule_cuda"
"$COMPILE" "$ROOT/examples/delta_rule_gpu.mlir" --quiet --target=cuda --emit=shared -o "$OUT/libdelta_rule_gpu.so"
"$COMPILE" "$ROOT/examples/delta_rule.mlir" --quiet --emit=exe -o "$OUT/delta_rule_cpu"
"$OUT/delta_rule_cpu" > "$OUT/delta_rule_cpu.txt"
rm "$OUT/delta_rule_cpu"
"$COMPILE" "$ROOT/examples/nenya-tiny/model.json" --emit=report --format=json -o "$OUT/report.json"
cp -r "$ROOT/python/gdn" "$OUT/gdn"
rm -rf "$OUT/gdn/__pycache__"
cp "$ROOT/scripts/gpu_examples_check.py" "$OUT/"
du -sh "$OUT"
