"""Tests of gdn.layers: the float64 reference of the design document's
GatedMultiHeadDeltaAttention against a naive loop transcription
(loop_reference.py), the
initialisation, state_dict loading, the MLIR text, and the layer compiled
from gdn.gated_deltanet against the reference.

The compiled tests are skipped only when gdn-compile reports that it does
not know gdn.gated_deltanet (the op is not built yet); any other failure
fails them.
"""

import math
import os
import subprocess

import numpy as np
import pytest

import gdn
from gdn import cache, layers, reference
from loop_reference import gated_deltanet_loops

BUDGET = 1e-4


@pytest.fixture(scope="module", autouse=True)
def module_cache_dir(tmp_path_factory):
    """One cache directory for the compiled tests of this module (a
    temporary one, or $GDN_CACHE_DIR when set)."""
    with pytest.MonkeyPatch.context() as mp:
        path = os.environ.get("GDN_CACHE_DIR")
        if not path:
            path = str(tmp_path_factory.mktemp("gdn-layer-cache"))
            mp.setenv("GDN_CACHE_DIR", path)
        yield path


@pytest.fixture
def no_compiler(monkeypatch, tmp_path):
    monkeypatch.setenv("GDN_COMPILE", str(tmp_path / "no-such-gdn-compile"))


def _assert_close(name, actual, expected, budget):
    ratio, max_rel = reference.relative_error(actual, expected)
    assert ratio <= budget and max_rel <= budget, (
        f"{name}: relative error {ratio:.3g} (l2), {max_rel:.3g} (max) "
        f"> {budget:g}")


def _x(seed, batch, tokens, d_model, scale=1.0):
    rng = np.random.default_rng(seed)
    return (scale * rng.standard_normal((batch, tokens, d_model))).astype(
        np.float32)


def _weak_gates(params):
    """Long memory: small exp(log_alpha) and negative alpha bias, so that
    alpha_final is close to 1 and the state accumulates over many tokens."""
    p = dict(params)
    heads = p["log_alpha"].shape[0]
    p["log_alpha"] = np.log(np.linspace(0.05, 1.0, heads)).astype(np.float32)
    p["alpha.bias"] = np.full(heads, -3.0, np.float32)
    return p


# ----------------------------------------------------------------------------
# (a) The vectorized reference against the loop transcription
# ----------------------------------------------------------------------------

# (d_model, d_out, H, B, T): T below, at and above the conv's reach of 4.
_TINY = [(5, 8, 2, 2, 7), (8, 4, 1, 1, 1), (6, 12, 3, 2, 3),
         (4, 8, 4, 1, 4), (7, 6, 2, 3, 9)]


def _wild(params, seed):
    """Larger weights, head 0 past softplus's threshold (alpha > 20), the
    last head (of several) with a zero query (F.normalize's eps),
    norm.weight != 1."""
    rng = np.random.default_rng(seed)
    p = {n: (a * 3.0).astype(np.float32) for n, a in params.items()}
    heads = p["log_alpha"].shape[0]
    d_out = p["W_query.weight"].shape[0]
    head_dim = d_out // heads
    p["log_alpha"] = params["log_alpha"]
    p["alpha.bias"] = rng.uniform(-30, 30, heads).astype(np.float32)
    p["alpha.bias"][0] = 25.0
    p["alpha.weight"][0] *= 1e-3        # softplus input ~25 > 20 for head 0
    p["norm.weight"] = rng.uniform(0.5, 1.5, head_dim).astype(np.float32)
    if heads > 1:
        last = slice(d_out - head_dim, d_out)
        p["W_query.weight"][last] = 0.0     # q of the last head: silu(0) = 0
        p["conv_q.bias"][last] = 0.0
    return p


