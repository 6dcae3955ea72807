"""The compiled model step (gdn_forward_step: prefill from empty caches, then
decode one token at a time) against the float64 whole-model reference."""

import json

import numpy as np
import pytest

import gdn
from gdn import compiled_model, model, reference, safetensors
from model_configs import hybrid_config

TOLERANCE = 1e-4


def _write(tmp_path, config, seed):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(config))
    weights = model.init_weights(model.load_config(config), seed=seed)
    safetensors.save(str(tmp_path / "model.safetensors"), weights)
    return path, weights


def _close(actual, expected, what):
    ratio, max_rel = reference.relative_error(actual, expected)
    assert max(ratio, max_rel) <= TOLERANCE, (what, ratio, max_rel)


@pytest.mark.parametrize("q_lora_rank,conv_size,batch,prompt", [
    (0, 4, 2, 7), (12, 4, 1, 1), (0, 2, 3, 5)])
def test_prefill_then_16_decode_steps(tmp_path, q_lora_rank, conv_size,
                                      batch, prompt):
    config_path, weights = _write(
        tmp_path, hybrid_config(q_lora_rank, conv_size), seed=prompt)
    compiled = compiled_model.CompiledModel(config_path)
    expected = model.ModelReference(model.load_config(config_path), weights)
    rng = np.random.default_rng(prompt)
    ids = rng.integers(0, 64, size=(batch, prompt))
    expected_logits = expected.prefill(ids)
    _close(compiled.prefill(ids), expected_logits, "prefill")
    # Greedy on the reference, so both follow the same tokens.
    next_ids = np.argmax(expected_logits[:, -1], axis=-1)
    for step in range(16):
        expected_logits = expected.decode(next_ids)
        _close(compiled.decode(next_ids), expected_logits,
               f"decode step {step}")
        next_ids = np.argmax(expected_logits, axis=-1)
    assert compiled.cache_nbytes() == expected.cache_nbytes()
    assert compiled.position == prompt + 16


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_decode_projections_in_row_blocks(tmp_path, dtype):
    """Decode projections as dot products along weight rows, with the
    shapes that take each path: a vocabulary of 100 (a block of 64 rows,
    36 rows after it), an MLP of 56 (blocks of 8; its down projection has
    56 inputs, not a multiple of 16), bf16 weights widened in registers."""
    config = hybrid_config(0, 4, num_layers=2)
    config["vocab_size"] = 100
    config["mlp_hidden_size"] = 56
    path = tmp_path / "model.json"
    path.write_text(json.dumps(config))
    weights_path = str(tmp_path / "model.safetensors")
    safetensors.save(weights_path,
                     model.init_weights(model.load_config(config), seed=4),
                     dtype)
    # The reference sees the weights as stored (rounded to bf16, say).
    weights = safetensors.load(weights_path)
    compiled = compiled_model.CompiledModel(path)
    expected = model.ModelReference(model.load_config(config), weights)
    ids = np.random.default_rng(4).integers(0, 100, size=(2, 3))
    next_ids = np.argmax(expected.prefill(ids)[:, -1], axis=-1)
    compiled.prefill(ids)
    for step in range(4):
        expected_logits = expected.decode(next_ids)
        _close(compiled.decode(next_ids), expected_logits,
               f"decode step {step}")
        next_ids = np.argmax(expected_logits, axis=-1)


def test_prefill_in_chunks_equals_one_prefill(tmp_path):
    """The step continues a prompt from its caches: 13 tokens as 5 + 8."""
    config_path, weights = _write(tmp_path, hybrid_config(0, 4), seed=9)
    compiled = compiled_model.CompiledModel(config_path)
    ids = np.random.default_rng(9).integers(0, 64, size=(2, 13))
    whole = compiled.prefill(ids)
    compiled.prefill(ids[:, :5])
    rest = compiled.extend(ids[:, 5:])
    _close(rest, whole[:, 5:], "second chunk")


def test_last_only_logits_are_the_last_rows(tmp_path):
    """last_only=True returns each sequence's last position alone
    (gdn_model_last_logits), for a batch of one and of three."""
    config_path, _ = _write(tmp_path, hybrid_config(0, 4), seed=4)
    compiled = compiled_model.CompiledModel(config_path)
    for batch, tokens in [(1, 9), (3, 6), (3, 1)]:
        ids = np.random.default_rng(batch + tokens).integers(
            0, 64, size=(batch, tokens))
        whole = compiled.prefill(ids)
        last = compiled.prefill(ids, last_only=True)
        assert last.shape == (batch, compiled.vocab_size)
        np.testing.assert_array_equal(last, whole[:, -1])
        more = ids[:, :2]
        whole = compiled.extend(more)
        compiled.prefill(ids)
        np.testing.assert_array_equal(compiled.extend(more, last_only=True),
                                      whole[:, -1])


