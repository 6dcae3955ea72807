"""Compiled gated delta rule for numpy arrays.

`delta_rule` (prefill) and `delta_rule_step` (one decode token) emit a small
MLIR module with `gdn.delta_rule` / `gdn.delta_rule_step`, compile it with the
`gdn-compile` driver into a shared library on first use for each
configuration, cache the library on disk (gdn.cache, which also says where
gdn-compile and the cache directory are found) and call it through ctypes.

The library exports MLIR's C interface with the results turned into
caller-allocated out-parameters:

    void _mlir_ciface_gdn_delta_rule(desc *q, desc *k, desc *v, desc *g,
                                     desc *beta, desc *h0, desc *o, desc *s);
    void _mlir_ciface_gdn_delta_rule_step(desc *q, desc *k, desc *v,
                                          desc *g, desc *beta, desc *s0,
                                          desc *o, desc *s_new);

where `desc` is a ranked memref descriptor
`{void *allocated, *aligned; int64_t offset, sizes[R], strides[R];}`.
"""

import ctypes
import math
import numbers

import numpy as np

from . import cache
from .interop import accepts_torch_cpu
from .mlir import format_scale, tensor_type

__all__ = ["delta_rule", "delta_rule_step"]

PREFILL_SYMBOL = "_mlir_ciface_gdn_delta_rule"
STEP_SYMBOL = "_mlir_ciface_gdn_delta_rule_step"

_ELEMENT_TYPES = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16"}
_F32 = np.dtype(np.float32)
_F32_MAX = float(np.finfo(np.float32).max)


# ----------------------------------------------------------------------------
# MLIR text
# ----------------------------------------------------------------------------

