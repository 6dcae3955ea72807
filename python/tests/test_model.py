"""gdn.model: the model description's validation, layer pattern, weight
names and shapes, initialisation, cache sizes, the float64 whole-model
reference (decode after prefill against a longer prefill, causality, RoPE,
MLA and the GDN mixer against loop transcriptions, the model on one token)
and the bytes
tokenizer; the nenya-tiny example and its make_weights.py."""

import copy
import importlib.util
import json
import math
import os
import re

import numpy as np
import pytest

from gdn import layers, model, reference, safetensors
from loop_reference import gated_deltanet_loops

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
TINY = os.path.join(ROOT, "examples", "nenya-tiny")
TINY_JSON = os.path.join(TINY, "model.json")
BUDGET = 1e-10


def _tiny():
    with open(TINY_JSON) as f:
        return json.load(f)


def _random_config(conv_size=3, q_lora_rank=12, tie=False):
    """Small, every layer kind, GDN first and last, q_lora_rank > 0."""
    return {
        "vocab_size": 37, "d_model": 24, "num_layers": 5,
        "layer_types": ["gdn", "mla", "gdn", "mla", "gdn"],
        "gdn": {"num_heads": 3, "head_dim": 8, "conv_size": conv_size},
        "mla": {"num_heads": 3, "q_lora_rank": q_lora_rank,
                "kv_lora_rank": 10, "qk_nope_head_dim": 6,
                "qk_rope_head_dim": 4, "v_head_dim": 5, "rope_theta": 500.0},
        "mlp_hidden_size": 40, "norm_eps": 1e-5, "tie_embeddings": tie,
        "max_context": 64, "tokenizer": "ids",
    }


def _perturbed(config, seed):
    """init_weights with norm weights away from 1 and long GDN memory, so
    that every weight and the carried state matter."""
    weights = model.init_weights(config, seed)
    rng = np.random.default_rng(seed + 100)
    for name, value in weights.items():
        if name.endswith("norm.weight"):
            weights[name] = (value * (1 + 0.3 * rng.standard_normal(
                value.shape))).astype(np.float32)
        elif name.endswith("log_alpha"):
            weights[name] = np.log(rng.uniform(0.02, 0.5, value.shape)
                                   ).astype(np.float32)
        elif name.endswith("alpha.bias"):
            weights[name] = np.full(value.shape, -2.0, np.float32)
    return weights


def _assert_close(name, actual, expected, budget=BUDGET):
    ratio, max_rel = reference.relative_error(actual, expected)
    assert ratio <= budget and max_rel <= budget, (
        f"{name}: relative error {ratio:.3g} (l2), {max_rel:.3g} (max)")


# ----------------------------------------------------------------------------
# The model description
# ----------------------------------------------------------------------------

def test_tiny_example_config():
    config = model.load_config(TINY_JSON)
    assert config == model.load_config(_tiny())
    assert model.layer_kinds(config) == ["mla", "gdn", "gdn", "gdn", "mla",
                                         "mla"]
    assert config["d_model"] == 128 and config["tokenizer"] == "bytes"
    assert config["gdn"] == {"num_heads": 2, "head_dim": 64, "conv_size": 4}
    assert config["mla"]["q_lora_rank"] == 0
    # The result validates again unchanged.
    assert model.load_config(config) == config


def _set(path, value):
    def mutate(c):
        *parents, last = path.split(".")
        for p in parents:
            c = c[p]
        c[last] = value
    return mutate


def _delete(path):
    def mutate(c):
        *parents, last = path.split(".")
        for p in parents:
            c = c[p]
        del c[last]
    return mutate


def _both(*mutations):
    def mutate(c):
        for m in mutations:
            m(c)
    return mutate


