"""The Gated DeltaNet layer of the design document, on numpy arrays.

`GatedMultiHeadDeltaAttention` (the design document's reference PyTorch
module) as

- `init_gated_deltanet`: deterministic float32 weights following the
  module's initialisation (PyTorch's default Linear / Conv1d init,
  log_alpha = log(U(0, 16)), norm.weight = 1);
- `gated_deltanet_reference`: an independent float64 transcription of the
  module's forward (the recurrence through `gdn.reference.delta_rule`);
- `GatedDeltaNetLayer`: the layer compiled from `gdn.gated_deltanet` by
  gdn-compile (CPU shared library, cached like `gdn.compiled`), loaded with
  a state_dict of numpy arrays.

Weights are named and shaped as the module's state_dict (PyTorch layouts:
Linear weights [out, in], depthwise conv weights [d_out, 1, 4]); the
module's default qkv_bias=False, so W_query/W_key/W_value have no bias.
`STATE_DICT_NAMES` is the operand order of `gdn.gated_deltanet`: the order
in which the module's __init__ creates the parameters. (PyTorch's own
state_dict() lists the module's direct parameter log_alpha first, before the
submodules' parameters; loading is by name, so that makes no difference.)

The compiled library exports

    void _mlir_ciface_gdn_gated_deltanet(desc *x, desc *w0, ..., desc *w18,
                                         desc *y, desc *state);

with the memref descriptors of `gdn.compiled` (docs/c-abi.md).
"""

import ctypes
import math
import numbers
import os

import numpy as np

from . import compiled
from . import reference

__all__ = ["STATE_DICT_NAMES", "state_dict_shapes", "init_gated_deltanet",
           "gated_deltanet_reference", "module_source", "GatedDeltaNetLayer"]

STATE_DICT_NAMES = (
    "W_query.weight", "W_key.weight", "W_value.weight",
    "out_proj.weight", "out_proj.bias",
    "beta.weight", "beta.bias",
    "alpha.weight", "alpha.bias",
    "gate.weight", "gate.bias",
    "log_alpha",
    "conv_k.weight", "conv_k.bias",
    "conv_v.weight", "conv_v.bias",
    "conv_q.weight", "conv_q.bias",
    "norm.weight",
)

KERNEL_SIZE = 4
NORMALIZE_EPS = 1e-12          # F.normalize's default eps
SOFTPLUS_THRESHOLD = 20.0      # F.softplus's default threshold (beta = 1)
SYMBOL = "_mlir_ciface_gdn_gated_deltanet"
COMPILE_OPTIONS = ("--target=cpu", "--emit=shared")

_LIBRARIES = {}


def _check_sizes(d_model, d_out, num_heads):
    for name, value in (("d_model", d_model), ("d_out", d_out),
                        ("num_heads", num_heads)):
        if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
                or value <= 0):
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if d_out % num_heads != 0:
        raise ValueError(f"d_out = {d_out} must be a multiple of num_heads = "
                         f"{num_heads}")
    return int(d_model), int(d_out), int(num_heads)


def state_dict_shapes(d_model, d_out, num_heads):
    """name -> shape (tuple) of every state_dict entry, in
    STATE_DICT_NAMES order."""
    d_model, d_out, h = _check_sizes(d_model, d_out, num_heads)
    head_dim = d_out // h
    conv = (d_out, 1, KERNEL_SIZE)
    return {
        "W_query.weight": (d_out, d_model),
        "W_key.weight": (d_out, d_model),
        "W_value.weight": (d_out, d_model),
        "out_proj.weight": (d_out, d_out),
        "out_proj.bias": (d_out,),
        "beta.weight": (h, d_model),
        "beta.bias": (h,),
        "alpha.weight": (h, d_model),
        "alpha.bias": (h,),
        "gate.weight": (d_out, d_model),
        "gate.bias": (d_out,),
        "log_alpha": (h,),
        "conv_k.weight": conv,
        "conv_k.bias": (d_out,),
        "conv_v.weight": conv,
        "conv_v.bias": (d_out,),
        "conv_q.weight": conv,
        "conv_q.bias": (d_out,),
        "norm.weight": (head_dim,),
    }


