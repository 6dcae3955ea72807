"""Packed sequences and pools of states for the compiled delta rule.

gdn.delta_rule with `cu_seqlens`, `state_indices` or raw gates (`a_log`,
`dt_bias`), and gdn.delta_rule_step with `state_indices` or raw gates, call
the functions of this module:
each form is one small MLIR module (`gdn.delta_rule ... cu_seqlens(..)
state_indices(..) write_indices(..)`), compiled and cached like the dense
ops (gdn.cache). The pool argument carries `gdn.in_place`, so the compiled
function writes the final states into the caller's pool and takes no
out-parameter for it (docs/c-abi.md):

    packed:       f(q, k, v, g, beta, h0 [N], cu_seqlens, o, final [N])
    pool:         f(q, k, v, g, beta, pool, read, write, o)
    packed pool:  f(q, k, v, g, beta, pool, cu_seqlens, read, write, o)
    step, pool:   f(q, k, v, g, beta, pool, read, write, o)

with raw gates (A_log, dt_bias: g and beta are then the raw a and b),
A_log and dt_bias come after the other operands.
"""

import ctypes
import numbers

import numpy as np

from . import cache
from .compiled import (_check_array, _check_dims, _check_dtypes,
                       _check_finite, _check_preconditions, _check_scale,
                       _compile_options, descriptor)
from .interop import accepts_torch_cpu
from .mlir import format_scale, tensor_type

__all__ = ["delta_rule_verify", "serving_prefill", "serving_step"]

_SYMBOL = "_mlir_ciface_gdn_serving"
_INT32 = np.dtype(np.int32)
# gdn.delta_rule_verify's bound on the draft tokens.
MAX_DRAFT_TOKENS = 16


class Form(tuple):
    """Which serving operands a call has: (step, packed, pooled, gated,
    verify)."""

    def __new__(cls, step=False, packed=False, pooled=False, gated=False,
                verify=False, checkpoint_every=0):
        return super().__new__(cls, (step, packed, pooled, gated, verify,
                                     checkpoint_every))

    step = property(lambda self: self[0])
    packed = property(lambda self: self[1])
    pooled = property(lambda self: self[2])
    gated = property(lambda self: self[3])
    verify = property(lambda self: self[4])
    checkpoint_every = property(lambda self: self[5])

    def indices(self):
        """Slot operands: read and write; a verify reads its pool only."""
        return (1 if self.verify else 2) if self.pooled else 0

    def arguments(self):
        """Operands of the C function before its out-parameters."""
        return 6 + self.packed + self.indices() + 2 * self.gated

    def outputs(self):
        """o, the states unless they went into the pool, the checkpoints."""
        states = 0 if self.pooled and not self.verify else 1
        return 1 + states + (1 if self.checkpoint_every else 0)


def module_source(form, heads, value_heads, key_dim, value_dim, element_type,
                  gate_element_type, beta_element_type, scale):
    """The MLIR module with @gdn_serving for one form and configuration."""
    et, gt, bt = element_type, gate_element_type, beta_element_type
    h, hv, k, v = heads, value_heads, key_dim, value_dim
    tokens = ["?"] if form.step else [1 if form.packed else "?", "?"]
    state_type = tensor_type(["?", hv, k, v], "f32")
    args = [("q", tensor_type(tokens + [h, k], et)),
            ("k", tensor_type(tokens + [h, k], et)),
            ("v", tensor_type(tokens + [hv, v], et)),
            ("g", tensor_type(tokens + [hv], gt)),
            ("beta", tensor_type(tokens + [hv], bt))]
    states = state_type
    indices = tensor_type(["?"], "i32")
    args.append(("h0", states))
    if form.packed:
        args.append(("cu", indices))
    if form.pooled:
        args += [("read", indices), ("write", indices)][:form.indices()]
    if form.gated:
        heads_vector = tensor_type([hv], "f32")
        args += [("a_log", heads_vector), ("dt_bias", heads_vector)]
    results = [tensor_type(tokens + [hv, v], et), states]
    if form.verify:
        results[1] = tensor_type(["?", "?", hv, k, v], "f32")
    attributes = f"scale = {format_scale(scale)} : f32"
    if form.checkpoint_every:
        rows = ["?"] if form.packed else ["?", "?"]
        results.append(tensor_type(rows + [hv, k, v], "f32"))
        attributes += f", checkpoint_every = {form.checkpoint_every} : i64"

    operands = ", ".join(f"%{n}" for n, _ in args[:5])
    if form.verify:
        op = f"gdn.delta_rule_verify {operands}, %h0"
    elif form.step:
        op = f"gdn.delta_rule_step {operands}, %h0"
    else:
        op = f"gdn.delta_rule {operands} initial_state(%h0)"
        if form.packed:
            op += " cu_seqlens(%cu)"
    if form.pooled:
        op += " state_indices(%read)"
        if not form.verify:
            op += " write_indices(%write)"
    if form.gated:
        op += " gates(%a_log, %dt_bias)"

    def signature(name, type_):
        in_place = form.pooled and not form.verify and name == "h0"
        marker = " {gdn.in_place}" if in_place else ""
        return f"%{name}: {type_}{marker}"
    arg_types = ", ".join(t for _, t in args)
    result_types = ", ".join(results)
    values = "%o, %s, %c" if form.checkpoint_every else "%o, %s"
    return "\n".join([
        "module {",
        f"  func.func @gdn_serving({', '.join(signature(*a) for a in args)})"
        f" -> ({result_types}) attributes {{llvm.emit_c_interface}} {{",
        f"    {values} = {op} {{{attributes}}} : "
        f"({arg_types}) -> ({result_types})",
        f"    return {values} : {result_types}",
        "  }",
        "}",
        ""])


