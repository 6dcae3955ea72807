#!/usr/bin/env bash
# Runs one fuzz target for RUNS inputs, starting from its seed corpus (kept
# as committed; new inputs go to WORKDIR), with the JSON dictionary. Exits
# non-zero on a crash, a hang (10 s per input), a leak or a sanitizer report;
# the input that caused it is left in WORKDIR.
#
#   fuzz/run.sh build/bin/gdn-fuzz-model_description \
#       fuzz/corpus/model_description /tmp/work 1000000 [DICT]
#
# DICT defaults to the JSON dictionary (fuzz/dicts/json.dict).
set -euo pipefail
FUZZER=$(realpath "$1") SEEDS=$(realpath "$2") WORKDIR=$3 RUNS=$4
DICT=$(realpath "${5:-$(dirname "${BASH_SOURCE[0]}")/dicts/json.dict}")
mkdir -p "$WORKDIR/corpus"
cd "$WORKDIR"
exec "$FUZZER" -runs="$RUNS" -seed=1 -max_len=4096 -timeout=10 \
  -rss_limit_mb=2048 -dict="$DICT" -print_final_stats=1 \
  "$WORKDIR/corpus" "$SEEDS"