def _fan_in(name, shapes):
    """PyTorch's fan_in of the layer owning `name` (weight and bias alike):
    in_features for Linear, in_channels / groups * kernel = 4 for the
    depthwise Conv1d."""
    layer = name.rsplit(".", 1)[0]
    if layer.startswith("conv_"):
        return KERNEL_SIZE
    return shapes[layer + ".weight"][1]


def init_gated_deltanet(seed, d_model, d_out, num_heads):
    """Deterministic float32 weights (dict name -> array, STATE_DICT_NAMES
    order) distributed as the reference module initialises them:

    - Linear weight and bias, Conv1d weight and bias: U(-b, b) with
      b = 1 / sqrt(fan_in) (PyTorch's kaiming_uniform(a=sqrt(5)) and bias
      init); fan_in = d_model (d_out for out_proj), 4 for the depthwise
      convs (so U(-1/2, 1/2));
    - log_alpha = log(U(0, 16)) (drawn in (0, 16] so that it stays finite);
    - norm.weight = 1.

    Draws come from numpy's default_rng(seed), in STATE_DICT_NAMES order;
    the values differ from torch's for the same seed, the distribution is
    the same.
    """
    shapes = state_dict_shapes(d_model, d_out, num_heads)
    rng = np.random.default_rng(seed)
    params = {}
    for name in STATE_DICT_NAMES:
        shape = shapes[name]
        if name == "log_alpha":
            value = np.log(16.0 * (1.0 - rng.random(shape)))
        elif name == "norm.weight":
            value = np.ones(shape)
        else:
            bound = 1.0 / math.sqrt(_fan_in(name, shapes))
            value = rng.uniform(-bound, bound, shape)
        params[name] = np.ascontiguousarray(value, dtype=np.float32)
    return params


# ----------------------------------------------------------------------------
# float64 references
# ----------------------------------------------------------------------------

def _sigmoid(z):
    """1 / (1 + exp(-z)) without overflow."""
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _silu(z):
    return z * _sigmoid(z)


def _softplus(z):
    """F.softplus(z) (beta = 1, threshold = 20): z itself above 20."""
    return np.where(z > SOFTPLUS_THRESHOLD, z,
                    np.log1p(np.exp(np.minimum(z, SOFTPLUS_THRESHOLD))))


def _rms_norm(z, weight, eps):
    """nn.RMSNorm over the last axis."""
    return z / np.sqrt(np.mean(z * z, axis=-1, keepdims=True) + eps) * weight


def _l2_normalize(z):
    """F.normalize(z, dim=-1): z / max(||z||_2, 1e-12)."""
    norm = np.sqrt(np.sum(z * z, axis=-1, keepdims=True))
    return z / np.maximum(norm, NORMALIZE_EPS)


def _float64_params(params, num_heads, d_model):
    missing = [n for n in STATE_DICT_NAMES if n not in params]
    if missing:
        raise ValueError(f"missing weights: {', '.join(missing)}")
    p = {n: np.asarray(params[n], dtype=np.float64) for n in STATE_DICT_NAMES}
    d_out = p["W_query.weight"].shape[0]
    shapes = state_dict_shapes(d_model, d_out, num_heads)
    for name in STATE_DICT_NAMES:
        if p[name].shape != shapes[name]:
            raise ValueError(f"{name} must have shape {shapes[name]}, got "
                             f"{p[name].shape}")
    return p, d_out