def _library(form, dims, types, chunk_size, scale, compile_options):
    options = _compile_options(chunk_size, compile_options)
    key = ("delta_rule_serving",) + tuple(form) + tuple(dims) + tuple(
        types) + (format_scale(scale),)

    def prepare(library):
        function = getattr(library, _SYMBOL)
        function.restype = None
        function.argtypes = [ctypes.c_void_p] * (form.arguments()
                                                 + form.outputs())
    return cache.load(
        key, lambda: module_source(form, *dims, *types, scale), options,
        prepare)


def _call(library, arrays):
    descriptors = [descriptor(a) for a in arrays]
    getattr(library, _SYMBOL)(*[ctypes.addressof(d) for d in descriptors])


def _check_gates(a_log, dt_bias, value_heads):
    """A_log and dt_bias: float32 [Hv] each, both or neither."""
    if (a_log is None) != (dt_bias is None):
        raise TypeError("raw gates need both a_log and dt_bias")
    if a_log is None:
        return ()
    out = []
    for name, x in (("a_log", a_log), ("dt_bias", dt_bias)):
        x = _check_array(name, x, 1, "[Hv]")
        if x.shape[0] != value_heads:
            raise ValueError(f"{name} must have shape ({value_heads},) (Hv "
                             f"from v), got {tuple(x.shape)}")
        if x.dtype != np.float32:
            raise TypeError(f"{name} must be float32, got {x.dtype}")
        out.append(x)
    return tuple(out)


def _types(q, k, v, g, beta, state, state_name, gated):
    """(element, gate, beta) MLIR types; with raw gates, g may have v's
    dtype like beta."""
    if gated and g.dtype == v.dtype and v.dtype != np.float32:
        et, bt = _check_dtypes(q, k, v, g.astype(np.float32), beta, state,
                               state_name)
        return et, et, bt
    et, bt = _check_dtypes(q, k, v, g, beta, state, state_name)
    return et, "f32", bt


# ----------------------------------------------------------------------------
# Validation of the serving operands
# ----------------------------------------------------------------------------

def _int_vector(name, x, length=None, what=""):
    """x as a C-contiguous int32 vector; TypeError for a non-integer dtype,
    ValueError for the rank, the length or values beyond int32."""
    x = np.asarray(x)
    if x.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype "
                        f"{x.dtype}")
    if x.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array, got shape "
                         f"{tuple(x.shape)}")
    if length is not None and x.shape[0] != length:
        raise ValueError(f"{name} must have {length} entries {what}, got "
                         f"{x.shape[0]}")
    info = np.iinfo(np.int32)
    if x.size and (x.min() < info.min or x.max() > info.max):
        raise ValueError(f"{name} has entries beyond int32")
    return np.ascontiguousarray(x, dtype=np.int32)