@pytest.mark.parametrize("d_model,d_out,heads,batch,tokens", _TINY)
@pytest.mark.parametrize("kind", ["init", "wild", "weak"])
def test_reference_matches_loops(d_model, d_out, heads, batch, tokens, kind):
    seed = d_model * 100 + d_out * 10 + heads
    params = layers.init_gated_deltanet(seed, d_model, d_out, heads)
    if kind == "wild":
        params = _wild(params, seed)
    elif kind == "weak":
        params = _weak_gates(params)
    x = _x(seed + 1, batch, tokens, d_model, 3.0 if kind == "wild" else 1.0)
    y, state = layers.gated_deltanet_reference(x, params, heads)
    y_loop, state_loop = gated_deltanet_loops(x, params, heads)
    head_dim = d_out // heads
    assert y.shape == (batch, tokens, d_out) and y.dtype == np.float64
    assert state.shape == (batch, heads, head_dim, head_dim)
    assert state.dtype == np.float64
    assert np.all(np.isfinite(y)) and np.all(np.isfinite(state))
    _assert_close("y", y, y_loop, 1e-12)
    _assert_close("final state", state, state_loop, 1e-12)


def test_reference_is_causal():
    d_model, d_out, heads = 6, 8, 2
    params = layers.init_gated_deltanet(3, d_model, d_out, heads)
    x = _x(4, 2, 9, d_model)
    y, _ = layers.gated_deltanet_reference(x, params, heads)
    changed = x.copy()
    changed[:, 5:] += 1.0
    y2, _ = layers.gated_deltanet_reference(changed, params, heads)
    np.testing.assert_array_equal(y2[:, :5], y[:, :5])
    assert np.all(np.abs(y2[:, 5:] - y[:, 5:]).max(axis=-1) > 0)


def test_reference_first_token_by_hand():
    """T = 1 from a zero state: S = beta k v^T, o = beta (q.k) v, and only
    the last conv tap (w[:, 0, 3]) sees the token."""
    d_model, d_out, heads = 5, 6, 2
    hd = d_out // heads
    p = layers.init_gated_deltanet(11, d_model, d_out, heads)
    x = _x(12, 1, 1, d_model).astype(np.float64)[0, 0]
    p64 = {n: a.astype(np.float64) for n, a in p.items()}

    def silu(z):
        return z / (1.0 + np.exp(-z))

    def conv(name, w):
        return silu(p64[name + ".weight"][:, 0, 3] * (p64[w] @ x)
                    + p64[name + ".bias"])

    q, k, v = (conv("conv_q", "W_query.weight"), conv("conv_k",
               "W_key.weight"), conv("conv_v", "W_value.weight"))
    o = np.zeros(d_out)
    for h in range(heads):
        c = slice(h * hd, (h + 1) * hd)
        qh = q[c] / np.linalg.norm(q[c])
        kh = k[c] / np.linalg.norm(k[c])
        vh = v[c] / np.sqrt(np.mean(v[c] ** 2) + 1e-6)
        beta = 1.0 / (1.0 + np.exp(-(p64["beta.weight"][h] @ x
                                     + p64["beta.bias"][h])))
        oh = beta * (qh @ kh) * vh
        o[c] = oh / np.sqrt(np.mean(oh ** 2) + 1e-6)
    o *= silu(p64["gate.weight"] @ x + p64["gate.bias"])
    expected = p64["out_proj.weight"] @ o + p64["out_proj.bias"]
    y, _ = layers.gated_deltanet_reference(x[None, None], p, heads)
    _assert_close("y", y[0, 0], expected, 1e-13)


def test_softplus_threshold_and_sigmoid_extremes():
    z = np.array([-1000.0, -30.0, 0.0, 19.0, 20.0, 20.5, 1000.0])
    sp = reference.softplus(z)
    np.testing.assert_allclose(sp[1:5], np.log1p(np.exp(z[1:5])),
                               rtol=1e-15)
    assert sp[0] == 0.0 and sp[5] == 20.5 and sp[6] == 1000.0
    s = reference.sigmoid(np.array([-1000.0, 0.0, 1000.0]))
    np.testing.assert_array_equal(s, [0.0, 0.5, 1.0])