def gated_deltanet_reference(x, params, num_heads, eps=1e-6):
    """The reference module's forward in float64 from a zero state.

    x: [B, T, d_model]; params: name -> array (STATE_DICT_NAMES).
    Returns (y [B, T, d_out], final_state [B, H, head_dim, head_dim]), both
    float64.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"x must be [B, T, d_model], got shape {x.shape}")
    batch, tokens, d_model = x.shape
    p, d_out = _float64_params(params, num_heads, d_model)
    heads = num_heads
    head_dim = d_out // heads

    def linear(name, bias=True):
        y = x @ p[name + ".weight"].T
        return y + p[name + ".bias"] if bias else y

    def conv_silu(u, name):
        # Conv1d over [b, d_out, t + 3] after a left zero pad of 3 tokens:
        # out[t] = bias + sum_j w[:, j] * padded[t + j].
        w = p[name + ".weight"][:, 0, :]                      # [d_out, 4]
        pad = KERNEL_SIZE - 1
        padded = np.concatenate(
            [np.zeros((batch, pad, d_out)), u], axis=1)      # [B, T+3, d_out]
        out = np.broadcast_to(p[name + ".bias"], u.shape).copy()
        for j in range(KERNEL_SIZE):
            out += w[:, j] * padded[:, j:j + tokens]
        return _silu(out)

    k = conv_silu(linear("W_key", bias=False), "conv_k")
    q = conv_silu(linear("W_query", bias=False), "conv_q")
    v = conv_silu(linear("W_value", bias=False), "conv_v")
    k = _l2_normalize(k.reshape(batch, tokens, heads, head_dim))
    q = _l2_normalize(q.reshape(batch, tokens, heads, head_dim))
    v = _rms_norm(v.reshape(batch, tokens, heads, head_dim),
                  p["norm.weight"], eps)

    # log(alpha_final), computed directly: exp(-A * softplus) underflows.
    g = -np.exp(p["log_alpha"]) * _softplus(linear("alpha"))   # [B, T, H]
    beta = _sigmoid(linear("beta"))
    gate = linear("gate")

    o, state = reference.delta_rule(q, k, v, g, beta, scale=1.0)
    o = _rms_norm(o, p["norm.weight"], eps).reshape(batch, tokens, d_out)
    o = o * _silu(gate)
    y = o @ p["out_proj.weight"].T + p["out_proj.bias"]
    return y, state


def _gated_deltanet_loops(x, params, num_heads, eps=1e-6):
    """A deliberately naive transcription of the module's forward (explicit
    loops over batch, tokens, heads and conv taps, scalar gates with the
    math module, alpha_final = exp(...) as the module computes it), to test
    gated_deltanet_reference on tiny shapes. Same arguments and results."""
    x = np.asarray(x, dtype=np.float64)
    batch, tokens, d_model = x.shape
    p = {n: np.asarray(params[n], dtype=np.float64) for n in STATE_DICT_NAMES}
    d_out = p["W_query.weight"].shape[0]
    hd = d_out // num_heads
    y = np.zeros((batch, tokens, d_out))
    states = np.zeros((batch, num_heads, hd, hd))

    def sig(z):
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else (
            math.exp(z) / (1.0 + math.exp(z)))

    def rms(z):
        return z / math.sqrt(sum(e * e for e in z) / len(z) + eps) * \
            p["norm.weight"]

    for b in range(batch):
        proj = {n: [p[n + ".weight"] @ x[b, t] for t in range(tokens)]
                for n in ("W_query", "W_key", "W_value")}
        conv = {}
        for n, c in (("W_query", "conv_q"), ("W_key", "conv_k"),
                     ("W_value", "conv_v")):
            w, bias = p[c + ".weight"], p[c + ".bias"]
            conv[n] = []
            for t in range(tokens):
                acc = bias.copy()
                for j in range(KERNEL_SIZE):
                    src = t - (KERNEL_SIZE - 1) + j   # token under tap j
                    if src >= 0:
                        acc = acc + w[:, 0, j] * proj[n][src]
                conv[n].append(np.array([a * sig(a) for a in acc]))
        for h in range(num_heads):
            S = np.zeros((hd, hd))
            for t in range(tokens):
                cols = slice(h * hd, (h + 1) * hd)
                q = conv["W_query"][t][cols]
                k = conv["W_key"][t][cols]
                v = rms(conv["W_value"][t][cols])
                q = q / max(math.sqrt(float(q @ q)), NORMALIZE_EPS)
                k = k / max(math.sqrt(float(k @ k)), NORMALIZE_EPS)
                a = float(p["alpha.weight"][h] @ x[b, t] + p["alpha.bias"][h])
                sp = a if a > 20 else math.log1p(math.exp(a))
                alpha = math.exp(-sp * math.exp(p["log_alpha"][h]))
                beta = sig(float(p["beta.weight"][h] @ x[b, t]
                                 + p["beta.bias"][h]))
                S = alpha * S
                v_hat = k @ S
                S = S + beta * np.outer(k, v - v_hat)
                y[b, t, cols] = rms(q @ S)
            states[b, h] = S
        for t in range(tokens):
            gate = p["gate.weight"] @ x[b, t] + p["gate.bias"]
            mixed = y[b, t] * np.array([g * sig(g) for g in gate])
            y[b, t] = p["out_proj.weight"] @ mixed + p["out_proj.bias"]
    return y, states


# ----------------------------------------------------------------------------
# The compiled layer
# ----------------------------------------------------------------------------

def _tensor(dims):
    return "tensor<" + "x".join([str(d) for d in dims] + ["f32"]) + ">"


def module_source(d_model, d_out, num_heads):
    """The MLIR module with @gdn_gated_deltanet (llvm.emit_c_interface) for
    one layer configuration."""
    d_model, d_out, heads = _check_sizes(d_model, d_out, num_heads)
    head_dim = d_out // heads
    shapes = state_dict_shapes(d_model, d_out, heads)
    x_type = _tensor(["?", "?", d_model])
    weight_types = [_tensor(shapes[n]) for n in STATE_DICT_NAMES]
    y_type = _tensor(["?", "?", d_out])
    state_type = _tensor(["?", heads, head_dim, head_dim])
    conv_type = _tensor(["?", KERNEL_SIZE - 1, 3 * d_out])
    results = f"{y_type}, {state_type}"
    signature = ", ".join([f"%x: {x_type}"] + [
        f"%p{i}: {t}" for i, t in enumerate(weight_types)])
    weights = ", ".join(f"%p{i}" for i in range(len(weight_types)))
    operand_types = ", ".join([x_type] + weight_types)
    return "\n".join([
        "module {",
        f"  func.func @gdn_gated_deltanet({signature}) -> ({results}) "
        f"attributes {{llvm.emit_c_interface}} {{",
        f"    %y, %s, %c = gdn.gated_deltanet %x weights({weights}) "
        f"{{num_heads = {heads} : i64}} : ({operand_types}) -> "
        f"({results}, {conv_type})",
        f"    return %y, %s : {results}",
        "  }",
        "}",
        "",
    ])


def _library(d_model, d_out, num_heads):
    """The loaded library of one configuration, compiling it if needed."""
    compiler = compiled.find_compiler()
    st = os.stat(compiler)
    directory = compiled.cache_dir()
    key = (compiler, st.st_mtime_ns, st.st_size, directory, d_model, d_out,
           num_heads)
    with compiled._LOCK:
        library = _LIBRARIES.get(key)
        if library is not None:
            return library
        source = module_source(d_model, d_out, num_heads)
        path = compiled.options_library_path(source, compiler,
                                             list(COMPILE_OPTIONS), directory)
        if not os.path.isfile(path):
            compiled.compile_with_options(compiler, source,
                                          list(COMPILE_OPTIONS), path)
        try:
            library = ctypes.CDLL(path)
            function = getattr(library, SYMBOL)
        except (OSError, AttributeError) as e:
            raise RuntimeError(
                f"cannot load {path} (compiled by {compiler}): {e}") from e
        function.restype = None
        function.argtypes = [ctypes.c_void_p] * (len(STATE_DICT_NAMES) + 3)
        _LIBRARIES[key] = library
        return library


def _as_numpy(value):
    """numpy view of an array-like; torch tensors via detach().cpu()."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


