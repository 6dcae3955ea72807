"""Compiled gated delta rule for numpy arrays.

`delta_rule` (prefill) and `delta_rule_step` (one decode token) emit a small
MLIR module with `gdn.delta_rule` / `gdn.delta_rule_step`, compile it with the
`gdn-compile` driver into a shared library on first use for each
configuration, cache the library on disk and call it through ctypes.

Compiler: $GDN_COMPILE if set, else $GDN_BUILD_DIR/bin/gdn-compile if
GDN_BUILD_DIR is set, else <repo>/build/bin/gdn-compile.
Cache: $GDN_CACHE_DIR if set, else ~/.cache/gdn.

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
import hashlib
import math
import numbers
import os
import shutil
import subprocess
import tempfile
import threading

import numpy as np

__all__ = ["delta_rule", "delta_rule_step"]

PREFILL_SYMBOL = "_mlir_ciface_gdn_delta_rule"
STEP_SYMBOL = "_mlir_ciface_gdn_delta_rule_step"

_ELEMENT_TYPES = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16"}
_F32 = np.dtype(np.float32)
_F32_MAX = float(np.finfo(np.float32).max)

_REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Loaded libraries: (compiler identity, cache dir, configuration) -> CDLL.
_LIBRARIES = {}
_LOCK = threading.Lock()


# ----------------------------------------------------------------------------
# MLIR text
# ----------------------------------------------------------------------------

def format_scale(scale):
    """The scale as an MLIR float literal: repr(float(scale)), with a
    decimal point added to exponent forms ('1e-05' -> '1.0e-05'), which the
    MLIR lexer does not take as floats otherwise."""
    text = repr(float(scale))
    if "." not in text and ("e" in text or "E" in text):
        mantissa, exponent = text.lower().split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def _tensor(dims, element_type):
    return "tensor<" + "x".join([str(d) for d in dims] + [element_type]) + ">"


def module_source(heads, value_heads, key_dim, value_dim, element_type="f32",
                  beta_element_type=None, scale=1.0):
    """The MLIR module with @gdn_delta_rule and @gdn_delta_rule_step
    (both with llvm.emit_c_interface) for one configuration."""
    et = element_type
    bt = beta_element_type or "f32"
    h, hv, k, v = heads, value_heads, key_dim, value_dim
    attr = f"{{scale = {format_scale(scale)} : f32}}"

    state = _tensor(["?", hv, k, v], "f32")
    pre_args = [("q", _tensor(["?", "?", h, k], et)),
                ("k", _tensor(["?", "?", h, k], et)),
                ("v", _tensor(["?", "?", hv, v], et)),
                ("g", _tensor(["?", "?", hv], "f32")),
                ("beta", _tensor(["?", "?", hv], bt)),
                ("h0", state)]
    pre_results = [_tensor(["?", "?", hv, v], et), state]
    step_args = [("q", _tensor(["?", h, k], et)),
                 ("k", _tensor(["?", h, k], et)),
                 ("v", _tensor(["?", hv, v], et)),
                 ("g", _tensor(["?", hv], "f32")),
                 ("beta", _tensor(["?", hv], bt)),
                 ("s0", state)]
    step_results = [_tensor(["?", hv, v], et), state]

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
# Compiler, cache and loading
# ----------------------------------------------------------------------------

def find_compiler():
    """Path of gdn-compile; RuntimeError naming the path tried if absent."""
    if os.environ.get("GDN_COMPILE"):
        candidate = os.environ["GDN_COMPILE"]
        source = "$GDN_COMPILE"
        if os.sep not in candidate:
            candidate = shutil.which(candidate) or candidate
    elif os.environ.get("GDN_BUILD_DIR"):
        candidate = os.path.join(os.environ["GDN_BUILD_DIR"], "bin",
                                 "gdn-compile")
        source = "$GDN_BUILD_DIR/bin/gdn-compile"
    else:
        candidate = os.path.join(_REPO, "build", "bin", "gdn-compile")
        source = "<repo>/build/bin/gdn-compile"
    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return os.path.abspath(candidate)
    raise RuntimeError(
        f"gdn-compile not found: tried {candidate} ({source}). Build it with "
        f"scripts/setup.sh (it configures and builds into {_REPO}/build), or "
        f"point GDN_COMPILE at the driver or GDN_BUILD_DIR at a build "
        f"directory.")


def cache_dir():
    path = os.environ.get("GDN_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "gdn")
    os.makedirs(path, exist_ok=True)
    return path


def _compile_options(chunk_size):
    return ["--target=cpu", "--emit=shared", f"--chunk-size={chunk_size}"]


def library_path(source, compiler, chunk_size, directory):
    """Cache file of a module: named by the sha256 of the source, the
    compile options and the compiler's path, mtime and size."""
    return options_library_path(source, compiler,
                                _compile_options(chunk_size), directory)


def options_library_path(source, compiler, options, directory):
    """library_path for an explicit list of gdn-compile options."""
    st = os.stat(compiler)
    digest = hashlib.sha256()
    for part in (source, "\0".join(options), compiler,
                 str(st.st_mtime_ns), str(st.st_size)):
        digest.update(part.encode())
        digest.update(b"\0\0")
    return os.path.join(directory, f"gdn-{digest.hexdigest()}.so")


def _compile(compiler, source, chunk_size, out_path):
    compile_with_options(compiler, source, _compile_options(chunk_size),
                         out_path)


