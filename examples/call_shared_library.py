"""Calls @prefill and @decode of examples/delta_rule.mlir through the C
interface of the shared library gdn-compile makes from it, and compares
both with the float64 reference:

    build/bin/gdn-compile examples/delta_rule.mlir --emit=shared -o build/libdelta_rule.so
    PYTHONPATH=python /usr/bin/python3 examples/call_shared_library.py build/libdelta_rule.so

@prefill takes T tokens (a dynamic dimension) and returns o [1, T, 2, 4] and
the state [1, 2, 4, 4]; in the library both are out-parameters the caller
allocates (docs/c-abi.md). gdn.delta_rule does the same for any shape,
compiling and caching the library itself.
"""

import ctypes
import sys

import numpy as np

from gdn import compiled, inputs, reference


def call(library, name, arrays):
    """Calls _mlir_ciface_<name> with one memref descriptor per array."""
    descriptors = [compiled.descriptor(a) for a in arrays]
    function = getattr(library, "_mlir_ciface_" + name)
    function.argtypes = [ctypes.c_void_p] * len(descriptors)
    function.restype = None
    function(*[ctypes.addressof(d) for d in descriptors])


def main(path, tokens=7):
    library = ctypes.CDLL(path)
    x = inputs.delta_rule_inputs(seed=0, batch=1, tokens=tokens, heads=1,
                                 value_heads=2, key_dim=4, value_dim=4)
    operands = [x[name] for name in ("q", "k", "v", "g", "beta")]
    o = np.empty((1, tokens, 2, 4), np.float32)
    state = np.empty((1, 2, 4, 4), np.float32)
    call(library, "prefill", operands + [o, state])
    expected_o, expected_state = reference.delta_rule(*operands)
    print("prefill: relative error of o %.1e, of the state %.1e" % (
        max(reference.relative_error(o, expected_o)),
        max(reference.relative_error(state, expected_state))))

    # One more token from that state: the step's result equals a prefill
    # over tokens + 1.
    y = inputs.delta_rule_inputs(seed=1, batch=1, tokens=1, heads=1,
                                 value_heads=2, key_dim=4, value_dim=4)
    step = [np.ascontiguousarray(y[name][:, 0])
            for name in ("q", "k", "v", "g", "beta")]
    o_t = np.empty((1, 2, 4), np.float32)
    new_state = np.empty_like(state)
    call(library, "decode", step + [state, o_t, new_state])
    expected_o_t, expected_new = reference.delta_rule_step(
        *step, expected_state)
    errors = (max(reference.relative_error(o_t, expected_o_t)),
              max(reference.relative_error(new_state, expected_new)))
    print("decode:  relative error of o %.1e, of the state %.1e" % errors)
    worst = max(errors + reference.relative_error(o, expected_o))
    return 0 if worst < 1e-5 else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
