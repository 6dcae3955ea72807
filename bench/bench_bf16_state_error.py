"""The error that bf16 state storage adds to decode, against the f32 state,
over many steps at the design document's gate strengths (and others).

    PYTHONPATH=python /usr/bin/python3 bench/bench_bf16_state_error.py

Both states start at zero and see the same random inputs
(gdn.inputs.delta_rule_inputs); the table gives the relative (l2) error of
the bf16 state after the last step and at its worst, and of the outputs at
their worst. Also the bytes each step moves for the state.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" /
                       "tests"))

from gdn.state_storage import BF16StateSteps  # noqa: E402
from test_compiled_serving import bf16_state_drift  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--value-heads", type=int, default=4)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--regimes", default="design,weak,moderate,strong")
    args = parser.parse_args()
    h, hv, d = args.heads, args.value_heads, args.dim
    steps = BF16StateSteps(h, hv, d, d, scale=d ** -0.5)
    print(f"H={h} Hv={hv} K=V={d}, {args.steps} decode steps from zeros; "
          f"state bytes per sequence: f32 {hv * d * d * 4}, "
          f"bf16 {hv * d * d * 2}")
    print("| gates | state error at the end | state error, worst | "
          "output error, worst |\n|---|---|---|---|")
    for regime in args.regimes.split(","):
        end, worst_state, worst_output = bf16_state_drift(
            steps, 1, 1, args.steps, h, hv, d, d, regime)
        print(f"| {regime} | {end:.2e} | {worst_state:.2e} | "
              f"{worst_output:.2e} |")


if __name__ == "__main__":
    main()
