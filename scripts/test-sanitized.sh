#!/usr/bin/env bash
# The lit and pytest suites once more, on a build in which everything of gdn
# is compiled with AddressSanitizer and UndefinedBehaviorSanitizer (the
# tools, their libraries and the runtime that compiled models link), into
# build-sanitized/. Any sanitizer report fails the test that caused it
# (-fno-sanitize-recover). The fuzz targets are not built here: they carry
# their own sanitizers in the main build. docs/reliability.md says what runs.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BUILD_DIR=${SANITIZED_BUILD_DIR:-$ROOT/build-sanitized}
export GDN_SANITIZE=address,undefined

"$ROOT/scripts/setup.sh"

echo "== running ctest under AddressSanitizer and UndefinedBehaviorSanitizer"
cd "$BUILD_DIR"
ctest --output-on-failure -j2
