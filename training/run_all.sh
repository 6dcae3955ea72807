#!/usr/bin/env bash
# The comparison on one GPU: the hybrid and the softmax baseline, each with
# every seed of $SEEDS (default "0 1 2"), all runs at once (each is too
# small to fill the GPU), then the table and the plot. Run where PyTorch
# and a GPU are, after training/corpus.py has made training/data (here or
# elsewhere: the text travels as files).
#
#   training/run_all.sh STEPS OUT [train.py options...]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STEPS=${1:?usage: run_all.sh STEPS OUT [options]}
OUT=${2:?usage: run_all.sh STEPS OUT [options]}
shift 2
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
pids=()
for model in hybrid softmax; do
  for seed in ${SEEDS:-0 1 2}; do
    mkdir -p "$OUT/$model-$seed"
    python3 "$HERE/train.py" --model "$model" --seed "$seed" --steps "$STEPS" \
      --out "$OUT/$model-$seed" "$@" > "$OUT/$model-$seed/train.log" 2>&1 &
    pids+=($!)
  done
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
tail -n 3 "$OUT"/*/train.log
[ "$status" = 0 ] || { echo "a training run failed" >&2; exit 1; }
python3 "$HERE/report.py" "$OUT"/hybrid-[0-9] "$OUT"/softmax-[0-9] \
  --plot "$OUT/loss-curves.png" --markdown "$OUT/table.md"