def check_cu_seqlens(cu_seqlens, total):
    """cu_seqlens as int32: N + 1 >= 1 offsets, 0 first, total last, never
    decreasing. ValueError naming the first offset that breaks a rule."""
    cu = _int_vector("cu_seqlens", cu_seqlens)
    if cu.shape[0] == 0:
        raise ValueError("cu_seqlens must have N + 1 >= 1 offsets (0, then "
                         "the end of each sequence), got none")
    if cu[0] != 0:
        raise ValueError(f"cu_seqlens[0] must be 0, got {int(cu[0])}")
    if cu[-1] != total:
        raise ValueError(f"cu_seqlens[-1] must be the packed token count "
                         f"{total} (q.shape[1]), got {int(cu[-1])}")
    steps = np.diff(cu)
    if (steps < 0).any():
        n = int(np.argmax(steps < 0))
        raise ValueError(f"cu_seqlens must not decrease: cu_seqlens[{n + 1}]"
                         f" = {int(cu[n + 1])} < cu_seqlens[{n}] = "
                         f"{int(cu[n])}")
    return cu


def check_slots(name, indices, entries, slots):
    """Slot indices as int32: one per sequence, each -1 (no state) or in
    [0, slots)."""
    x = _int_vector(name, indices, entries, "(one per sequence)")
    bad = (x < -1) | (x >= slots)
    if bad.any():
        n = int(np.argmax(bad))
        raise ValueError(f"{name}[{n}] = {int(x[n])} is not a slot of the "
                         f"pool of {slots} states (or -1 for none)")
    return x


def check_pool(name, pool, state_dims):
    """The pool [S, Hv, K, V]: float32, writeable, C-contiguous and aligned,
    since the final states are written into it."""
    if not isinstance(pool, np.ndarray):
        raise TypeError(f"{name} is the pool of states with state_indices "
                        f"and must be a numpy.ndarray or a torch CPU tensor, "
                        f"got {type(pool).__name__}")
    if pool.ndim != 4 or tuple(pool.shape[1:]) != tuple(state_dims):
        raise ValueError(f"{name} is the pool of states with state_indices "
                         f"and must have shape (S,) + {tuple(state_dims)} "
                         f"(Hv, K, V), got {tuple(pool.shape)}")
    if pool.dtype != np.float32:
        raise TypeError(f"{name} must be float32, got {pool.dtype}")
    if not pool.flags.writeable:
        raise ValueError(f"{name} is the pool that the final states are "
                         f"written into, but it is read-only")
    if not (pool.flags.c_contiguous and pool.flags.aligned):
        raise ValueError(f"{name} is the pool that the final states are "
                         f"written into and must be C-contiguous and aligned "
                         f"(got strides {pool.strides})")
    return pool


# ----------------------------------------------------------------------------
# Calls
# ----------------------------------------------------------------------------

def _check_operands(q, k, v, g, beta, per_token):
    """q, k, v, g and beta as arrays, checked against each other: [B, T,
    ...] (per_token) or [B, ...] (a decode step). Returns them and (B, T,
    H, Hv, K, V), T None for a step."""
    lead, rank = ("B, T", 4) if per_token else ("B", 3)
    q = _check_array("q", q, rank, f"[{lead}, H, K]")
    k = _check_array("k", k, rank, f"[{lead}, H, K]")
    v = _check_array("v", v, rank, f"[{lead}, Hv, V]")
    g = _check_array("g", g, rank - 1, f"[{lead}, Hv]")
    beta = _check_array("beta", beta, rank - 1, f"[{lead}, Hv]")
    leading = tuple(q.shape[:rank - 2])
    heads, key_dim = q.shape[rank - 2:]
    if tuple(k.shape) != tuple(q.shape):
        raise ValueError(f"k must have shape {tuple(q.shape)} like q, got "
                         f"{tuple(k.shape)}")
    if tuple(v.shape[:rank - 2]) != leading:
        shown = ", ".join(map(str, leading))
        raise ValueError(f"v must have shape ({shown}, Hv, V) ({lead} from "
                         f"q), got {tuple(v.shape)}")
    value_heads, value_dim = v.shape[rank - 2:]
    for name, x in (("g", g), ("beta", beta)):
        if tuple(x.shape) != leading + (value_heads,):
            raise ValueError(f"{name} must have shape "
                             f"{leading + (value_heads,)} ({lead} from q, "
                             f"Hv from v), got {tuple(x.shape)}")
    _check_dims(heads, value_heads, key_dim, value_dim)
    tokens = leading[1] if per_token else None
    return (q, k, v, g, beta), (leading[0], tokens, heads, value_heads,
                                key_dim, value_dim)