CONFIG_ERRORS = [
    (_set("vocab_size", -1), "vocab_size: expected an integer > 0, got -1"),
    (_set("vocab_size", 256.0),
     "vocab_size: expected an integer > 0, got 256.0"),
    (_set("vocab_size", True), "vocab_size: expected an integer > 0, got "
                               "true"),
    (_delete("vocab_size"), "vocab_size: missing (expected an integer > 0)"),
    (_set("d_model", "128"), 'd_model: expected an integer > 0, got "128"'),
    (_set("num_layers", 0), "num_layers: expected an integer > 0, got 0"),
    (_delete("num_layers"), "num_layers: missing"),
    (_set("vocab_sise", 5), "vocab_sise: unknown field"),
    (_set("gdn.heads", 2), "gdn.heads: unknown field"),
    (_set("mla.rope_scaling", None), "mla.rope_scaling: unknown field"),
    (_set("layer_types", ["mla"] * 6),
     "layer_types, layer_pattern: expected exactly one of them, got both"),
    (_delete("layer_pattern"), "layer_types: missing"),
    (_set("layer_pattern", "kimi"), 'layer_pattern: expected "nenya", got '
                                    '"kimi"'),
    (_both(_delete("layer_pattern"), _set("layer_types", "mla")),
     'layer_types: expected a list of "gdn" / "mla", got "mla"'),
    (_both(_delete("layer_pattern"), _set("layer_types", ["mla"] * 5)),
     "layer_types: expected 6 entries (num_layers), got 5"),
    (_both(_delete("layer_pattern"),
           _set("layer_types", ["mla", "gdn", "attn", "gdn", "mla", "mla"])),
     'layer_types[2]: expected "gdn" or "mla", got "attn"'),
    (_delete("gdn"), "gdn: missing (required: layers 1, 2, 3 are GDN)"),
    (_delete("mla"), "mla: missing (required: layers 0, 4, 5 are MLA)"),
    (_set("gdn", [2, 64, 4]), "gdn: expected an object, got [2, 64, 4]"),
    (_set("gdn.num_heads", 0), "gdn.num_heads: expected an integer > 0"),
    (_delete("gdn.head_dim"), "gdn.head_dim: missing"),
    (_set("gdn.conv_size", -4), "gdn.conv_size: expected an integer > 0, "
                                "got -4"),
    (_set("gdn.head_dim", 32),
     "gdn.num_heads * gdn.head_dim: expected d_model = 128, got 2 * 32 = 64"),
    (_set("mla.num_heads", 0), "mla.num_heads: expected an integer > 0"),
    (_set("mla.q_lora_rank", -1),
     "mla.q_lora_rank: expected an integer >= 0, got -1"),
    (_delete("mla.q_lora_rank"), "mla.q_lora_rank: missing"),
    (_set("mla.kv_lora_rank", -1),
     "mla.kv_lora_rank: expected an integer > 0, got -1"),
    (_set("mla.qk_nope_head_dim", 0), "mla.qk_nope_head_dim: expected"),
    (_set("mla.qk_rope_head_dim", 15),
     "mla.qk_rope_head_dim: expected an even integer > 0, got 15"),
    (_set("mla.qk_rope_head_dim", 0),
     "mla.qk_rope_head_dim: expected an even integer > 0, got 0"),
    (_set("mla.v_head_dim", 1.5), "mla.v_head_dim: expected an integer > 0"),
    (_set("mla.rope_theta", 0), "mla.rope_theta: expected a number > 0, "
                                "got 0"),
    (_set("mla.rope_theta", "1e4"), "mla.rope_theta: expected a number > 0"),
    (_set("mla.rope_theta", math.inf), "mla.rope_theta: expected a number"),
    (_delete("mla.rope_theta"), "mla.rope_theta: missing"),
    (_set("mlp_hidden_size", 0), "mlp_hidden_size: expected an integer > 0"),
    (_set("norm_eps", 0.0), "norm_eps: expected a number > 0, got 0.0"),
    (_set("norm_eps", False), "norm_eps: expected a number > 0, got false"),
    (_delete("norm_eps"), "norm_eps: missing"),
    (_set("tie_embeddings", 1), "tie_embeddings: expected true or false, "
                                "got 1"),
    (_delete("tie_embeddings"), "tie_embeddings: missing"),
    (_set("max_context", 0), "max_context: expected an integer > 0, got 0"),
    (_delete("max_context"), "max_context: missing"),
    (_set("tokenizer", "bpe"), 'tokenizer: expected "bytes" or "ids", got '
                               '"bpe"'),
    (_delete("tokenizer"), "tokenizer: missing"),
    (_set("vocab_size", 255),
     'vocab_size: expected >= 256 for tokenizer "bytes", got 255'),
]


@pytest.mark.parametrize("mutate,message", CONFIG_ERRORS,
                         ids=[m for _, m in CONFIG_ERRORS])
def test_config_error(mutate, message):
    config = _tiny()
    mutate(config)
    with pytest.raises(ValueError) as info:
        model.load_config(config)
    assert message in str(info.value)


def test_config_not_an_object():
    with pytest.raises(ValueError, match="must be a JSON object"):
        model.load_config([1, 2])


