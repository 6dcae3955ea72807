"""Packed sequences and pools of states on the CPU, beside their dense
equivalents in the same run.

Prefill: N sequences of mixed lengths packed with cu_seqlens, against N
sequences of equal length with the same total (one dense [N, T] call).
Decode: B entries reading and writing random slots of a pool, against the
dense in-place step on a [B, ...] state. Prints a table of medians.

    PYTHONPATH=python /usr/bin/python3 bench/bench_serving_cpu.py
"""

import argparse
import time

import numpy as np

import gdn
from gdn import inputs


def median_ms(function, repeats):
    function()                                  # compile and warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=16)
    parser.add_argument("--total", type=int, default=8192)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--value-heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--slots", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    h, hv, d = args.heads, args.value_heads, args.dim
    n, total = args.sequences, args.total
    rng = np.random.default_rng(0)

    # Mixed lengths with the given total: random cuts of [0, total].
    cuts = np.sort(rng.choice(np.arange(1, total), n - 1, replace=False))
    cu = np.concatenate([[0], cuts, [total]]).astype(np.int32)
    packed = inputs.delta_rule_inputs(1, 1, total, h, hv, d, d)
    dense = inputs.delta_rule_inputs(2, n, total // n, h, hv, d, d)
    names = ("q", "k", "v", "g", "beta")
    rows = []
    rows.append(("prefill, dense [N, T/N]", median_ms(
        lambda: gdn.delta_rule(*[dense[x] for x in names]), args.repeats)))
    rows.append(("prefill, packed (cu_seqlens)", median_ms(
        lambda: gdn.delta_rule(*[packed[x] for x in names], cu_seqlens=cu),
        args.repeats)))

    b = args.batch
    step = inputs.delta_rule_inputs(3, b, 1, h, hv, d, d)
    one = [step[x][:, 0] for x in names]
    state = np.zeros((b, hv, d, d), np.float32)
    pool = np.zeros((args.slots, hv, d, d), np.float32)
    slots = rng.choice(args.slots, b, replace=False).astype(np.int32)
    rows.append((f"decode B={b}, dense in place", median_ms(
        lambda: gdn.delta_rule_step(*one, state, inplace=True),
        args.repeats * 4)))
    rows.append((f"decode B={b}, pool of {args.slots} slots", median_ms(
        lambda: gdn.delta_rule_step(*one, pool, state_indices=slots),
        args.repeats * 4)))

    print(f"H={h} Hv={hv} K=V={d}; prefill {n} sequences, {total} tokens "
          f"(lengths {int(np.diff(cu).min())}..{int(np.diff(cu).max())})")
    print(f"| case | median ms |\n|---|---|")
    for name, ms in rows:
        print(f"| {name} | {ms:.2f} |")


if __name__ == "__main__":
    main()
