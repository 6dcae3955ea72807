"""Decode with the delta-rule state stored in bf16, beside the f32 state.

gdn.delta_rule_step keeps an f32 state; `gdn.delta_rule_step` on a
`tensor<..xbf16>` state (the dialect's bf16 storage: widened when read,
rounded when written, arithmetic in f32) halves the bytes a decode step
moves. `BF16StateSteps` compiles both forms of one configuration and runs
them side by side, for the error that bf16 storage adds over many steps
(python/tests/test_compiled_serving.py, bench/bench_bf16_state_error.py).
bf16 has no numpy dtype: the bf16 state is held as its uint16 bit patterns
(gdn.mlir.float32_to_bf16 / bf16_to_float32).
"""

import ctypes

import numpy as np

from . import cache
from .compiled import _compile_options, descriptor
from .mlir import format_scale, tensor_type

__all__ = ["BF16StateSteps"]


def module_source(heads, value_heads, key_dim, value_dim, scale):
    """@step_f32 and @step_bf16: one decode step on f32 activations with an
    f32 and with a bf16 state."""
    h, hv, k, v = heads, value_heads, key_dim, value_dim
    lines = ["module {"]
    for storage in ("f32", "bf16"):
        state = tensor_type(["?", hv, k, v], storage)
        args = [tensor_type(["?", h, k]), tensor_type(["?", h, k]),
                tensor_type(["?", hv, v]), tensor_type(["?", hv]),
                tensor_type(["?", hv]), state]
        results = f"{tensor_type(['?', hv, v])}, {state}"
        names = ["q", "k", "v", "g", "beta", "s"]
        signature = ", ".join(f"%{n}: {t}" for n, t in zip(names, args))
        lines += [
            f"  func.func @step_{storage}({signature}) -> ({results}) "
            f"attributes {{llvm.emit_c_interface}} {{",
            f"    %o, %n = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s "
            f"{{scale = {format_scale(scale)} : f32}} : "
            f"({', '.join(args)}) -> ({results})",
            f"    return %o, %n : {results}",
            "  }"]
    lines += ["}", ""]
    return "\n".join(lines)


class BF16StateSteps:
    """The compiled f32-state and bf16-state decode steps of one
    configuration (f32 activations)."""

    def __init__(self, heads, value_heads, key_dim, value_dim, scale=1.0,
                 compile_options=None):
        def prepare(library):
            for name in ("_mlir_ciface_step_f32", "_mlir_ciface_step_bf16"):
                function = getattr(library, name)
                function.restype = None
                function.argtypes = [ctypes.c_void_p] * 8
        self._library = cache.load(
            ("bf16_state_steps", heads, value_heads, key_dim, value_dim,
             format_scale(scale)),
            lambda: module_source(heads, value_heads, key_dim, value_dim,
                                  scale),
            _compile_options(64, compile_options), prepare)

    def _run(self, name, q, k, v, g, beta, state):
        arrays = [np.ascontiguousarray(x, dtype=np.float32)
                  for x in (q, k, v, g, beta)] + [state]
        o = np.empty(arrays[2].shape, np.float32)
        new_state = np.empty_like(state)
        descriptors = [descriptor(a) for a in arrays + [o, new_state]]
        getattr(self._library, name)(
            *[ctypes.addressof(d) for d in descriptors])
        return o, new_state

    def step_f32(self, q, k, v, g, beta, state):
        """(o, new f32 state) of one step from an f32 state."""
        return self._run("_mlir_ciface_step_f32", q, k, v, g, beta,
                         np.ascontiguousarray(state, dtype=np.float32))

    def step_bf16(self, q, k, v, g, beta, state_bits):
        """(o, new state as bf16 bits) of one step from a state held as
        bf16 bit patterns (uint16)."""
        bits = np.ascontiguousarray(state_bits, dtype=np.uint16)
        return self._run("_mlir_ciface_step_bf16", q, k, v, g, beta, bits)