def module_source(heads, value_heads, key_dim, value_dim, element_type="f32",
                  beta_element_type=None, scale=1.0):
    """The MLIR module with @gdn_delta_rule and @gdn_delta_rule_step
    (both with llvm.emit_c_interface) for one configuration."""
    et = element_type
    bt = beta_element_type or "f32"
    h, hv, k, v = heads, value_heads, key_dim, value_dim
    attr = f"{{scale = {format_scale(scale)} : f32}}"

    state = tensor_type(["?", hv, k, v], "f32")
    pre_args = [("q", tensor_type(["?", "?", h, k], et)),
                ("k", tensor_type(["?", "?", h, k], et)),
                ("v", tensor_type(["?", "?", hv, v], et)),
                ("g", tensor_type(["?", "?", hv], "f32")),
                ("beta", tensor_type(["?", "?", hv], bt)),
                ("h0", state)]
    pre_results = [tensor_type(["?", "?", hv, v], et), state]
    step_args = [("q", tensor_type(["?", h, k], et)),
                 ("k", tensor_type(["?", h, k], et)),
                 ("v", tensor_type(["?", hv, v], et)),
                 ("g", tensor_type(["?", hv], "f32")),
                 ("beta", tensor_type(["?", hv], bt)),
                 ("s0", state)]
    step_results = [tensor_type(["?", hv, v], et), state]

    def func(name, args, results, op_line):
        signature = ", ".join(f"%{n}: {t}" for n, t in args)
        arg_types = ", ".join(t for _, t in args)
        result_types = ", ".join(results)
        return [
            f"  func.func @{name}({signature}) -> ({result_types}) "
            f"attributes {{llvm.emit_c_interface}} {{",
            f"    %o, %s = {op_line} {attr} : ({arg_types}) -> "
            f"({result_types})",
            f"    return %o, %s : {result_types}",
            "  }",
        ]

    lines = ["module {"]
    lines += func("gdn_delta_rule", pre_args, pre_results,
                  "gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)")
    lines += func("gdn_delta_rule_step", step_args, step_results,
                  "gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0")
    lines += ["}", ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------
# Memref descriptors
# ----------------------------------------------------------------------------

_DESCRIPTOR_TYPES = {}


def descriptor_type(rank):
    """The ctypes struct of a ranked memref descriptor of `rank`."""
    cls = _DESCRIPTOR_TYPES.get(rank)
    if cls is None:
        cls = type(f"MemRef{rank}D", (ctypes.Structure,), {
            "_fields_": [("allocated", ctypes.c_void_p),
                         ("aligned", ctypes.c_void_p),
                         ("offset", ctypes.c_int64),
                         ("sizes", ctypes.c_int64 * rank),
                         ("strides", ctypes.c_int64 * rank)]})
        _DESCRIPTOR_TYPES[rank] = cls
    return cls


def descriptor(array):
    """A descriptor of a C-contiguous array (offset 0, strides in elements,
    allocated = aligned = the data pointer). The caller keeps `array`
    alive while the descriptor is in use."""
    if not array.flags.c_contiguous:
        raise ValueError("memref descriptors need C-contiguous arrays")
    rank = array.ndim
    strides = [1] * rank
    for i in range(rank - 2, -1, -1):
        strides[i] = strides[i + 1] * array.shape[i + 1]
    d = descriptor_type(rank)()
    pointer = array.ctypes.data
    d.allocated = pointer
    d.aligned = pointer
    d.offset = 0
    for i in range(rank):
        d.sizes[i] = array.shape[i]
        d.strides[i] = strides[i]
    return d


# ----------------------------------------------------------------------------
# Compiling and loading
# ----------------------------------------------------------------------------

def _compile_options(chunk_size, compile_options=None):
    return (["--target=cpu", "--emit=shared", f"--chunk-size={chunk_size}"]
            + cache.compile_flags(compile_options))


def _prepare(library):
    for name in (PREFILL_SYMBOL, STEP_SYMBOL):
        function = getattr(library, name)
        function.restype = None
        function.argtypes = [ctypes.c_void_p] * 8


def _library(heads, value_heads, key_dim, value_dim, element_type,
             beta_element_type, chunk_size, scale, compile_options=None):
    """The loaded library of one configuration, compiling it if needed."""
    options = _compile_options(chunk_size, compile_options)
    key = ("delta_rule", heads, value_heads, key_dim, value_dim,
           element_type, beta_element_type, format_scale(scale))
    return cache.load(
        key, lambda: module_source(heads, value_heads, key_dim, value_dim,
                                   element_type, beta_element_type, scale),
        options, _prepare)


# ----------------------------------------------------------------------------
# Validation
# ----------------------------------------------------------------------------

def _check_array(name, x, ndim, dims_doc):
    """`x` as the compiled code reads it: a C-contiguous, aligned ndarray of
    rank `ndim` (a strided or unaligned one is copied, as numpy functions
    do). TypeError for what is not an ndarray, ValueError for the rank."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray or a torch CPU "
                        f"tensor, got "
                        f"{type(x).__name__}")
    if x.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-d array {dims_doc}, got "
                         f"{x.ndim}-d shape {tuple(x.shape)}")
    if not (x.flags.c_contiguous and x.flags.aligned):
        x = np.ascontiguousarray(x)
        if not x.flags.aligned:     # ascontiguousarray keeps a view aligned
            x = x.copy()
    return x


def _check_shape(name, x, expected, what):
    if tuple(x.shape) != tuple(expected):
        raise ValueError(f"{name} must have shape {tuple(expected)} {what}, "
                         f"got {tuple(x.shape)}")


def _check_dtypes(q, k, v, g, beta, state, state_name):
    et = _ELEMENT_TYPES.get(v.dtype)
    if et is None:
        raise TypeError(f"v must be float32 or float16, got {v.dtype}")
    for name, x in (("q", q), ("k", k)):
        if x.dtype != v.dtype:
            raise TypeError(f"{name} must have the dtype of v ({v.dtype}), "
                            f"got {x.dtype}")
    if g.dtype != _F32:
        raise TypeError(f"g must be float32, got {g.dtype}")
    if beta.dtype == _F32:
        bt = "f32"
    elif beta.dtype == v.dtype:
        bt = et
    else:
        raise TypeError(f"beta must be float32 or the dtype of v "
                        f"({v.dtype}), got {beta.dtype}")
    if state is not None and state.dtype != _F32:
        raise TypeError(f"{state_name} must be float32, got {state.dtype}")
    return et, bt


def _check_dims(heads, value_heads, key_dim, value_dim):
    for name, size in (("H", heads), ("Hv", value_heads), ("K", key_dim),
                       ("V", value_dim)):
        if size == 0:
            raise ValueError(f"{name} must be positive, got 0")
    if value_heads % heads != 0:
        raise ValueError(f"value heads Hv = {value_heads} (v.shape[-2]) must "
                         f"be a multiple of query/key heads H = {heads} "
                         f"(q.shape[-2])")


def _check_scale(scale):
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"scale must be a real number, got {scale!r}")
    value = float(scale)
    if not math.isfinite(value) or abs(value) > _F32_MAX:
        raise ValueError(f"scale must be a finite float32 value, got {scale!r}")
    return value


# The compiler's bound (gdn-chunk-delta-rule): larger chunks only grow the
# generated code.
MAX_CHUNK_SIZE = 1024


def _check_chunk_size(chunk_size):
    if isinstance(chunk_size, bool) or not isinstance(chunk_size,
                                                      numbers.Integral):
        raise TypeError(f"chunk_size must be an int, got {chunk_size!r}")
    if not 0 < chunk_size <= MAX_CHUNK_SIZE:
        raise ValueError(f"chunk_size must be a positive int of at most "
                         f"{MAX_CHUNK_SIZE}, got {chunk_size!r}")
    return int(chunk_size)


# ----------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------

def _check_finite(name, x, axes):
    """FloatingPointError naming the first element of x that is NaN or Inf,
    by the names of its axes."""
    bad = ~np.isfinite(x)
    if bad.any():
        index, where = _first(bad, axes)
        value = x[index]
        raise FloatingPointError(f"numerics: {value} in {name} at {where}")


def _first(bad, axes):
    index = np.unravel_index(int(np.argmax(bad)), bad.shape)
    return index, ", ".join(f"{axis} {i}" for axis, i in zip(axes, index))


def _check_preconditions(k, g, beta, axes):
    """ValueError naming the first element outside the op's documented
    value ranges (g <= 0, beta in [0, 1], keys of unit length to 1e-2, all
    finite), where the compiled kernels may give NaN although the float64
    recurrence stays finite."""
    norms = np.sqrt(np.sum(np.square(k, dtype=np.float64), axis=-1))
    for name, bad, at_axes, values, rule in (
            ("g", ~(g <= 0), axes, g, "must be <= 0 (a log-decay)"),
            ("beta", ~((beta >= 0) & (beta <= 1)), axes, beta,
             "must be in [0, 1]"),
            ("k", ~(np.abs(norms - 1) <= 1e-2), axes, norms,
             "must have unit length (L2 norm over K)")):
        if bad.any():
            index, where = _first(bad, at_axes)
            raise ValueError(f"precondition: {name} at {where} is "
                             f"{float(values[index]):.6g}; {name} {rule}")


@accepts_torch_cpu("q", "k", "v", "g", "beta", "initial_state", "cu_seqlens",
                   "state_indices", "write_indices", "a_log", "dt_bias")
def delta_rule(q, k, v, g, beta, initial_state=None, scale=1.0,
               chunk_size=64, compile_options=None, check_numerics=False, *,
               cu_seqlens=None, state_indices=None, write_indices=None,
               a_log=None, dt_bias=None, checkpoint_every=None):
    """Gated delta rule over a sequence (prefill), compiled.

    q, k: [B, T, H, K]; v: [B, T, Hv, V] (float32, or float16 for all
    three); g: [B, T, Hv] float32; beta: [B, T, Hv] float32 or v's dtype;
    initial_state: [B, Hv, K, V] float32 or None (zeros). numpy arrays or
    torch CPU tensors (then the results are torch tensors: gdn.interop).
    Strided arrays are copied. TypeError for operands of the wrong type or dtype,
    ValueError for wrong shapes. Returns (o [B, T, Hv, V] of v's dtype, final_state
    [B, Hv, K, V] float32).

    compile_options: further options of gdn-compile's CPU pipeline by
    keyword, for example {"matmul_tile_n": 64, "num_threads": 1}
    (gdn.cache.pipeline_options() lists them with their defaults).
    check_numerics: first check the documented value ranges (ValueError
    naming the first element with g > 0, beta outside [0, 1] or a key not
    of unit length), then raise FloatingPointError naming the first NaN or
    Inf in o (batch, token, head, column) or the final state.

    Serving forms (keyword-only):

    - cu_seqlens: integers [N + 1], the offsets of N sequences packed into
      q, k, v, g and beta of shape [1, total, ...] (0 first, total last,
      never decreasing; a sequence may be empty). Each sequence runs from
      its own initial state: initial_state is [N, Hv, K, V] or None (zeros),
      and the final state returned is [N, Hv, K, V]. o keeps the packed
      layout.
    - state_indices: integers [N] (N = B, or the sequences of cu_seqlens):
      initial_state is then a pool [S, Hv, K, V] (float32, writeable,
      C-contiguous); sequence n starts from slot state_indices[n] and its
      final state is written into slot write_indices[n] (state_indices[n]
      when write_indices is None) of the pool itself, which is returned as
      the final state. Every read sees the pool as passed in; -1 reads a
      zero state and writes nothing. ValueError for an index outside
      [-1, S).
    - a_log, dt_bias: float32 [Hv] each (a Qwen-style layer's A_log and
      dt_bias): g and beta are then the raw projections a and b (float32 or
      v's dtype), and the op uses g = -exp(a_log) * softplus(a + dt_bias)
      and beta = sigmoid(b), computed in the compiled code.
    - checkpoint_every: N >= 1 (a multiple of chunk_size is the natural
      choice); a third result, the states after every N tokens of each
      sequence for prefix caching: [B, T // N, Hv, K, V], or with
      cu_seqlens [total // N, Hv, K, V] with the sequences' checkpoints one
      after another (sequence n's first at row sum of len_j // N over the
      sequences before it) and zeros after the last.
    """
    if any(x is not None for x in (cu_seqlens, state_indices, write_indices,
                                   a_log, dt_bias, checkpoint_every)):
        from .compiled_serving import serving_prefill
        return serving_prefill(
            q, k, v, g, beta, initial_state, scale,
            _check_chunk_size(chunk_size), compile_options, check_numerics,
            cu_seqlens, state_indices, write_indices, a_log, dt_bias,
            checkpoint_every)
    q = _check_array("q", q, 4, "[B, T, H, K]")
    k = _check_array("k", k, 4, "[B, T, H, K]")
    v = _check_array("v", v, 4, "[B, T, Hv, V]")
    g = _check_array("g", g, 3, "[B, T, Hv]")
    beta = _check_array("beta", beta, 3, "[B, T, Hv]")
    if initial_state is not None:
        initial_state = _check_array("initial_state", initial_state, 4,
                                     "[B, Hv, K, V]")
    batch, tokens, heads, key_dim = q.shape
    _check_shape("k", k, q.shape, "like q")
    if tuple(v.shape[:2]) != (batch, tokens):
        raise ValueError(f"v must have shape ({batch}, {tokens}, Hv, V) "
                         f"(B, T from q), got {tuple(v.shape)}")
    value_heads, value_dim = v.shape[2], v.shape[3]
    _check_shape("g", g, (batch, tokens, value_heads),
                 "(B, T from q, Hv from v)")
    _check_shape("beta", beta, (batch, tokens, value_heads),
                 "(B, T from q, Hv from v)")
    state_shape = (batch, value_heads, key_dim, value_dim)
    if initial_state is not None:
        _check_shape("initial_state", initial_state, state_shape,
                     "(B, K from q, Hv, V from v)")
    _check_dims(heads, value_heads, key_dim, value_dim)
    et, bt = _check_dtypes(q, k, v, g, beta, initial_state, "initial_state")
    scale = _check_scale(scale)
    chunk_size = _check_chunk_size(chunk_size)

    if check_numerics:
        _check_preconditions(k, g, beta, ("batch", "token", "head"))
    o = np.empty(v.shape, dtype=v.dtype)
    if initial_state is None:
        initial_state = np.zeros(state_shape, dtype=np.float32)
    if batch == 0 or tokens == 0:       # nothing to run
        return o, np.array(initial_state, dtype=np.float32, copy=True)
    library = _library(heads, value_heads, key_dim, value_dim, et, bt,
                       chunk_size, scale, compile_options)
    final_state = np.empty(state_shape, dtype=np.float32)
    arrays = (q, k, v, g, beta, initial_state, o, final_state)
    descriptors = [descriptor(a) for a in arrays]
    getattr(library, PREFILL_SYMBOL)(
        *[ctypes.addressof(d) for d in descriptors])
    del arrays, descriptors
    if check_numerics:
        _check_finite("o", o, ("batch", "token", "head", "column"))
        _check_finite("the final state", final_state,
                      ("batch", "head", "row", "column"))
    return o, final_state


@accepts_torch_cpu("q", "k", "v", "g", "beta", "state", "state_indices",
                   "write_indices", "a_log", "dt_bias")
def delta_rule_step(q, k, v, g, beta, state, scale=1.0, inplace=False,
                    compile_options=None, check_numerics=False, *,
                    state_indices=None, write_indices=None, a_log=None,
                    dt_bias=None):
    """One decode token of the gated delta rule, compiled.

    q, k: [B, H, K]; v: [B, Hv, V] (float32, or float16 for all three);
    g: [B, Hv] float32; beta: [B, Hv] float32 or v's dtype; state:
    [B, Hv, K, V] float32; numpy arrays or torch CPU tensors (gdn.interop).
    Strided arrays are copied; with inplace=True the
    state must be C-contiguous and writeable. TypeError for operands of the
    wrong type or dtype, ValueError for wrong shapes. Returns (o [B, Hv, V]
    of v's dtype, new_state [B, Hv, K, V] float32). With inplace=False
    `state` is not modified; with inplace=True the new state is written into
    `state` itself, which is returned: the decode loop then moves the state
    through memory once per token and allocates nothing. compile_options
    and check_numerics: as for delta_rule.

    state_indices (keyword-only): integers [B]; state is then a pool
    [S, Hv, K, V] (float32, writeable, C-contiguous): entry b reads slot
    state_indices[b] and writes its new state into slot write_indices[b]
    (state_indices[b] when write_indices is None) of the pool itself, which
    is returned as the new state (inplace does not apply). Every read sees
    the pool as passed in; -1 reads a zero state and writes nothing.
    a_log, dt_bias (keyword-only): raw gates, as for delta_rule.
    """
    if any(x is not None for x in (state_indices, write_indices, a_log,
                                   dt_bias)):
        if write_indices is not None and state_indices is None:
            raise TypeError("write_indices needs state_indices (the slots "
                            "the entries read)")
        from .compiled_serving import serving_step
        return serving_step(q, k, v, g, beta, state, scale, compile_options,
                            check_numerics, state_indices, write_indices,
                            a_log, dt_bias)
    q = _check_array("q", q, 3, "[B, H, K]")
    k = _check_array("k", k, 3, "[B, H, K]")
    v = _check_array("v", v, 3, "[B, Hv, V]")
    g = _check_array("g", g, 2, "[B, Hv]")
    beta = _check_array("beta", beta, 2, "[B, Hv]")
    if state is None:
        raise TypeError("state must be a [B, Hv, K, V] float32 array, "
                        "got None")
    if inplace and isinstance(state, np.ndarray):
        # The new state goes into the caller's array itself: a copy would
        # not be updated, and a read-only one (an immutable bytes object
        # under np.frombuffer, a read-only view) is not the caller's to
        # write.
        if not state.flags.writeable:
            raise ValueError("inplace=True writes the new state into state, "
                             "which is read-only (state.flags.writeable is "
                             "False); pass a writeable array or "
                             "inplace=False")
        if not (state.flags.c_contiguous and state.flags.aligned):
            raise ValueError("inplace=True writes the new state into state, "
                             "which must then be C-contiguous and aligned "
                             f"(got strides {state.strides}); pass "
                             "np.ascontiguousarray(state) or inplace=False")
    state = _check_array("state", state, 4, "[B, Hv, K, V]")
    batch, heads, key_dim = q.shape
    _check_shape("k", k, q.shape, "like q")
    if v.shape[0] != batch:
        raise ValueError(f"v must have shape ({batch}, Hv, V) (B from q), "
                         f"got {tuple(v.shape)}")
    value_heads, value_dim = v.shape[1], v.shape[2]
    _check_shape("g", g, (batch, value_heads), "(B from q, Hv from v)")
    _check_shape("beta", beta, (batch, value_heads), "(B from q, Hv from v)")
    state_shape = (batch, value_heads, key_dim, value_dim)
    _check_shape("state", state, state_shape, "(B, K from q, Hv, V from v)")
    _check_dims(heads, value_heads, key_dim, value_dim)
    et, bt = _check_dtypes(q, k, v, g, beta, state, "state")
    scale = _check_scale(scale)

    if check_numerics:
        _check_preconditions(k, g, beta, ("batch", "head"))
    o = np.empty(v.shape, dtype=v.dtype)
    if batch == 0:                      # nothing to run
        return o, np.array(state, dtype=np.float32, copy=True)
    library = _library(heads, value_heads, key_dim, value_dim, et, bt, 64,
                       scale, compile_options)
    # The compiled step reads each state element before it writes the same
    # element (gdn-parallelize-delta-rule-step), so aliasing is safe.
    new_state = state if inplace else np.empty(state_shape, dtype=np.float32)
    arrays = (q, k, v, g, beta, state, o, new_state)
    descriptors = [descriptor(a) for a in arrays]
    getattr(library, STEP_SYMBOL)(*[ctypes.addressof(d) for d in descriptors])
    del arrays, descriptors
    if check_numerics:
        _check_finite("o", o, ("batch", "head", "column"))
        _check_finite("the new state", new_state,
                      ("batch", "head", "row", "column"))
    return o, new_state
