#!/usr/bin/env bash
# Every test: installs what is missing, builds, and runs ctest (the lit suite,
# the Python package tests and the generated-docs check).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}

"$ROOT/scripts/setup.sh"

echo "== running ctest"
cd "$BUILD_DIR"
# Two at a time: the Python tests (mostly one gdn-compile after another) and
# the fuzzers overlap the lit suite instead of waiting for it.
ctest --output-on-failure -j2