class GatedDeltaNetLayer:
    """The design document's GatedMultiHeadDeltaAttention (prefill from a
    zero state), compiled for the CPU.

        layer = GatedDeltaNetLayer(d_model, d_out, num_heads)
        layer.load_state_dict(init_gated_deltanet(0, d_model, d_out, H))
        y = layer(x)            # x [B, T, d_model] float32 -> [B, T, d_out]
        layer.last_state        # [B, H, head_dim, head_dim] float32

    The library is compiled by gdn-compile on the first call (and cached on
    disk like gdn.delta_rule's).
    """

    def __init__(self, d_model, d_out, num_heads):
        self.d_model, self.d_out, self.num_heads = _check_sizes(
            d_model, d_out, num_heads)
        self.head_dim = self.d_out // self.num_heads
        self.shapes = state_dict_shapes(self.d_model, self.d_out,
                                        self.num_heads)
        self.params = None
        self.last_state = None

    def __repr__(self):
        return (f"GatedDeltaNetLayer(d_model={self.d_model}, "
                f"d_out={self.d_out}, num_heads={self.num_heads})")

    def load_state_dict(self, state_dict):
        """Loads every weight (names and shapes of STATE_DICT_NAMES /
        state_dict_shapes) as contiguous float32 copies. ValueError on
        missing or unexpected names, wrong shapes or non-finite values;
        nothing is loaded then."""
        if not hasattr(state_dict, "keys"):
            raise ValueError(f"state_dict must be a mapping of name -> "
                             f"array, got {type(state_dict).__name__}")
        names = list(state_dict.keys())
        missing = [n for n in STATE_DICT_NAMES if n not in state_dict]
        unexpected = [n for n in names if n not in self.shapes]
        if missing or unexpected:
            parts = []
            if missing:
                parts.append("missing keys: " + ", ".join(missing))
            if unexpected:
                parts.append("unexpected keys: "
                             + ", ".join(str(n) for n in unexpected))
            raise ValueError(f"state_dict does not match {self!r}: "
                             + "; ".join(parts))
        params = {}
        for name in STATE_DICT_NAMES:
            value = _as_numpy(state_dict[name])
            expected = self.shapes[name]
            if tuple(value.shape) != expected:
                raise ValueError(
                    f"{name}: expected shape {expected}, got "
                    f"{tuple(value.shape)} (for {self!r})")
            if not (np.issubdtype(value.dtype, np.floating)
                    or np.issubdtype(value.dtype, np.integer)):
                raise ValueError(f"{name}: expected a real floating-point "
                                 f"array, got dtype {value.dtype}")
            value = np.array(value, dtype=np.float32, order="C", copy=True)
            if name != "log_alpha" and not np.all(np.isfinite(value)):
                raise ValueError(f"{name} holds non-finite values")
            if name == "log_alpha" and np.any(np.isnan(value) |
                                              (value == np.inf)):
                raise ValueError("log_alpha holds NaN or +inf")
            params[name] = value
        self.params = params

    def state_dict(self):
        """The loaded weights (copies), STATE_DICT_NAMES order."""
        if self.params is None:
            return None
        return {n: self.params[n].copy() for n in STATE_DICT_NAMES}

    def __call__(self, x):
        """y [B, T, d_out] float32 for x [B, T, d_model] (float32, or any
        real dtype, converted); the final state goes to self.last_state."""
        if self.params is None:
            raise RuntimeError(f"{self!r} has no weights: call "
                               f"load_state_dict first (e.g. with "
                               f"init_gated_deltanet(seed, {self.d_model}, "
                               f"{self.d_out}, {self.num_heads}))")
        x = _as_numpy(x)
        if x.ndim != 3 or x.shape[2] != self.d_model:
            raise ValueError(f"x must have shape (B, T, {self.d_model}) "
                             f"[batch, tokens, d_model], got "
                             f"{tuple(x.shape)}")
        if not (np.issubdtype(x.dtype, np.floating)
                or np.issubdtype(x.dtype, np.integer)):
            raise ValueError(f"x must be a real array, got dtype {x.dtype}")
        x = np.ascontiguousarray(x, dtype=np.float32)
        batch, tokens, _ = x.shape
        y = np.empty((batch, tokens, self.d_out), dtype=np.float32)
        state = np.empty((batch, self.num_heads, self.head_dim,
                          self.head_dim), dtype=np.float32)
        if batch == 0 or tokens == 0:        # nothing to run
            y[...] = 0.0
            state[...] = 0.0
            self.last_state = state
            return y
        library = _library(self.d_model, self.d_out, self.num_heads)
        arrays = [x] + [self.params[n] for n in STATE_DICT_NAMES] + [y, state]
        descriptors = [compiled.descriptor(a) for a in arrays]
        getattr(library, SYMBOL)(*[ctypes.addressof(d) for d in descriptors])
        del descriptors
        self.last_state = state
        return y
