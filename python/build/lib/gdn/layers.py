"""The Gated DeltaNet layer of the design document, on numpy arrays.

`GatedMultiHeadDeltaAttention` (the design document's reference PyTorch
module) as

- `init_gated_deltanet`: deterministic float32 weights following the
  module's initialisation (PyTorch's default Linear / Conv1d init,
  log_alpha = log(U(0, 16)), norm.weight = 1);
- `gated_deltanet_reference`: the module's forward in float64, which is
  `gdn.reference.gated_deltanet` (the op's one reference) on a checked
  state_dict;
- `GatedDeltaNetLayer`: the layer compiled from `gdn.gated_deltanet` by
  gdn-compile (CPU shared library, cached by `gdn.cache`), loaded with a
  state_dict of numpy arrays.

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

import numpy as np

from . import cache, compiled, reference
from .mlir import tensor_type

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
SYMBOL = "_mlir_ciface_gdn_gated_deltanet"
COMPILE_OPTIONS = ("--target=cpu", "--emit=shared")


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
# float64 reference
# ----------------------------------------------------------------------------

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
    return p


def gated_deltanet_reference(x, params, num_heads, eps=1e-6):
    """The reference module's forward in float64 from a zero state.

    x: [B, T, d_model]; params: name -> array (STATE_DICT_NAMES), checked
    against state_dict_shapes (ValueError).
    Returns (y [B, T, d_out], final_state [B, H, head_dim, head_dim]), both
    float64.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"x must be [B, T, d_model], got shape {x.shape}")
    p = _float64_params(params, num_heads, x.shape[2])
    y, state, _ = reference.gated_deltanet(x, p, num_heads, eps)
    return y, state


# ----------------------------------------------------------------------------
# The compiled layer
# ----------------------------------------------------------------------------

def module_source(d_model, d_out, num_heads):
    """The MLIR module with @gdn_gated_deltanet (llvm.emit_c_interface) for
    one layer configuration."""
    d_model, d_out, heads = _check_sizes(d_model, d_out, num_heads)
    head_dim = d_out // heads
    shapes = state_dict_shapes(d_model, d_out, heads)
    x_type = tensor_type(["?", "?", d_model])
    weight_types = [tensor_type(shapes[n]) for n in STATE_DICT_NAMES]
    y_type = tensor_type(["?", "?", d_out])
    state_type = tensor_type(["?", heads, head_dim, head_dim])
    conv_type = tensor_type(["?", KERNEL_SIZE - 1, 3 * d_out])
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


def _prepare(library):
    function = getattr(library, SYMBOL)
    function.restype = None
    function.argtypes = [ctypes.c_void_p] * (len(STATE_DICT_NAMES) + 3)


def _library(d_model, d_out, num_heads):
    """The loaded library of one configuration, compiling it if needed."""
    return cache.load(("gated_deltanet", d_model, d_out, num_heads),
                      lambda: module_source(d_model, d_out, num_heads),
                      COMPILE_OPTIONS, _prepare)


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
