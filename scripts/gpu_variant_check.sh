#!/usr/bin/env bash
# On the GPU machine: checks and times the variants that
# `scripts/build_gpu_models.py --variant LABEL=FLAGS` built into a folder
# (DIR/models with its models.json), in one device call:
#   1. the GPU model check of every model of the folder (the nenya-tiny
#      variants are checked against the float64 reference like nenya-tiny);
#   2. memcheck, racecheck, synccheck and initcheck on each nenya-tiny
#      variant;
#   3. nenya-124m's benchmark (bench/bench_gpu_model.py) with every
#      nenya-124m variant beside the default build, PyTorch in the same run;
#   4. with --profile, Nsight's kernel sums of an 8192-token prefill of the
#      default build and of each variant, as CSVs into $OUT (or DIR).
# Each step has its own time limit, so that a slow one leaves the others
# their turn. Usage, from the repository's root:
#   scripts/gpu_variant_check.sh DIR [--profile] [--dry-run]
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${1:?usage: scripts/gpu_variant_check.sh DIR [--profile] [--dry-run]}
shift
PROFILE=0
DRY=0
for arg in "$@"; do
  case $arg in
    --profile) PROFILE=1 ;;
    --dry-run) DRY=1 ;;
    *) echo "gpu_variant_check.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
DIR=$(cd "$DIR" && pwd)
if [ ! -f "$DIR/models/models.json" ]; then
  echo "gpu_variant_check.sh: $DIR/models/models.json not found (build it" \
       "with scripts/build_gpu_models.py --out $DIR/models)" >&2
  exit 2
fi
CSV=${OUT:-$DIR}
PYTHON=${PYTHON:-python3}

# The variants' names, from the manifest.
variants_of() {
  $PYTHON - "$DIR/models/models.json" "$1-" <<'PY'
import json, sys
for name in json.load(open(sys.argv[1])):
    if name.startswith(sys.argv[2]):
        print(name)
PY
}
mapfile -t TINY < <(variants_of nenya-tiny)
mapfile -t LARGE < <(variants_of nenya-124m)

run() {
  local limit=$1
  shift
  echo "+ $*"
  [ "$DRY" = 1 ] && return 0
  timeout "$limit" "$@"
  local status=$?
  [ "$status" = 124 ] && echo "(stopped after $limit s)"
  return 0
}

# The check and the profiler find the models beside them.
if [ "$DRY" = 0 ]; then
  cp "$ROOT/scripts/gpu_model_check.py" "$ROOT/scripts/gpu_profile_model.py" \
     "$DIR/"
  rm -rf "$DIR/gdn"
  cp -r "$ROOT/python/gdn" "$DIR/gdn"
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fi
cd "$DIR"

echo "== GPU model check"
run 300 $PYTHON -u gpu_model_check.py
for name in "${TINY[@]}"; do
  echo "== sanitizers on $name"
  run 200 $PYTHON -u gpu_model_check.py --only "$name" \
    --sanitize memcheck,racecheck,synccheck,initcheck
done

echo "== benchmark of nenya-124m and its variants"
variants=()
for name in "${LARGE[@]}"; do
  variants+=(--variant "${name#nenya-124m-}=$DIR/models/$name/compiled")
done
run 200 $PYTHON -u "$ROOT/bench/bench_gpu_model.py" "$DIR/models/nenya-124m" \
  --seed 1 --prompts 2048,8192 --decode-cases 1@2048 "${variants[@]}"

if [ "$PROFILE" = 1 ]; then
  for name in nenya-124m "${LARGE[@]}"; do
    echo "== Nsight: 8192-token prefill of $name -> $CSV/ncu-prefill-$name.csv"
    run 90 bash -c "ncu --profile-from-start off \
      --metrics gpu__time_duration.sum --csv $PYTHON gpu_profile_model.py \
      models/$name --tokens 8192 > $CSV/ncu-prefill-$name.csv \
      2> $CSV/ncu-prefill-$name.err"
  done
fi