def test_decode_past_the_room_of_the_caches(tmp_path):
    """The runtime appends to the MLA caches in place and regrows them
    when they are full (room for 64 tokens at first): 3 sequences of 60
    tokens decoded for 16 steps cross that, with the earlier rows of every
    sequence copied along."""
    config_path, weights = _write(tmp_path, hybrid_config(0, 4), seed=11)
    compiled = compiled_model.CompiledModel(config_path)
    expected = model.ModelReference(model.load_config(config_path), weights)
    ids = np.random.default_rng(11).integers(0, 64, size=(3, 60))
    _close(compiled.prefill(ids), expected.prefill(ids), "prefill")
    next_ids = np.random.default_rng(12).integers(0, 64, size=(16, 3))
    for step, step_ids in enumerate(next_ids):
        _close(compiled.decode(step_ids), expected.decode(step_ids),
               f"decode step {step}")


def test_extend_past_the_room_of_the_caches(tmp_path):
    """5 tokens, then 70 more in one call (the caches regrown with the
    first 5 rows of both sequences kept), then 53 to max_context."""
    config_path, weights = _write(tmp_path, hybrid_config(12, 4), seed=13)
    compiled = compiled_model.CompiledModel(config_path)
    ids = np.random.default_rng(13).integers(0, 64, size=(2, 128))
    whole = compiled.prefill(ids)
    compiled.prefill(ids[:, :5])
    _close(compiled.extend(ids[:, 5:75]), whole[:, 5:75], "second chunk")
    _close(compiled.extend(ids[:, 75:]), whole[:, 75:], "third chunk")
    with pytest.raises(ValueError, match="max_context"):
        compiled.decode([1, 2])


@pytest.mark.parametrize("block", [1, 7, 64, 0])
def test_blocked_attention_matches_reference(tmp_path, block):
    """Prefill attention in blocks of `block` queries and keys with an
    online softmax (0: the whole score matrix): 2 sequences of 45 tokens
    (partial blocks at the end), then 30 more in one call, against the
    float64 reference of the whole 75."""
    config_path, weights = _write(tmp_path, hybrid_config(12, 4), seed=17)
    compiled = compiled_model.CompiledModel(
        config_path, compile_options={"attention_block": block})
    expected = model.ModelReference(model.load_config(config_path), weights)
    ids = np.random.default_rng(17).integers(0, 64, size=(2, 75))
    whole = expected.prefill(ids)
    _close(compiled.prefill(ids[:, :45]), whole[:, :45], "prefill")
    _close(compiled.extend(ids[:, 45:]), whole[:, 45:], "extend")


@pytest.mark.parametrize("split", [1, 4, 32])
def test_absorbed_decode_in_key_groups_matches_reference(tmp_path, split):
    """The absorbed MLA attention with its attended latents summed over
    groups of `split` keys first (mla-key-split, the GPU pipeline's
    choice): decode steps from 1 to 40 cached tokens, so that the keys
    fill no group, whole groups, and groups with keys left over, against
    the float64 reference."""
    config_path, weights = _write(tmp_path, hybrid_config(12, 4), seed=19)
    compiled = compiled_model.CompiledModel(
        config_path, compile_options={"mla_key_split": split})
    expected = model.ModelReference(model.load_config(config_path), weights)
    rng = np.random.default_rng(19)
    ids = rng.integers(0, 64, size=(2, 1))
    _close(compiled.prefill(ids), expected.prefill(ids), "prefill")
    for step in range(39):
        token = rng.integers(0, 64, size=2)
        _close(compiled.decode(token), expected.decode(token),
               f"decode step {step}")
    # A CPU step is one call: nothing is recorded or replayed.
    assert compiled.decode_graph_counts == (0, 0, 0)


def test_bad_token_ids(tmp_path):
    config_path, _ = _write(tmp_path, hybrid_config(0, 4), seed=1)
    compiled = compiled_model.CompiledModel(config_path)
    with pytest.raises(ValueError, match="token id 64 .*outside the vocabulary"):
        compiled.prefill([[1, 64]])
    compiled.prefill([[1, 2]])
    with pytest.raises(ValueError, match="expected 1 tokens"):
        compiled.decode([1, 2])
    with pytest.raises(ValueError, match="max_context"):
        compiled.prefill(np.zeros((1, 129), np.int64))


def test_model_is_a_deprecated_alias():
    """gdn.Model, which read as the module gdn.model, still names the
    compiled model for now, with a warning."""
    with pytest.warns(DeprecationWarning, match="gdn.CompiledModel"):
        assert gdn.Model is gdn.CompiledModel
    with pytest.warns(DeprecationWarning, match="CompiledModel"):
        assert compiled_model.Model is compiled_model.CompiledModel
    assert gdn.model.ModelReference is not None     # the module is intact
