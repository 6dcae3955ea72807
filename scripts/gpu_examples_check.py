#!/usr/bin/env python3
"""Runs the bundled .mlir examples compiled for CUDA on the GPU machine and
checks them (scripts/build_gpu_examples.sh writes the folder):

- delta_rule_cuda, examples/delta_rule.mlir's @main as a CUDA executable:
  its printed tensors equal the CPU executable's (delta_rule_cpu.txt,
  written on the build machine) to 1e-5;
- libdelta_rule_gpu.so, examples/delta_rule_gpu.mlir as a CUDA library:
  @prefill and @decode on torch CUDA tensors (bf16 q, k, v) against the
  float64 reference;
- with matplotlib, gdn.report's plot of the bundled model's cost report
  (report.json), written to the output folder.

Prints one line per check and "N passed, M failed".

  python3 gpu_examples_check.py [--out DIR]
"""

import argparse
import ctypes
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from gdn import inputs, reference  # noqa: E402


def numbers(text):
    """The printed tensors' values (the header lines, with their
    addresses, left out)."""
    values = [line for line in text.splitlines() if "Memref" not in line]
    return np.array([float(x) for x in re.findall(
        r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", "\n".join(values))])


def check_executable(check):
    run = subprocess.run([os.path.join(HERE, "delta_rule_cuda")],
                         capture_output=True, text=True)
    with open(os.path.join(HERE, "delta_rule_cpu.txt")) as f:
        expected = numbers(f.read())
    got = numbers(run.stdout)
    same = got.shape == expected.shape and np.allclose(got, expected,
                                                       atol=1e-5)
    check(run.returncode == 0 and same,
          "delta_rule.mlir @main on the GPU prints the CPU's tensors",
          f"exit {run.returncode}, {got.size} numbers against "
          f"{expected.size}")


def check_library(check):
    import torch
    from gdn.cuda import tensor_descriptor
    library = ctypes.CDLL(os.path.join(HERE, "libdelta_rule_gpu.so"))
    scale = 128 ** -0.5
    for batch, tokens in ((1, 1), (2, 100), (1, 1000)):
        x = inputs.delta_rule_inputs(seed=tokens, batch=batch, tokens=tokens,
                                     heads=16, value_heads=32, key_dim=128,
                                     value_dim=128, regime="strong",
                                     initial_state=True)
        cuda = {n: torch.from_numpy(x[n]).cuda() for n in
                ("q", "k", "v", "g", "beta", "initial_state")}
        for n in ("q", "k", "v"):
            cuda[n] = cuda[n].bfloat16()
        o = torch.empty_like(cuda["v"])
        state = torch.empty_like(cuda["initial_state"])
        tensors = [cuda[n] for n in ("q", "k", "v", "g", "beta",
                                     "initial_state")] + [o, state]
        descriptors = [tensor_descriptor(t) for t in tensors]
        library._mlir_ciface_prefill(
            *[ctypes.byref(d) for d in descriptors])
        torch.cuda.synchronize()
        rounded = [cuda[n].float().cpu().numpy() for n in ("q", "k", "v")]
        expected_o, expected_state = reference.delta_rule(
            *rounded, x["g"], x["beta"], x["initial_state"], scale)
        error_o = max(reference.relative_error(o.float().cpu().numpy(),
                                               expected_o))
        error_s = max(reference.relative_error(state.cpu().numpy(),
                                               expected_state))
        check(error_o < 2e-2 and error_s < 1e-2,
              f"delta_rule_gpu.mlir @prefill B={batch} T={tokens}",
              f"relative error o {error_o:.1e}, state {error_s:.1e}")
        # One decode token from that state, in place.
        t = {n: cuda[n][:, 0].contiguous() for n in ("q", "k", "v", "g",
                                                     "beta")}
        o_t = torch.empty_like(t["v"])
        before = state.cpu().numpy()
        step = [t[n] for n in ("q", "k", "v", "g", "beta")] + [state, o_t,
                                                                state]
        descriptors = [tensor_descriptor(s) for s in step]
        library._mlir_ciface_decode(*[ctypes.byref(d) for d in descriptors])
        torch.cuda.synchronize()
        expected_o_t, expected_new = reference.delta_rule_step(
            *[t[n].float().cpu().numpy() for n in ("q", "k", "v", "g",
                                                   "beta")], before, scale)
        error = max(reference.relative_error(state.cpu().numpy(),
                                             expected_new))
        check(error < 1e-2, f"delta_rule_gpu.mlir @decode B={batch} "
              f"in place", f"relative error of the state {error:.1e}")


def plot_report(check, out):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("SKIP the report plot: no matplotlib")
        return
    from gdn import report
    with open(os.path.join(HERE, "report.json")) as f:
        costs = json.load(f)
    path = os.path.join(out, "nenya-tiny-costs.png")
    report.plot(costs, path)
    with open(path, "rb") as f:
        check(f.read(8) == b"\x89PNG\r\n\x1a\n", "gdn.report.plot",
              path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=HERE)
    args = parser.parse_args()
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        print("gpu_examples_check.py: no CUDA driver found (libcuda.so.1 "
              "cannot be loaded): run it on a machine with an NVIDIA GPU",
              file=sys.stderr)
        return 2
    results = {"passed": 0, "failed": 0}

    def check(ok, what, detail=""):
        results["passed" if ok else "failed"] += 1
        print(f"{'PASS' if ok else 'FAIL'} {what}" +
              (f": {detail}" if detail else ""), flush=True)

    check_executable(check)
    check_library(check)
    plot_report(check, args.out)
    print(f"\n{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
