"""Runs gdn.delta_rule / gdn.delta_rule_step through a gdn-opt pipeline and
mlir-runner on random inputs and compares o and the final state with the
float64 recurrence of gdn.reference. Prints one line per case and a summary
line "N passed, M failed"; exits non-zero on any failure.
"""

import argparse
import sys

import numpy as np

from gdn import inputs, mlir, reference

# Relative-error budgets (||x - ref|| / ||ref|| and max|x - ref| / max|ref|):
# f32 everywhere for the state; o is rounded to the element type of v.
OUTPUT_TOLERANCE = {"f32": 1e-5, "f16": 2e-3, "bf16": 1e-2}
STATE_TOLERANCE = 1e-5

# (B, T, H, Hv, K, V, element type, beta element type, initial state,
#  gate regime, dynamic B/T)
PREFILL_CASES = [
    (1, 1, 1, 1, 4, 4, "f32", "f32", False, "moderate", True),
    (2, 7, 1, 1, 8, 8, "f32", "f32", True, "moderate", True),
    (3, 13, 2, 4, 8, 16, "f32", "f32", True, "strong", True),
    (1, 33, 2, 2, 16, 8, "f32", "f32", False, "realistic", False),
    (2, 9, 1, 3, 4, 6, "f32", "f32", True, "weak", True),
    (1, 10, 2, 2, 8, 8, "f32", "f32", True, "none", True),
    (2, 21, 1, 2, 8, 8, "f32", "f32", True, "design", True),
    (2, 6, 2, 4, 8, 8, "bf16", "f32", True, "moderate", True),
    (2, 6, 1, 2, 8, 4, "bf16", "bf16", False, "moderate", False),
    (1, 5, 2, 2, 8, 8, "f16", "f16", True, "moderate", True),
    # Tiles that the CPU pipeline vectorizes (K, V multiples of 32).
    (1, 130, 1, 2, 32, 32, "f32", "f32", True, "design", True),
    (2, 64, 2, 2, 64, 32, "f32", "f32", False, "moderate", True),
    (1, 70, 1, 1, 32, 64, "bf16", "f32", True, "realistic", True),
]
STEP_CASES = [
    (1, 1, 1, 4, 4, "f32", "f32", "moderate", True),
    (3, 2, 4, 8, 16, "f32", "f32", "strong", True),
    (2, 1, 2, 8, 8, "bf16", "f32", "realistic", False),
    (2, 2, 2, 8, 8, "f16", "f16", "weak", True),
    (2, 2, 4, 32, 32, "f32", "f32", "design", True),
]


def check(label, actual, expected, tolerance):
    ratio, max_rel = reference.relative_error(actual, expected)
    ok = (actual.shape == expected.shape and np.all(np.isfinite(actual))
          and ratio <= tolerance and max_rel <= tolerance)
    print(f"{'PASS' if ok else 'FAIL'} {label}: ratio={ratio:.2e} "
          f"max_rel={max_rel:.2e} tol={tolerance:.0e}")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gdn-opt", required=True)
    parser.add_argument("--mlir-runner", required=True)
    parser.add_argument("--shared-libs", required=True,
                        help="comma-separated runner utility libraries")
    parser.add_argument("--pipeline", default="gdn-lower-to-cpu")
    args = parser.parse_args()
    libs = args.shared_libs.split(",")
    passed = failed = 0

    for seed, case in enumerate(PREFILL_CASES):
        (b, t, h, hv, kd, vd, etype, btype, init, regime, dynamic) = case
        data = inputs.delta_rule_inputs(seed, b, t, h, hv, kd, vd, regime,
                                        init)
        scale = 1.0 if seed % 2 == 0 else kd ** -0.5
        text, seen = mlir.delta_rule_program(
            data["q"], data["k"], data["v"], data["g"], data["beta"],
            data["initial_state"], scale, etype, btype, dynamic)
        o, state = mlir.run_program(text, args.gdn_opt, args.mlir_runner,
                                    libs, args.pipeline)
        ref_o, ref_state = reference.delta_rule(
            seen["q"], seen["k"], seen["v"], seen["g"], seen["beta"],
            seen.get("state"), scale)
        label = (f"delta_rule B={b} T={t} H={h} Hv={hv} K={kd} V={vd} "
                 f"{etype} beta={btype} init={init} gates={regime}")
        for ok in (check(label + " o", o, ref_o, OUTPUT_TOLERANCE[etype]),
                   check(label + " state", state, ref_state,
                         STATE_TOLERANCE)):
            passed, failed = passed + ok, failed + (not ok)

    for seed, case in enumerate(STEP_CASES, start=100):
        (b, h, hv, kd, vd, etype, btype, regime, dynamic) = case
        data = inputs.delta_rule_inputs(seed, b, 1, h, hv, kd, vd, regime,
                                        initial_state=True)
        one = {n: data[n][:, 0] for n in ("q", "k", "v", "g", "beta")}
        text, seen = mlir.delta_rule_program(
            one["q"], one["k"], one["v"], one["g"], one["beta"],
            data["initial_state"], 0.5, etype, btype, dynamic, step=True)
        o, state = mlir.run_program(text, args.gdn_opt, args.mlir_runner,
                                    libs, args.pipeline)
        ref_o, ref_state = reference.delta_rule_step(
            seen["q"], seen["k"], seen["v"], seen["g"], seen["beta"],
            seen["state"], 0.5)
        label = (f"delta_rule_step B={b} H={h} Hv={hv} K={kd} V={vd} {etype} "
                 f"beta={btype} gates={regime}")
        for ok in (check(label + " o", o, ref_o, OUTPUT_TOLERANCE[etype]),
                   check(label + " state", state, ref_state,
                         STATE_TOLERANCE)):
            passed, failed = passed + ok, failed + (not ok)

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
