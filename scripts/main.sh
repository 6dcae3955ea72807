#!/usr/bin/env bash
# The main job: installs what is missing, builds, then compiles the bundled
# examples and runs them: examples/delta_rule.mlir (gdn ops in func.func)
# through gdn-opt's gdn-lower-to-cpu pipeline and mlir-runner, and the
# bundled hybrid model examples/nenya-kjv (trained on the King James Bible,
# docs/training.md) through gdn-compile into its executable, prefilling a
# prompt and generating 200 bytes of text.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
LLVM=/usr/lib/llvm-22

"$ROOT/scripts/setup.sh"

echo "== compiling and running examples/delta_rule.mlir"
"$BUILD_DIR/bin/gdn-opt" "$ROOT/examples/delta_rule.mlir" --gdn-lower-to-cpu |
  "$LLVM/bin/mlir-runner" -e main -entry-point-result=void \
    -shared-libs=$LLVM/lib/libmlir_runner_utils.so,$LLVM/lib/libmlir_c_runner_utils.so,$LLVM/lib/libomp.so

echo "== compiling and running the bundled model examples/nenya-kjv"
EXAMPLE=$ROOT/examples/nenya-kjv
"$BUILD_DIR/bin/gdn-compile" "$EXAMPLE/model.json" -o "$BUILD_DIR/nenya-kjv"
"$BUILD_DIR/nenya-kjv/gdn-model" "And God said" -n 200