def test_config_file_errors_name_the_file(tmp_path):
    bad = _tiny()
    bad["mla"]["kv_lora_rank"] = -1
    path = tmp_path / "model.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError) as info:
        model.load_config(path)
    assert str(info.value) == (f"{path}: mla.kv_lora_rank: expected an "
                               f"integer > 0, got -1")
    path.write_text("{\"vocab_size\": 256,")
    with pytest.raises(ValueError, match=re.escape(f"{path}: not valid "
                                                   f"JSON")):
        model.load_config(path)
    path.write_text('{"vocab_size": 256, "vocab_size": 300}')
    with pytest.raises(ValueError, match="vocab_size: given twice"):
        model.load_config(path)
    with pytest.raises(ValueError, match="cannot read"):
        model.load_config(tmp_path / "missing.json")


def test_config_valid_variants():
    config = _tiny()
    del config["layer_pattern"], config["mla"]
    config["layer_types"] = ["gdn"] * 6
    assert model.layer_kinds(config) == ["gdn"] * 6
    config = _tiny()
    del config["layer_pattern"], config["gdn"]
    config["layer_types"] = ["mla"] * 6
    config["gdn"] = {"num_heads": 1, "head_dim": 128, "conv_size": 2}
    assert model.load_config(config)["gdn"]["conv_size"] == 2  # unused: ok
    config = _tiny()
    config.update(vocab_size=10, tokenizer="ids")
    config["mla"]["rope_theta"] = 10000                          # an int
    loaded = model.load_config(config)
    assert loaded["mla"]["rope_theta"] == 10000.0
    assert isinstance(loaded["mla"]["rope_theta"], float)


@pytest.mark.parametrize("num_layers,expected", [
    (1, "M"), (2, "MM"), (3, "MGM"), (4, "MGGM"), (5, "MGGGM"),
    (6, "MGGGMM"), (8, "MGGGMGGM"), (9, "MGGGMGGGM"), (12, "MGGGMGGGMGGM"),
    (13, "MGGGMGGGMGGGM"),
])
def test_nenya_pattern(num_layers, expected):
    config = _tiny()
    config["num_layers"] = num_layers
    if "G" not in expected:
        del config["gdn"]
    kinds = model.layer_kinds(config)
    assert "".join(k[0].upper() for k in kinds) == expected


# ----------------------------------------------------------------------------
# Weights
# ----------------------------------------------------------------------------

def test_weight_shapes_tiny():
    shapes = model.weight_shapes(TINY_JSON)
    assert shapes["model.embed_tokens.weight"] == (256, 128)
    assert "lm_head.weight" not in shapes
    assert shapes["model.norm.weight"] == (128,)
    for i in range(6):
        assert shapes[f"model.layers.{i}.input_layernorm.weight"] == (128,)
        assert shapes[f"model.layers.{i}.mlp.gate_proj.weight"] == (256, 128)
        assert shapes[f"model.layers.{i}.mlp.up_proj.weight"] == (256, 128)
        assert shapes[f"model.layers.{i}.mlp.down_proj.weight"] == (128, 256)
    a = "model.layers.0.self_attn."
    assert {k[len(a):]: v for k, v in shapes.items() if k.startswith(a)} == {
        "q_proj.weight": (2 * 48, 128),
        "kv_a_proj_with_mqa.weight": (32 + 16, 128),
        "kv_a_layernorm.weight": (32,),
        "kv_b_proj.weight": (2 * (32 + 32), 32),
        "o_proj.weight": (128, 2 * 32),
    }
    g = "model.layers.1.linear_attn."
    gdn = {k[len(g):]: v for k, v in shapes.items() if k.startswith(g)}
    assert set(gdn) == set(layers.STATE_DICT_NAMES)
    assert gdn["W_query.weight"] == (128, 128)
    assert gdn["out_proj.weight"] == (128, 128)
    assert gdn["beta.weight"] == gdn["alpha.weight"] == (2, 128)
    assert gdn["log_alpha"] == gdn["beta.bias"] == (2,)
    assert gdn["conv_q.weight"] == (128, 1, 4)
    assert gdn["norm.weight"] == (64,)
    assert not any(k.startswith("model.layers.1.self_attn") for k in shapes)
    # 1 embedding + 6 blocks x (2 norms + 3 MLP) + 3 x 5 MLA + 3 x 19 GDN
    # + final norm
    assert len(shapes) == 1 + 6 * 5 + 3 * 5 + 3 * 19 + 1


def test_weight_shapes_q_lora_and_untied():
    shapes = model.weight_shapes(_random_config(conv_size=3))
    a = "model.layers.1.self_attn."
    assert shapes[a + "q_a_proj.weight"] == (12, 24)
    assert shapes[a + "q_a_layernorm.weight"] == (12,)
    assert shapes[a + "q_b_proj.weight"] == (3 * 10, 12)
    assert a + "q_proj.weight" not in shapes
    assert shapes["lm_head.weight"] == (37, 24)
    assert shapes["model.layers.0.linear_attn.conv_v.weight"] == (24, 1, 3)
    assert shapes["model.layers.0.linear_attn.conv_v.bias"] == (24,)