def serving_prefill(q, k, v, g, beta, initial_state, scale, chunk_size,
                    compile_options, check_numerics, cu_seqlens,
                    state_indices, write_indices, a_log, dt_bias,
                    checkpoint_every=None):
    """gdn.delta_rule with cu_seqlens, state_indices or raw gates (its
    docstring is the contract)."""
    (q, k, v, g, beta), dims = _check_operands(q, k, v, g, beta, True)
    batch, tokens, heads, value_heads, key_dim, value_dim = dims
    gates = _check_gates(a_log, dt_bias, value_heads)
    state_dims = (value_heads, key_dim, value_dim)
    packed = cu_seqlens is not None
    if packed:
        if batch != 1:
            raise ValueError(f"with cu_seqlens the sequences are packed into "
                             f"one row: q must have shape (1, total, H, K), "
                             f"got {tuple(q.shape)}")
        cu = check_cu_seqlens(cu_seqlens, tokens)
        sequences = cu.shape[0] - 1
    else:
        sequences = batch
    pooled = state_indices is not None
    if pooled:
        if initial_state is None:
            raise TypeError("state_indices needs initial_state: the pool of "
                            "states [S, Hv, K, V] to read and update")
        pool = check_pool("initial_state", initial_state, state_dims)
        read = check_slots("state_indices", state_indices, sequences,
                           pool.shape[0])
        write = read if write_indices is None else check_slots(
            "write_indices", write_indices, sequences, pool.shape[0])
        types = _types(q, k, v, g, beta, pool, "initial_state", bool(gates))
    else:
        if write_indices is not None:
            raise TypeError("write_indices needs state_indices (the slots "
                            "the sequences read)")
        if initial_state is not None:
            initial_state = _check_array("initial_state", initial_state, 4,
                                         "[N, Hv, K, V]")
            if tuple(initial_state.shape) != (sequences,) + state_dims:
                raise ValueError(
                    f"initial_state must have shape "
                    f"{(sequences,) + state_dims} (one state per sequence), "
                    f"got {tuple(initial_state.shape)}")
        types = _types(q, k, v, g, beta, initial_state, "initial_state",
                       bool(gates))
    scale = _check_scale(scale)
    if check_numerics and not gates:
        _check_preconditions(k, g, beta, ("batch", "token", "head"))

    every = _check_checkpoint_every(checkpoint_every)
    form = Form(packed=packed, pooled=pooled, gated=bool(gates),
                checkpoint_every=every)
    library = _library(form, (heads, value_heads, key_dim, value_dim), types,
                       chunk_size, scale, compile_options)
    o = np.empty(v.shape, dtype=v.dtype)
    checkpoints = None
    if every:
        rows = (tokens // every,) if packed else (batch, tokens // every)
        checkpoints = np.empty(rows + state_dims, np.float32)
    operands = [q, k, v, g, beta]
    if pooled:
        final = pool
        operands.append(pool)
    else:
        if initial_state is None:
            initial_state = np.zeros((sequences,) + state_dims, np.float32)
        final = np.empty((sequences,) + state_dims, np.float32)
        operands.append(initial_state)
    if packed:
        operands.append(cu)
    if pooled:
        operands += [read, write]
    operands += list(gates) + [o] + ([] if pooled else [final])
    if every:
        operands.append(checkpoints)
    _call(library, operands)
    if check_numerics:
        _check_finite("o", o, ("batch", "token", "head", "column"))
        _check_finite("the final state", final,
                      ("sequence", "head", "row", "column"))
    if every:
        return o, final, checkpoints
    return o, final


def _check_checkpoint_every(every):
    if every is None:
        return 0
    if isinstance(every, bool) or not isinstance(every, numbers.Integral):
        raise TypeError(f"checkpoint_every must be an int, got {every!r}")
    if every < 1:
        raise ValueError(f"checkpoint_every must be at least 1, got {every}")
    return int(every)


def serving_step(q, k, v, g, beta, state, scale, compile_options,
                 check_numerics, state_indices, write_indices, a_log,
                 dt_bias):
    """gdn.delta_rule_step with state_indices or raw gates (its docstring is
    the contract)."""
    (q, k, v, g, beta), dims = _check_operands(q, k, v, g, beta, False)
    batch, _, heads, value_heads, key_dim, value_dim = dims
    gates = _check_gates(a_log, dt_bias, value_heads)
    state_dims = (value_heads, key_dim, value_dim)
    pooled = state_indices is not None
    if pooled:
        pool = check_pool("state", state, state_dims)
        read = check_slots("state_indices", state_indices, batch,
                           pool.shape[0])
        write = read if write_indices is None else check_slots(
            "write_indices", write_indices, batch, pool.shape[0])
    else:
        state = _check_array("state", state, 4, "[B, Hv, K, V]")
        if tuple(state.shape) != (batch,) + state_dims:
            raise ValueError(f"state must have shape {(batch,) + state_dims}"
                             f", got {tuple(state.shape)}")
    types = _types(q, k, v, g, beta, pool if pooled else state, "state",
                   bool(gates))
    scale = _check_scale(scale)
    if check_numerics and not gates:
        _check_preconditions(k, g, beta, ("batch", "head"))
    form = Form(step=True, pooled=pooled, gated=bool(gates))
    library = _library(form, (heads, value_heads, key_dim, value_dim), types,
                       64, scale, compile_options)
    o = np.empty(v.shape, dtype=v.dtype)
    if pooled:
        new_state = pool
        operands = [q, k, v, g, beta, pool, read, write]
    else:
        new_state = np.empty((batch,) + state_dims, np.float32)
        operands = [q, k, v, g, beta, state]
    _call(library, operands + list(gates) + [o]
          + ([] if pooled else [new_state]))
    if check_numerics:
        _check_finite("o", o, ("batch", "head", "column"))
        _check_finite("the new state", new_state,
                      ("slot" if pooled else "batch", "head", "row",
                       "column"))
    return o, new_state


@accepts_torch_cpu("q", "k", "v", "g", "beta", "state", "state_indices",
                   "a_log", "dt_bias")
def delta_rule_verify(q, k, v, g, beta, state, scale=1.0, *,
                      state_indices=None, a_log=None, dt_bias=None,
                      compile_options=None):
    """Speculative verification: T draft tokens (at most 16) from each
    entry's state, with the state after every token.

    q, k: [B, T, H, K]; v: [B, T, Hv, V]; g, beta: [B, T, Hv] (as for
    gdn.delta_rule, or raw a and b with a_log and dt_bias); state:
    [B, Hv, K, V] float32, or with state_indices ([B] integers, -1 for a
    zero state) a pool [S, Hv, K, V]. The state or pool is never written:
    an engine copies the state of the last accepted token (states[b, t])
    where it keeps it. Returns (o [B, T, Hv, V] of v's dtype, states
    [B, T, Hv, K, V] float32).
    """
    (q, k, v, g, beta), dims = _check_operands(q, k, v, g, beta, True)
    batch, tokens, heads, value_heads, key_dim, value_dim = dims
    if tokens > MAX_DRAFT_TOKENS:
        raise ValueError(f"delta_rule_verify takes at most "
                         f"{MAX_DRAFT_TOKENS} draft tokens, got T = "
                         f"{tokens}")
    gates = _check_gates(a_log, dt_bias, value_heads)
    state_dims = (value_heads, key_dim, value_dim)
    state = _check_array("state", state, 4, "[B, Hv, K, V] or a pool")
    pooled = state_indices is not None
    if pooled:
        if tuple(state.shape[1:]) != state_dims:
            raise ValueError(f"state is the pool with state_indices and must "
                             f"have shape (S,) + {state_dims}, got "
                             f"{tuple(state.shape)}")
        read = check_slots("state_indices", state_indices, batch,
                           state.shape[0])
    elif tuple(state.shape) != (batch,) + state_dims:
        raise ValueError(f"state must have shape {(batch,) + state_dims}, "
                         f"got {tuple(state.shape)}")
    types = _types(q, k, v, g, beta, state, "state", bool(gates))
    scale = _check_scale(scale)
    form = Form(pooled=pooled, gated=bool(gates), verify=True)
    library = _library(form, (heads, value_heads, key_dim, value_dim), types,
                       64, scale, compile_options)
    o = np.empty(v.shape, dtype=v.dtype)
    states = np.empty((batch, tokens) + state_dims, np.float32)
    if batch == 0 or tokens == 0:
        return o, states
    operands = [q, k, v, g, beta, state] + ([read] if pooled else [])
    _call(library, operands + list(gates) + [o, states])
    return o, states
