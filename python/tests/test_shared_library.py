"""Shared libraries of modules whose public functions call each other:
the exported functions take their results as out-parameters, the internal
calls go to private copies that return them (gdn-results-to-out-params),
and the numbers match the float64 reference."""

import ctypes
import importlib.util
import pathlib
import subprocess

import numpy as np

from gdn import cache, compiled, inputs, reference

REPO = pathlib.Path(__file__).resolve().parents[2]

# @final_state returns what its call of @prefill computed: a buffer the
# private copy allocated, copied into the caller's out-parameter.
MODULE = """
!qk = tensor<?x?x1x8xf32>
!v = tensor<?x?x2x16xf32>
!gate = tensor<?x?x2xf32>
!state = tensor<?x2x8x16xf32>
func.func @prefill(%q: !qk, %k: !qk, %v: !v, %g: !gate, %beta: !gate)
    -> (!v, !state) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (!qk, !qk, !v, !gate, !gate) -> (!v, !state)
  return %o, %s : !v, !state
}
func.func @final_state(%q: !qk, %k: !qk, %v: !v, %g: !gate, %beta: !gate)
    -> !state {
  %o, %s = func.call @prefill(%q, %k, %v, %g, %beta)
      : (!qk, !qk, !v, !gate, !gate) -> (!v, !state)
  return %s : !state
}
"""


def _compile(source, tmp_path, name):
    path = tmp_path / f"{name}.so"
    subprocess.run([cache.find_compiler(), str(source), "--quiet",
                    "--emit=shared", "-o", str(path)], check=True)
    symbols = subprocess.run(["/usr/lib/llvm-22/bin/llvm-nm", "-D",
                              "--defined-only", str(path)],
                             capture_output=True, text=True, check=True)
    return path, symbols.stdout


def test_bundled_example_library(tmp_path):
    path, symbols = _compile(REPO / "examples" / "delta_rule.mlir", tmp_path,
                             "delta_rule")
    assert "_mlir_ciface_prefill" in symbols
    # The private copy has no C interface.
    assert "_mlir_ciface_prefill_returning_buffers" not in symbols
    spec = importlib.util.spec_from_file_location(
        "call_shared_library", REPO / "examples" / "call_shared_library.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    for tokens in (1, 7, 70):
        assert example.main(str(path), tokens) == 0


def test_public_function_returning_an_internal_calls_result(tmp_path):
    source = tmp_path / "module.mlir"
    source.write_text(MODULE)
    path, symbols = _compile(source, tmp_path, "module")
    assert "_mlir_ciface_final_state" in symbols
    library = ctypes.CDLL(str(path))
    for batch, tokens in ((1, 1), (2, 37), (3, 130)):
        x = inputs.delta_rule_inputs(seed=tokens, batch=batch, tokens=tokens,
                                     heads=1, value_heads=2, key_dim=8,
                                     value_dim=16, regime="strong")
        operands = [x[n] for n in ("q", "k", "v", "g", "beta")]
        state = np.full((batch, 2, 8, 16), np.nan, np.float32)
        descriptors = [compiled.descriptor(a) for a in operands + [state]]
        function = library._mlir_ciface_final_state
        function.argtypes = [ctypes.c_void_p] * len(descriptors)
        function(*[ctypes.addressof(d) for d in descriptors])
        _, expected = reference.delta_rule(*operands)
        assert max(reference.relative_error(state, expected)) < 1e-5