def test_init_weights():
    config = _random_config(conv_size=3)
    weights = model.init_weights(config, seed=7)
    shapes = model.weight_shapes(config)
    assert list(weights) == list(shapes)
    for name, value in weights.items():
        assert value.dtype == np.float32 and value.shape == shapes[name]
        assert value.flags.c_contiguous
    again = model.init_weights(config, seed=7)
    assert all(np.array_equal(weights[n], again[n]) for n in weights)
    other = model.init_weights(config, seed=8)
    assert not np.array_equal(weights["lm_head.weight"],
                              other["lm_head.weight"])
    for name, value in weights.items():
        if name.endswith("norm.weight"):
            assert np.all(value == 1), name
        elif name.endswith("proj.weight") and "linear_attn" not in name \
                or name == "lm_head.weight":
            bound = 1 / math.sqrt(shapes[name][1])
            assert np.max(np.abs(value)) <= bound, name
            assert np.max(np.abs(value)) > 0.8 * bound, name
    emb = model.init_weights(_tiny(), 0)["model.embed_tokens.weight"]
    assert abs(emb.mean()) < 0.02 and abs(emb.std() - 1) < 0.02
    conv = weights["model.layers.2.linear_attn.conv_k.weight"]
    assert np.max(np.abs(conv)) <= 1 / math.sqrt(3)
    assert np.all(np.exp(weights["model.layers.2.linear_attn.log_alpha"])
                  <= 16)
    # The tiny config's GDN layers are the module's own initialisation.
    tiny = model.init_weights(TINY_JSON, 0)
    own = layers.init_gated_deltanet([0, 1, 2], 128, 128, 2)
    for name, value in own.items():
        np.testing.assert_array_equal(
            tiny[f"model.layers.2.linear_attn.{name}"], value)
    with pytest.raises(ValueError, match="seed"):
        model.init_weights(config, seed=-1)


def test_validate_weights_errors():
    config = _tiny()
    weights = model.init_weights(config, 0)
    model.validate_weights(config, weights)

    def error(mutated):
        with pytest.raises(ValueError) as info:
            model.validate_weights(config, mutated)
        return str(info.value)

    w = dict(weights)
    del w["model.layers.3.linear_attn.conv_q.bias"]
    assert ("model.layers.3.linear_attn.conv_q.bias: missing (expected "
            "shape [128])") in error(w)
    w = dict(weights, **{"lm_head.weight": np.zeros((256, 128),
                                                    np.float32)})
    assert "lm_head.weight: unexpected tensor (tie_embeddings is true" in \
        error(w)
    w = dict(weights, **{"model.layers.0.self_attn.q_a_proj.weight":
                         np.zeros((4, 128), np.float32)})
    assert "model.layers.0.self_attn.q_a_proj.weight: unexpected tensor" in \
        error(w)
    w = dict(weights)
    w["model.layers.0.self_attn.kv_b_proj.weight"] = np.zeros((128, 31))
    assert ("model.layers.0.self_attn.kv_b_proj.weight: expected shape "
            "[128, 32], got [128, 31]") in error(w)
    w = dict(weights)
    w["model.norm.weight"] = np.full(128, np.nan, np.float32)
    assert "model.norm.weight: holds non-finite values" in error(w)
    w = dict(weights)
    w["model.norm.weight"] = np.array(["x"] * 128)
    assert "model.norm.weight: expected a real array" in error(w)
    # Several problems: every one is named.
    w = dict(weights)
    del w["model.norm.weight"]
    w["extra"] = np.zeros(1)
    message = error(w)
    assert "model.norm.weight: missing" in message and \
        "extra: unexpected tensor" in message
    # A log_alpha of -inf (no decay) is allowed.
    w = dict(weights)
    w["model.layers.1.linear_attn.log_alpha"] = np.full(2, -np.inf,
                                                        np.float32)
    model.validate_weights(config, w)