# ----------------------------------------------------------------------------
# (b) Initialisation
# ----------------------------------------------------------------------------

def test_state_dict_shapes():
    shapes = layers.state_dict_shapes(96, 64, 2)
    assert tuple(shapes) == layers.STATE_DICT_NAMES
    assert len(layers.STATE_DICT_NAMES) == 19
    assert shapes["W_query.weight"] == (64, 96)
    assert shapes["out_proj.weight"] == (64, 64)
    assert shapes["out_proj.bias"] == (64,)
    assert shapes["beta.weight"] == shapes["alpha.weight"] == (2, 96)
    assert shapes["log_alpha"] == (2,)
    assert shapes["gate.weight"] == (64, 96) and shapes["gate.bias"] == (64,)
    for c in ("conv_k", "conv_v", "conv_q"):
        assert shapes[c + ".weight"] == (64, 1, 4)
        assert shapes[c + ".bias"] == (64,)
    assert shapes["norm.weight"] == (32,)
    with pytest.raises(ValueError, match="multiple of num_heads"):
        layers.state_dict_shapes(64, 64, 3)


def test_init_shapes_and_determinism():
    a = gdn.init_gated_deltanet(7, 96, 64, 2)
    b = gdn.init_gated_deltanet(7, 96, 64, 2)
    c = gdn.init_gated_deltanet(8, 96, 64, 2)
    shapes = layers.state_dict_shapes(96, 64, 2)
    assert tuple(a) == layers.STATE_DICT_NAMES
    for name in layers.STATE_DICT_NAMES:
        assert a[name].shape == shapes[name], name
        assert a[name].dtype == np.float32, name
        assert a[name].flags.c_contiguous, name
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
        if name != "norm.weight":
            assert not np.array_equal(a[name], c[name]), name


def test_init_statistics():
    d_model, d_out, heads = 64, 1024, 1024   # many heads: log_alpha stats
    p = gdn.init_gated_deltanet(0, d_model, d_out, heads)
    fan_in = {"W_query": d_model, "W_key": d_model, "W_value": d_model,
              "out_proj": d_out, "beta": d_model, "alpha": d_model,
              "gate": d_model, "conv_k": 4, "conv_v": 4, "conv_q": 4}
    for name in layers.STATE_DICT_NAMES:
        layer = name.rsplit(".", 1)[0]
        if layer not in fan_in:
            continue
        bound = 1.0 / math.sqrt(fan_in[layer])
        a = p[name].astype(np.float64)
        assert np.all(np.abs(a) <= bound), name
        # U(-b, b): mean 0, std b / sqrt(3), range close to [-b, b].
        n = a.size
        assert abs(a.mean()) <= 5 * bound / math.sqrt(3 * n), name
        assert abs(a.std() / (bound / math.sqrt(3)) - 1) <= 5 / math.sqrt(
            n) + 1e-3, name
        if n >= 1000:
            assert a.max() > 0.95 * bound and a.min() < -0.95 * bound, name
    assert "W_query.bias" not in p       # qkv_bias=False
    np.testing.assert_array_equal(p["norm.weight"], np.ones(1, np.float32))
    a = np.exp(p["log_alpha"].astype(np.float64))       # U(0, 16)
    assert np.all(np.isfinite(p["log_alpha"]))
    assert np.all(a > 0) and np.all(a <= 16 * (1 + 1e-6))
    assert abs(a.mean() - 8) <= 5 * 16 / math.sqrt(12 * heads)
    assert abs(a.std() - 16 / math.sqrt(12)) <= 0.1 * 16 / math.sqrt(12)


# ----------------------------------------------------------------------------
# (c) The layer object: loading and validation (no compiler needed)
# ----------------------------------------------------------------------------

def test_load_state_dict_missing(no_compiler):
    layer = gdn.GatedDeltaNetLayer(8, 8, 2)
    p = gdn.init_gated_deltanet(0, 8, 8, 2)
    del p["log_alpha"], p["conv_v.bias"]
    with pytest.raises(ValueError, match=r"missing keys: conv_v\.bias, "
                                         r"log_alpha|missing keys: "
                                         r"log_alpha, conv_v\.bias"):
        layer.load_state_dict(p)
    assert layer.params is None


