#!/usr/bin/env bash
# Installs the system packages gdn needs (when missing), then configures and
# builds the project into build/. Idempotent: a second run only rebuilds what
# changed.
#
#   scripts/setup.sh            # install + configure + build
#   BUILD_DIR=out scripts/setup.sh
#   GDN_SANITIZE=address,undefined BUILD_DIR=build-sanitized scripts/setup.sh
#                               # everything instrumented, at -O1
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
LLVM=/usr/lib/llvm-22

PACKAGES=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 lld-22
  libomp-22-dev libclang-rt-22-dev cmake ninja-build python3-numpy
  python3-pytest python3-pip python3-setuptools libpcre2-dev libutf8proc-dev
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "== all packages present"
fi

SANITIZE_ARGS=()
if [[ -n ${GDN_SANITIZE:-} ]]; then
  # -O1: the sanitized build exists to run the tests, and builds faster.
  SANITIZE_ARGS=(-DGDN_SANITIZE="$GDN_SANITIZE"
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG")
fi

if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  echo "== configuring $BUILD_DIR"
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" "${SANITIZE_ARGS[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=$LLVM/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=$LLVM/bin/lit \
    -DCMAKE_C_COMPILER=$LLVM/bin/clang \
    -DCMAKE_CXX_COMPILER=$LLVM/bin/clang++ \
    -DLLVM_USE_LINKER=lld \
    -DLLVM_PARALLEL_LINK_JOBS=1
fi

echo "== building"
# Linking the tools takes several GiB each; one link job at a time is enough
# on small machines.
cmake --build "$BUILD_DIR"