def test_cache_bytes_formulas():
    config = model.load_config(TINY_JSON)
    gdn_layer = 2 * 64 * 64 * 4 + 3 * (4 - 1) * 128 * 4
    mla_token = (32 + 16) * 4
    previous = None
    for context in (0, 1, 100, 8192):
        sizes = model.cache_bytes(config, context)
        assert sizes["gdn"] == {"layers": 3, "per_layer": gdn_layer,
                                "bytes": 3 * gdn_layer}
        assert sizes["mla"] == {"layers": 3, "per_token": mla_token,
                                "per_layer": mla_token * context,
                                "bytes": 3 * mla_token * context}
        assert sizes["total"] == 3 * gdn_layer + 3 * mla_token * context
        if previous is not None:                 # MLA linear, GDN constant
            slope = (sizes["total"] - previous[1]) / (context - previous[0])
            assert slope == 3 * mla_token
        previous = (context, sizes["total"])
    assert model.cache_bytes(config, 10, batch_size=3)["total"] == \
        3 * model.cache_bytes(config, 10)["total"]
    only_gdn = _random_config()
    only_gdn["layer_types"] = ["gdn"] * 5
    del only_gdn["mla"]
    sizes = model.cache_bytes(only_gdn, 1000)
    assert sizes["mla"]["bytes"] == 0
    assert sizes["total"] == 5 * (3 * 8 * 8 * 4 + 3 * 2 * 24 * 4)
    with pytest.raises(ValueError, match="context_length"):
        model.cache_bytes(config, -1)


@pytest.mark.parametrize("config", [_tiny(), _random_config(conv_size=1)],
                         ids=["tiny", "random-conv1"])
def test_reference_caches_match_cache_bytes(config):
    m = model.ModelReference(config, model.init_weights(config, 0))
    tokens = 5
    m.prefill(np.zeros((2, tokens), np.int64))
    sizes = model.cache_bytes(config, tokens)
    assert m.cache_nbytes() == {"gdn": sizes["gdn"]["bytes"],
                                "mla": sizes["mla"]["bytes"]}
    m.decode(np.zeros(2, np.int64))
    sizes = model.cache_bytes(config, tokens + 1)
    assert m.cache_nbytes()["mla"] == sizes["mla"]["bytes"]


# ----------------------------------------------------------------------------
# The float64 reference
# ----------------------------------------------------------------------------

def _check_decode_matches_prefill(config, weights, ids, splits):
    full = model.ModelReference(config, weights).prefill(ids)
    assert full.shape == ids.shape + (model.load_config(config)
                                      ["vocab_size"],)
    assert np.all(np.isfinite(full))
    m = model.ModelReference(config, weights)
    for split in splits:
        head = m.prefill(ids[:, :split])
        _assert_close(f"prefill[:{split}]", head, full[:, :split])
        for t in range(split, ids.shape[1]):
            _assert_close(f"decode t={t} after prefill {split}",
                          m.decode(ids[:, t]), full[:, t])
        assert m.position == ids.shape[1]
    m.reset()                                    # decode from empty caches
    for t in range(ids.shape[1]):
        _assert_close(f"decode t={t} from empty", m.decode(ids[:, t]),
                      full[:, t])


def test_decode_after_prefill_tiny():
    weights = _perturbed(_tiny(), 0)
    ids = np.array([model.byte_tokenize("Nenya mixes!"),
                    model.byte_tokenize("GDN and MLA.")])
    assert ids.shape == (2, 12)
    _check_decode_matches_prefill(_tiny(), weights, ids, splits=(1, 7))


@pytest.mark.parametrize("conv_size", [1, 3, 4])
def test_decode_after_prefill_random(conv_size):
    config = _random_config(conv_size=conv_size)
    weights = _perturbed(config, conv_size)
    ids = np.random.default_rng(conv_size).integers(0, 37, (3, 9))
    _check_decode_matches_prefill(config, weights, ids, splits=(2, 5))


@pytest.mark.parametrize("conv_size", [1, 2, 3, 4, 5])
def test_gdn_mixer_matches_loops(conv_size):
    """The model's GDN mixer (gdn.reference.gated_deltanet) against the
    loop transcription, at conv sizes other than the module's 4 too, with
    T below, at and above the conv's reach."""
    params = layers.init_gated_deltanet(3, 24, 24, 3)
    rng = np.random.default_rng(conv_size)
    bound = 1.0 / math.sqrt(conv_size)
    for conv in ("conv_q", "conv_k", "conv_v"):
        params[conv + ".weight"] = rng.uniform(-bound, bound,
                                               (24, 1, conv_size))
    x = np.random.default_rng(1).standard_normal((2, 6, 24))
    for tokens in (1, conv_size, 6):
        y, state, conv_state = reference.gated_deltanet(
            x[:, :tokens], params, 3, model.GDN_NORM_EPS)
        y_ref, state_ref = gated_deltanet_loops(x[:, :tokens], params, 3,
                                                model.GDN_NORM_EPS)
        _assert_close(f"y T={tokens}", y, y_ref, 1e-12)
        _assert_close(f"state T={tokens}", state, state_ref, 1e-12)
        for c in ("conv_q", "conv_k", "conv_v"):
            assert conv_state[c].shape == (2, conv_size - 1, 24)