def test_load_state_dict_unexpected(no_compiler):
    layer = gdn.GatedDeltaNetLayer(8, 8, 2)
    p = gdn.init_gated_deltanet(0, 8, 8, 2)
    p["W_query.bias"] = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match=r"unexpected keys: W_query\.bias"):
        layer.load_state_dict(p)
    del p["norm.weight"]
    with pytest.raises(ValueError) as info:
        layer.load_state_dict(p)
    assert "missing keys: norm.weight" in str(info.value)
    assert "unexpected keys: W_query.bias" in str(info.value)


@pytest.mark.parametrize("name,shape", [
    ("conv_k.weight", (8, 4)),
    ("norm.weight", (8,)),
    ("W_value.weight", (6, 8)),         # transposed [in, out]
    ("log_alpha", (2, 1)),
    ("out_proj.bias", ()),
])
def test_load_state_dict_wrong_shape(no_compiler, name, shape):
    layer = gdn.GatedDeltaNetLayer(6, 8, 2)
    p = gdn.init_gated_deltanet(0, 6, 8, 2)
    expected = p[name].shape
    p[name] = np.zeros(shape, np.float32)
    with pytest.raises(ValueError) as info:
        layer.load_state_dict(p)
    message = str(info.value)
    assert name in message
    assert f"expected shape {expected}" in message
    assert f"got {shape}" in message
    assert layer.params is None


def test_load_state_dict_converts_and_copies(no_compiler):
    layer = gdn.GatedDeltaNetLayer(6, 8, 2)
    p = gdn.init_gated_deltanet(0, 6, 8, 2)
    given = {n: a.astype(np.float64) for n, a in p.items()}
    given["W_key.weight"] = np.asfortranarray(given["W_key.weight"])
    given["gate.weight"] = p["gate.weight"]          # already float32
    layer.load_state_dict(given)
    for name in layers.STATE_DICT_NAMES:
        assert layer.params[name].dtype == np.float32
        assert layer.params[name].flags.c_contiguous
        np.testing.assert_array_equal(layer.params[name], p[name])
    p["gate.weight"][0, 0] += 1.0
    assert layer.params["gate.weight"][0, 0] != p["gate.weight"][0, 0]
    state = layer.state_dict()
    assert tuple(state) == layers.STATE_DICT_NAMES


def test_load_state_dict_rejects_non_finite(no_compiler):
    layer = gdn.GatedDeltaNetLayer(6, 8, 2)
    p = gdn.init_gated_deltanet(0, 6, 8, 2)
    p["beta.bias"] = np.array([0.0, np.nan], np.float32)
    with pytest.raises(ValueError, match="beta.bias"):
        layer.load_state_dict(p)


def test_layer_validation(no_compiler):
    with pytest.raises(ValueError, match="multiple of num_heads"):
        gdn.GatedDeltaNetLayer(8, 8, 3)
    with pytest.raises(ValueError, match="d_model must be a positive int"):
        gdn.GatedDeltaNetLayer(0, 8, 2)
    layer = gdn.GatedDeltaNetLayer(6, 8, 2)
    with pytest.raises(RuntimeError, match="load_state_dict"):
        layer(np.zeros((1, 2, 6), np.float32))
    layer.load_state_dict(gdn.init_gated_deltanet(0, 6, 8, 2))
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, 6\)"):
        layer(np.zeros((1, 2, 5), np.float32))
    with pytest.raises(ValueError, match=r"x must have shape"):
        layer(np.zeros((2, 6), np.float32))


