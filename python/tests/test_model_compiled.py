"""The compiled prefill of a GDN-only model (gdn-compile model.json) against
the float64 whole-model reference."""

import ctypes
import json

import numpy as np
import pytest

from gdn import compiled, compiled_model, model, reference, safetensors
from model_configs import hybrid_config


def _config(num_layers, d_model, heads, conv_size, tie):
    return {"vocab_size": 300, "d_model": d_model, "num_layers": num_layers,
            "layer_types": ["gdn"] * num_layers,
            "gdn": {"num_heads": heads, "head_dim": d_model // heads,
                    "conv_size": conv_size},
            "mlp_hidden_size": 2 * d_model, "norm_eps": 1e-5,
            "tie_embeddings": tie, "max_context": 512, "tokenizer": "bytes"}


def _compiled_prefill(tmp_path, config, weight_seed, ids):
    """Logits of gdn_forward_prefill for `config` with weights of
    `weight_seed`, and those weights."""
    config_path = tmp_path / "model.json"
    config_path.write_text(json.dumps(config))
    weights = model.init_weights(model.load_config(config), seed=weight_seed)
    safetensors.save(str(tmp_path / "model.safetensors"), weights)
    library_path = tmp_path / "model.so"
    compiled_model.compile_model(config_path, library_path)

    function = ctypes.CDLL(str(library_path))._mlir_ciface_gdn_forward_prefill
    function.restype = None
    logits = np.empty(ids.shape + (config["vocab_size"],), np.float32)
    arrays = [ids] + [np.ascontiguousarray(weights[n], dtype=np.float32)
                      for n in sorted(weights)] + [logits]
    descriptors = [compiled.descriptor(a) for a in arrays]
    function.argtypes = [ctypes.c_void_p] * len(descriptors)
    function(*[ctypes.addressof(d) for d in descriptors])
    return logits, weights


@pytest.mark.parametrize("num_layers,d_model,heads,tie,batch,tokens",
                         [(2, 64, 2, True, 2, 37), (1, 128, 1, False, 1, 70),
                          (3, 64, 4, True, 1, 1)])
def test_compiled_prefill_matches_reference(tmp_path, num_layers, d_model,
                                            heads, tie, batch, tokens):
    config = _config(num_layers, d_model, heads, 4, tie)
    rng = np.random.default_rng(tokens)
    ids = rng.integers(0, config["vocab_size"], size=(batch, tokens),
                       dtype=np.int64)
    logits, weights = _compiled_prefill(tmp_path, config, 3, ids)

    expected = model.ModelReference(model.load_config(config),
                                    weights).prefill(ids)
    ratio, max_rel = reference.relative_error(logits, expected)
    assert max(ratio, max_rel) <= 1e-4, (ratio, max_rel)


@pytest.mark.parametrize("q_lora_rank,batch,tokens", [(0, 2, 19), (12, 1, 33)])
def test_compiled_hybrid_prefill_matches_reference(tmp_path, q_lora_rank,
                                                   batch, tokens):
    config = hybrid_config(q_lora_rank)
    ids = np.random.default_rng(tokens).integers(
        0, config["vocab_size"], size=(batch, tokens), dtype=np.int64)
    logits, weights = _compiled_prefill(tmp_path, config, 5, ids)
    expected = model.ModelReference(model.load_config(config),
                                    weights).prefill(ids)
    ratio, max_rel = reference.relative_error(logits, expected)
    assert max(ratio, max_rel) <= 1e-4, (ratio, max_rel)


def _model_with_weights(tmp_path, config, change=None):
    config_path = tmp_path / "model.json"
    config_path.write_text(json.dumps(config))
    weights = model.init_weights(model.load_config(config), seed=2)
    if change:
        change(weights)
    safetensors.save(str(tmp_path / "model.safetensors"), weights)
    return config_path


def _key_weight(weights):
    return next(n for n in sorted(weights) if n.endswith("W_key.weight"))


def test_non_finite_weights_are_refused_at_load(tmp_path):
    def poison(weights):
        weights[_key_weight(weights)].flat[5] = np.inf
    path = _model_with_weights(tmp_path, _config(2, 64, 2, 4, True), poison)
    with pytest.raises(ValueError, match=r"W_key.weight: element 5 "
                                         r"\(\[0, 5\]\) is inf"):
        compiled_model.CompiledModel(path)


def test_check_numerics_names_the_first_layer(tmp_path):
    """Finite weights whose products overflow: without the check the model
    runs on; with it, FloatingPointError names the layer and position."""
    def overflow(weights):
        key = _key_weight(weights)
        weights[key][...] = 3e38
        prefix = key[:key.index("layers.") + len("layers.0.")]
        weights[prefix + "input_layernorm.weight"][...] = 3e38
    path = _model_with_weights(tmp_path, _config(2, 64, 2, 4, True), overflow)
    ids = np.array([[1, 2, 3]], dtype=np.int64)
    compiled_model.CompiledModel(path).prefill(ids)
    checked = compiled_model.CompiledModel(path, check_numerics=True)
    with pytest.raises(FloatingPointError, match=r"numerics: .* in layer 0 "
                                                 r"\(gdn\)"):
        checked.prefill(ids)
    assert checked.position == 0