@pytest.mark.parametrize("layer_types", [["mla", "mla"], None])
def test_causality(layer_types):
    config = _random_config(conv_size=3, tie=True)
    if layer_types is not None:
        config["layer_types"] = layer_types
        config["num_layers"] = len(layer_types)
        del config["gdn"]
    weights = _perturbed(config, 5)
    ids = np.random.default_rng(5).integers(0, 37, (2, 8))
    m = model.ModelReference(config, weights)
    base = m.prefill(ids)
    for t in (3, 7):
        changed = ids.copy()
        changed[:, t] = (changed[:, t] + 1) % 37
        logits = m.prefill(changed)
        np.testing.assert_allclose(logits[:, :t], base[:, :t], rtol=0,
                                   atol=1e-12)
        assert np.max(np.abs(logits[:, t] - base[:, t])) > 1e-3


def test_rope_rotate_half_against_complex():
    rng = np.random.default_rng(0)
    d, theta = 16, 10000.0
    x = rng.standard_normal((3, 5, d))
    positions = np.array([0, 1, 7, 100, 8191])
    got = reference.apply_rope(x, positions[None, :], theta)
    # The pair (x_i, x_{i + d/2}) is the complex number x_i + i x_{i + d/2},
    # rotated by position * theta^(-2i/d).
    expected = np.empty_like(x)
    for b in range(3):
        for t, pos in enumerate(positions):
            for i in range(d // 2):
                z = complex(x[b, t, i], x[b, t, i + d // 2])
                z *= complex(math.cos(pos * theta ** (-2 * i / d)),
                             math.sin(pos * theta ** (-2 * i / d)))
                expected[b, t, i], expected[b, t, i + d // 2] = z.real, z.imag
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(reference.apply_rope(x, 0, theta), x)
    # Relative position: <rope(q, m), rope(k, n)> depends on m - n only.
    q, k = rng.standard_normal(d), rng.standard_normal(d)
    dots = [reference.apply_rope(q, m, theta)
            @ reference.apply_rope(k, m - 3, theta) for m in (3, 10, 500)]
    np.testing.assert_allclose(dots, dots[0], rtol=1e-12)


def _mla_loops(x, p, mla, eps, start=0):
    """DeepSeek-V2 MLA over x [T, d_model] (one sequence) with explicit
    loops over heads, queries and keys; RoPE as complex rotations."""
    n, nope, rope = mla["num_heads"], mla["qk_nope_head_dim"], \
        mla["qk_rope_head_dim"]
    rank, vd = mla["kv_lora_rank"], mla["v_head_dim"]

    def rms(z, w):
        return z / math.sqrt(float(np.mean(z * z)) + eps) * w

    def rotate(z, pos):
        out = np.empty_like(z)
        half = len(z) // 2
        for i in range(half):
            angle = pos * mla["rope_theta"] ** (-2 * i / len(z))
            c = complex(z[i], z[i + half]) * complex(math.cos(angle),
                                                     math.sin(angle))
            out[i], out[i + half] = c.real, c.imag
        return out

    tokens = x.shape[0]
    qs, latents, k_ropes = [], [], []
    for t in range(tokens):
        if mla["q_lora_rank"]:
            q = p["q_b_proj.weight"] @ rms(p["q_a_proj.weight"] @ x[t],
                                           p["q_a_layernorm.weight"])
        else:
            q = p["q_proj.weight"] @ x[t]
        qs.append(q.reshape(n, nope + rope))
        kv_a = p["kv_a_proj_with_mqa.weight"] @ x[t]
        latents.append(rms(kv_a[:rank], p["kv_a_layernorm.weight"]))
        k_ropes.append(rotate(kv_a[rank:], start + t))
    y = np.zeros((tokens, x.shape[1]))
    for t in range(tokens):
        heads = []
        for h in range(n):
            q_nope = qs[t][h, :nope]
            q_rope = rotate(qs[t][h, nope:], start + t)
            scores, values = [], []
            for s in range(t + 1):
                kv = (p["kv_b_proj.weight"] @ latents[s]).reshape(
                    n, nope + vd)[h]
                scores.append((q_nope @ kv[:nope] + q_rope @ k_ropes[s])
                              / math.sqrt(nope + rope))
                values.append(kv[nope:])
            e = np.exp(np.array(scores) - max(scores))
            heads.append((e / e.sum()) @ np.array(values))
        y[t] = p["o_proj.weight"] @ np.concatenate(heads)
    return y


@pytest.mark.parametrize("q_lora_rank", [0, 12])
def test_mla_against_loops(q_lora_rank):
    config = _random_config(q_lora_rank=q_lora_rank, tie=True)
    config.update(num_layers=1, layer_types=["mla"])
    del config["gdn"]
    weights = _perturbed(config, 11)
    ids = np.random.default_rng(11).integers(0, 37, (2, 6))
    logits = model.ModelReference(config, weights).prefill(ids)
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    cfg = model.load_config(config)
    eps = cfg["norm_eps"]
    prefix = "model.layers.0.self_attn."
    p = {k[len(prefix):]: v for k, v in w.items() if k.startswith(prefix)}

    def rms(z, name):
        return z / np.sqrt(np.mean(z * z, -1, keepdims=True) + eps) * w[name]

    for b in range(2):
        x = w["model.embed_tokens.weight"][ids[b]]
        x = x + _mla_loops(rms(x, "model.layers.0.input_layernorm.weight"),
                           p, cfg["mla"], eps)
        h = rms(x, "model.layers.0.post_attention_layernorm.weight")
        gate = h @ w["model.layers.0.mlp.gate_proj.weight"].T
        x = x + (gate / (1 + np.exp(-gate))
                 * (h @ w["model.layers.0.mlp.up_proj.weight"].T)) \
            @ w["model.layers.0.mlp.down_proj.weight"].T
        expected = rms(x, "model.norm.weight") \
            @ w["model.embed_tokens.weight"].T
        _assert_close(f"batch {b}", logits[b], expected, 1e-12)


def _one_token_model(config, weights, ids):
    """The whole model on one token at position 0 by hand: RoPE is the
    identity and attention sees only itself (out = v); the GDN conv sees
    only its last tap and the state starts at zero, so o = beta (k.q) v."""
    cfg = model.load_config(config)
    w = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    eps = cfg["norm_eps"]

    def rms(z, weight, e=eps):
        return z / np.sqrt(np.mean(z * z) + e) * weight

    def silu(z):
        return z / (1 + np.exp(-z))

    out = []
    for token in ids:
        x = w["model.embed_tokens.weight"][token].copy()
        for i, kind in enumerate(model.layer_kinds(cfg)):
            blk = f"model.layers.{i}."
            h = rms(x, w[blk + "input_layernorm.weight"])
            if kind == "mla":
                m = cfg["mla"]
                a = blk + "self_attn."
                latent = rms((w[a + "kv_a_proj_with_mqa.weight"] @ h)
                             [:m["kv_lora_rank"]],
                             w[a + "kv_a_layernorm.weight"])
                kv = (w[a + "kv_b_proj.weight"] @ latent).reshape(
                    m["num_heads"], -1)
                v = kv[:, m["qk_nope_head_dim"]:].reshape(-1)
                x = x + w[a + "o_proj.weight"] @ v
            else:
                g = cfg["gdn"]
                a = blk + "linear_attn."
                heads, hd = g["num_heads"], g["head_dim"]
                conv = {}
                for proj, c in (("W_query", "conv_q"), ("W_key", "conv_k"),
                                ("W_value", "conv_v")):
                    u = w[a + proj + ".weight"] @ h
                    conv[c] = silu(w[a + c + ".bias"]
                                   + w[a + c + ".weight"][:, 0, -1] * u)
                beta = 1 / (1 + np.exp(-(w[a + "beta.weight"] @ h
                                         + w[a + "beta.bias"])))
                o = np.zeros(heads * hd)
                for j in range(heads):
                    cols = slice(j * hd, (j + 1) * hd)
                    q = conv["conv_q"][cols] / np.linalg.norm(
                        conv["conv_q"][cols])
                    k = conv["conv_k"][cols] / np.linalg.norm(
                        conv["conv_k"][cols])
                    v = rms(conv["conv_v"][cols], w[a + "norm.weight"], 1e-6)
                    o[cols] = rms(beta[j] * (k @ q) * v, w[a + "norm.weight"],
                                  1e-6)
                gate = w[a + "gate.weight"] @ h + w[a + "gate.bias"]
                x = x + w[a + "out_proj.weight"] @ (o * silu(gate)) \
                    + w[a + "out_proj.bias"]
            h = rms(x, w[blk + "post_attention_layernorm.weight"])
            x = x + w[blk + "mlp.down_proj.weight"] @ (
                silu(w[blk + "mlp.gate_proj.weight"] @ h)
                * (w[blk + "mlp.up_proj.weight"] @ h))
        head = w["model.embed_tokens.weight" if cfg["tie_embeddings"]
                 else "lm_head.weight"]
        out.append(head @ rms(x, w["model.norm.weight"]))
    return np.array(out)


@pytest.mark.parametrize("which", ["tiny", "random"])
def test_whole_model_one_token(which):
    config = _tiny() if which == "tiny" else _random_config(conv_size=3)
    weights = _perturbed(config, 2)
    vocab = model.load_config(config)["vocab_size"]
    ids = np.random.default_rng(2).integers(0, vocab, 3)
    expected = _one_token_model(config, weights, ids)
    m = model.ModelReference(config, weights)
    _assert_close("prefill T=1", m.prefill(ids[:, None])[:, 0], expected,
                  1e-12)
    m.reset()
    _assert_close("decode from empty", m.decode(ids), expected, 1e-12)


def test_reference_argument_errors():
    config = _random_config()
    config["max_context"] = 6
    m = model.ModelReference(config, model.init_weights(config, 0))
    with pytest.raises(ValueError, match="outside the vocabulary 0..36"):
        m.prefill([[1, 37]])
    with pytest.raises(ValueError, match=r"\[B, T\]"):
        m.prefill([1, 2])
    with pytest.raises(ValueError, match="integers"):
        m.prefill([[1.5]])
    m.prefill(np.zeros((2, 5), np.int64))
    with pytest.raises(ValueError, match="expected 2 tokens"):
        m.decode([1, 2, 3])
    m.decode([1, 2])
    with pytest.raises(ValueError, match="max_context: 7 tokens exceed"):
        m.decode([1, 2])
    with pytest.raises(ValueError, match="lm_head.weight: missing"):
        model.ModelReference(config, model.init_weights(
            dict(config, tie_embeddings=True), 0))


def test_bf16_weights_through_safetensors(tmp_path):
    weights = model.init_weights(TINY_JSON, 0)
    path = tmp_path / "model.safetensors"
    safetensors.save(path, weights, dtype="bf16")
    loaded = safetensors.load(path)
    model.validate_weights(TINY_JSON, loaded)
    m = model.ModelReference(TINY_JSON, loaded)
    logits = m.prefill([model.byte_tokenize("hi")])
    assert logits.shape == (1, 2, 256) and np.all(np.isfinite(logits))


# ----------------------------------------------------------------------------
# Tokenizer, the example and its weights
# ----------------------------------------------------------------------------

def test_byte_tokenizer():
    text = "Nenya: ä €\n🙂"
    ids = model.byte_tokenize(text)
    assert ids == list(text.encode("utf-8"))
    assert all(0 <= i < 256 for i in ids)
    assert model.byte_detokenize(ids) == text
    assert model.byte_detokenize(np.array(ids)) == text
    assert model.byte_tokenize(b"\x00\xff") == [0, 255]
    assert model.byte_detokenize([0xE2, 0x82]) == "\ufffd"
    with pytest.raises(UnicodeDecodeError):
        model.byte_detokenize([0xE2, 0x82], errors="strict")
    with pytest.raises(ValueError, match="token 256 at position 1"):
        model.byte_detokenize([65, 256])


def _make_weights_module():
    spec = importlib.util.spec_from_file_location(
        "nenya_tiny_make_weights", os.path.join(TINY, "make_weights.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_make_weights_script(tmp_path, capsys):
    make = _make_weights_module()
    first, second = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    assert make.main(["-o", str(first)]) == 0
    assert make.main(["-o", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()       # deterministic
    loaded, metadata = safetensors.load_with_metadata(first)
    assert metadata["seed"] == "0"
    expected = model.init_weights(TINY_JSON, 0)
    assert sorted(loaded) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(loaded[name], value)
    bf16 = tmp_path / "c.safetensors"
    assert make.main(["-o", str(bf16), "--dtype", "bf16"]) == 0
    assert os.path.getsize(bf16) < 0.6 * os.path.getsize(first)
    # Beside a copied config by default; load_model reads both.
    config = tmp_path / "model.json"
    config.write_text(open(TINY_JSON).read())
    assert make.main(["--config", str(config)]) == 0
    cfg, weights = model.load_model(config)
    assert cfg == model.load_config(TINY_JSON) and len(weights) == len(
        expected)
    bad = copy.deepcopy(_tiny())
    bad["d_model"] = 0
    config.write_text(json.dumps(bad))
    assert make.main(["--config", str(config)]) == 1
    assert "d_model: expected an integer > 0, got 0" in capsys.readouterr().err