def test_empty_input_needs_no_compiler(no_compiler):
    layer = gdn.GatedDeltaNetLayer(6, 8, 2)
    layer.load_state_dict(gdn.init_gated_deltanet(0, 6, 8, 2))
    y = layer(np.zeros((2, 0, 6), np.float32))
    assert y.shape == (2, 0, 8) and y.dtype == np.float32
    np.testing.assert_array_equal(layer.last_state,
                                  np.zeros((2, 2, 4, 4), np.float32))
    y = layer(np.zeros((0, 3, 6), np.float32))
    assert y.shape == (0, 3, 8)


def test_missing_compiler_is_reported(monkeypatch, tmp_path):
    missing = tmp_path / "nowhere" / "gdn-compile"
    monkeypatch.setenv("GDN_COMPILE", str(missing))
    layer = gdn.GatedDeltaNetLayer(6, 8, 2)
    layer.load_state_dict(gdn.init_gated_deltanet(0, 6, 8, 2))
    with pytest.raises(RuntimeError, match="nowhere"):
        layer(np.zeros((1, 2, 6), np.float32))


# ----------------------------------------------------------------------------
# MLIR text
# ----------------------------------------------------------------------------

def test_module_source():
    text = layers.module_source(96, 64, 2)
    assert text.startswith("module {\n")
    assert ("  func.func @gdn_gated_deltanet(%x: tensor<?x?x96xf32>, "
            "%p0: tensor<64x96xf32>, %p1: tensor<64x96xf32>, "
            "%p2: tensor<64x96xf32>, %p3: tensor<64x64xf32>, "
            "%p4: tensor<64xf32>, %p5: tensor<2x96xf32>, "
            "%p6: tensor<2xf32>, %p7: tensor<2x96xf32>, %p8: tensor<2xf32>, "
            "%p9: tensor<64x96xf32>, %p10: tensor<64xf32>, "
            "%p11: tensor<2xf32>, %p12: tensor<64x1x4xf32>, "
            "%p13: tensor<64xf32>, %p14: tensor<64x1x4xf32>, "
            "%p15: tensor<64xf32>, %p16: tensor<64x1x4xf32>, "
            "%p17: tensor<64xf32>, %p18: tensor<32xf32>) -> "
            "(tensor<?x?x64xf32>, tensor<?x2x32x32xf32>) "
            "attributes {llvm.emit_c_interface} {\n" in text)
    weights = ", ".join(f"%p{i}" for i in range(19))
    assert (f"    %y, %s, %c = gdn.gated_deltanet %x weights({weights}) "
            "{num_heads = 2 : i64} : (tensor<?x?x96xf32>, "
            "tensor<64x96xf32>, " in text)
    assert ("tensor<32xf32>) -> (tensor<?x?x64xf32>, "
            "tensor<?x2x32x32xf32>, tensor<?x3x192xf32>)\n" in text)
    assert ("    return %y, %s : tensor<?x?x64xf32>, "
            "tensor<?x2x32x32xf32>\n  }\n}\n" in text)


# ----------------------------------------------------------------------------
# (d) The compiled layer against the reference
# ----------------------------------------------------------------------------

_UNKNOWN_OP = "'gdn.gated_deltanet' is unknown"


@pytest.fixture(scope="module")
def gated_deltanet_op(tmp_path_factory):
    """Skips when gdn-compile does not know gdn.gated_deltanet (not built
    yet); a missing compiler or any other error fails the test."""
    compiler = cache.find_compiler()
    path = tmp_path_factory.mktemp("probe") / "probe.mlir"
    path.write_text(layers.module_source(64, 64, 2))
    result = subprocess.run([compiler, str(path), "--target=cpu",
                             "--emit=mlir", "-o", "-"],
                            capture_output=True, text=True)
    if result.returncode != 0 and _UNKNOWN_OP in result.stderr:
        first_line = result.stderr.strip().splitlines()[0]
        pytest.skip(f"{compiler} does not know gdn.gated_deltanet yet (the "
                    f"op is not built): {first_line}")
    assert result.returncode == 0, (
        f"gdn-compile --emit=mlir failed on module_source(64, 64, 2):\n"
        f"{result.stderr}")
    return compiler