def compile_with_options(compiler, source, options, out_path):
    """Compiles `source` with gdn-compile and `options` into `out_path`
    (atomically; the source is kept next to it as .mlir); RuntimeError with
    the command and the compiler's stderr on failure."""
    directory = os.path.dirname(out_path)
    stem = os.path.basename(out_path)[:-3]
    fd, src_path = tempfile.mkstemp(prefix=stem + ".", suffix=".mlir",
                                    dir=directory)
    tmp_out = src_path[:-len(".mlir")] + ".so.tmp"
    try:
        with os.fdopen(fd, "w") as f:
            f.write(source)
        command = [compiler, src_path] + list(options) + ["-o", tmp_out]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0 or not os.path.isfile(tmp_out):
            raise RuntimeError(
                f"gdn-compile failed (exit status {result.returncode}):\n"
                f"  command: {' '.join(command)}\n"
                f"stderr:\n{result.stderr}"
                + (f"stdout:\n{result.stdout}" if result.stdout else ""))
        os.replace(tmp_out, out_path)
        # Keep the source next to the library for inspection.
        os.replace(src_path, out_path[:-3] + ".mlir")
    finally:
        for leftover in (src_path, tmp_out):
            if os.path.exists(leftover):
                os.unlink(leftover)


def _library(heads, value_heads, key_dim, value_dim, element_type,
             beta_element_type, chunk_size, scale):
    """The loaded library of one configuration, compiling it if needed."""
    compiler = find_compiler()
    st = os.stat(compiler)
    directory = cache_dir()
    scale_text = format_scale(scale)
    key = (compiler, st.st_mtime_ns, st.st_size, directory, heads,
           value_heads, key_dim, value_dim, element_type, beta_element_type,
           chunk_size, scale_text)
    with _LOCK:
        library = _LIBRARIES.get(key)
        if library is not None:
            return library
        source = module_source(heads, value_heads, key_dim, value_dim,
                               element_type, beta_element_type, scale)
        path = library_path(source, compiler, chunk_size, directory)
        if not os.path.isfile(path):
            _compile(compiler, source, chunk_size, path)
        try:
            library = ctypes.CDLL(path)
            functions = (getattr(library, PREFILL_SYMBOL),
                         getattr(library, STEP_SYMBOL))
        except (OSError, AttributeError) as e:
            raise RuntimeError(
                f"cannot load {path} (compiled by {compiler}): {e}") from e
        for function in functions:
            function.restype = None
            function.argtypes = [ctypes.c_void_p] * 8
        _LIBRARIES[key] = library
        return library


# ----------------------------------------------------------------------------
# Validation
# ----------------------------------------------------------------------------

def _check_array(name, x, ndim, dims_doc):
    """`x` as the compiled code reads it: a C-contiguous, aligned ndarray of
    rank `ndim` (a strided or unaligned one is copied, as numpy functions
    do). TypeError for what is not an ndarray, ValueError for the rank."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got "
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

def delta_rule(q, k, v, g, beta, initial_state=None, scale=1.0,
               chunk_size=64):
    """Gated delta rule over a sequence (prefill), compiled.

    q, k: [B, T, H, K]; v: [B, T, Hv, V] (float32, or float16 for all
    three); g: [B, T, Hv] float32; beta: [B, T, Hv] float32 or v's dtype;
    initial_state: [B, Hv, K, V] float32 or None (zeros). Strided arrays
    are copied. TypeError for operands of the wrong type or dtype,
    ValueError for wrong shapes. Returns (o [B, T, Hv, V] of v's dtype, final_state
    [B, Hv, K, V] float32).
    """
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

    o = np.empty(v.shape, dtype=v.dtype)
    if initial_state is None:
        initial_state = np.zeros(state_shape, dtype=np.float32)
    if batch == 0 or tokens == 0:       # nothing to run
        return o, np.array(initial_state, dtype=np.float32, copy=True)
    library = _library(heads, value_heads, key_dim, value_dim, et, bt,
                       chunk_size, scale)
    final_state = np.empty(state_shape, dtype=np.float32)
    arrays = (q, k, v, g, beta, initial_state, o, final_state)
    descriptors = [descriptor(a) for a in arrays]
    getattr(library, PREFILL_SYMBOL)(
        *[ctypes.addressof(d) for d in descriptors])
    del arrays, descriptors
    return o, final_state


def delta_rule_step(q, k, v, g, beta, state, scale=1.0, inplace=False):
    """One decode token of the gated delta rule, compiled.

    q, k: [B, H, K]; v: [B, Hv, V] (float32, or float16 for all three);
    g: [B, Hv] float32; beta: [B, Hv] float32 or v's dtype; state:
    [B, Hv, K, V] float32. Strided arrays are copied; with inplace=True the
    state must be C-contiguous and writeable. TypeError for operands of the
    wrong type or dtype, ValueError for wrong shapes. Returns (o [B, Hv, V]
    of v's dtype, new_state [B, Hv, K, V] float32). With inplace=False
    `state` is not modified; with inplace=True the new state is written into
    `state` itself, which is returned: the decode loop then moves the state
    through memory once per token and allocates nothing.
    """
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

    o = np.empty(v.shape, dtype=v.dtype)
    if batch == 0:                      # nothing to run
        return o, np.array(state, dtype=np.float32, copy=True)
    library = _library(heads, value_heads, key_dim, value_dim, et, bt, 64,
                       scale)
    # The compiled step reads each state element before it writes the same
    # element (gdn-parallelize-delta-rule-step), so aliasing is safe.
    new_state = state if inplace else np.empty(state_shape, dtype=np.float32)
    arrays = (q, k, v, g, beta, state, o, new_state)
    descriptors = [descriptor(a) for a in arrays]
    getattr(library, STEP_SYMBOL)(*[ctypes.addressof(d) for d in descriptors])
    del arrays, descriptors
    return o, new_state