def test_module_source_parses(gated_deltanet_op):
    gdn_opt = os.path.join(os.path.dirname(gated_deltanet_op), "gdn-opt")
    for sizes in ((64, 64, 2), (96, 64, 1), (128, 256, 2)):
        result = subprocess.run([gdn_opt, "-"], capture_output=True,
                                text=True,
                                input=layers.module_source(*sizes))
        assert result.returncode == 0, result.stderr


_CONFIGS = [(64, 64, 2), (96, 64, 1), (256, 256, 2), (128, 256, 2)]
_LAYERS = {}


def _layer(d_model, d_out, heads, kind="init"):
    key = (d_model, d_out, heads, kind)
    if key not in _LAYERS:
        seed = d_model + d_out + heads
        params = gdn.init_gated_deltanet(seed, d_model, d_out, heads)
        if kind == "weak":
            params = _weak_gates(params)
        elif kind == "wild":
            params = _wild(params, seed)
        layer = gdn.GatedDeltaNetLayer(d_model, d_out, heads)
        layer.load_state_dict(params)
        _LAYERS[key] = (layer, params)
    return _LAYERS[key]


def _check_layer(config, batch, tokens, kind, seed):
    d_model, d_out, heads = config
    layer, params = _layer(d_model, d_out, heads, kind)
    x = _x(seed, batch, tokens, d_model, 3.0 if kind == "wild" else 1.0)
    x_before = x.copy()
    y = layer(x)
    np.testing.assert_array_equal(x, x_before, err_msg="x was modified")
    head_dim = d_out // heads
    assert y.shape == (batch, tokens, d_out) and y.dtype == np.float32
    state = layer.last_state
    assert state.shape == (batch, heads, head_dim, head_dim)
    assert state.dtype == np.float32
    y_ref, state_ref = gdn.gated_deltanet_reference(x, params, heads)
    where = (f"(d_model, d_out, H) = {config}, B = {batch}, T = {tokens}, "
             f"{kind} weights")
    _assert_close(f"y {where}", y, y_ref, BUDGET)
    _assert_close(f"final state {where}", state, state_ref, BUDGET)


@pytest.mark.parametrize("tokens", [1, 37, 130])
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("config", _CONFIGS, ids=lambda c: "x".join(map(
    str, c)))
def test_compiled_layer(gated_deltanet_op, config, batch, tokens):
    _check_layer(config, batch, tokens, "init",
                 seed=sum(config) * 1000 + batch * 200 + tokens)


@pytest.mark.parametrize("config", [(64, 64, 2), (128, 256, 2)],
                         ids=lambda c: "x".join(map(str, c)))
def test_compiled_layer_weak_gates(gated_deltanet_op, config):
    _check_layer(config, 2, 130, "weak", seed=sum(config))


@pytest.mark.parametrize("config", _CONFIGS,
                         ids=lambda c: "x".join(map(str, c)))
def test_compiled_layer_wild_weights(gated_deltanet_op, config):
    """norm.weight != 1, softplus past its threshold, a zero query."""
    _check_layer(config, 2, 37, "wild", seed=sum(config) + 1)


def test_compiled_layer_repeat_and_float64_input(gated_deltanet_op):
    layer, params = _layer(64, 64, 2)
    x = _x(5, 2, 20, 64)
    y1 = layer(x)
    s1 = layer.last_state.copy()
    y2 = layer(x.astype(np.float64))
    np.testing.assert_array_equal(y2, y1)
    np.testing.assert_array_equal(layer.last_state, s1)
    # Another layer object of the same configuration with other weights
    # shares the compiled library but not the weights.
    other = gdn.GatedDeltaNetLayer(64, 64, 2)
    other_params = gdn.init_gated_deltanet(99, 64, 64, 2)
    other.load_state_dict(other_params)
    y3 = other(x)
    y_ref, _ = gdn.gated_deltanet_reference(x, other_params, 2)
    _assert_close("y (second layer)", y3, y_ref, BUDGET)
    assert layers._library(64, 64, 2) is layers._library(64, 64, 2)
