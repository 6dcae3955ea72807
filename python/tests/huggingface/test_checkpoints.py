"""Hugging Face checkpoints (test/fixtures/huggingface, made by
scripts/make_hf_fixtures.py with transformers' save_pretrained) compiled
for the CPU, against transformers' own logits: after the prefill and after
each greedy decode step, for qwen3_5_text, the qwen3_5 wrapper (sharded,
with vision and mtp tensors to ignore) and dense qwen3_next."""

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import gdn
from gdn import cache, reference, safetensors

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "test",
                        "fixtures", "huggingface")
MODEL_TYPES = ("qwen3_5_text", "qwen3_5", "qwen3_next")
TOLERANCE = 1e-4


@pytest.fixture(scope="module", params=MODEL_TYPES)
def checkpoint(request):
    folder = os.path.join(FIXTURES, request.param)
    return (gdn.CompiledModel(folder),
            np.load(os.path.join(folder, "reference.npz")), folder)


def _close(actual, expected, what):
    ratio, max_rel = reference.relative_error(actual, expected)
    assert max(ratio, max_rel) <= TOLERANCE, (what, ratio, max_rel)


@pytest.mark.parametrize("case", ["a", "b"])
def test_prefill_and_greedy_decode_match_transformers(checkpoint, case):
    compiled, expected, _ = checkpoint
    logits = compiled.prefill(expected[f"prompt_{case}"])
    _close(logits, expected[f"prefill_logits_{case}"], "prefill")
    for step, (ids, want) in enumerate(zip(expected[f"decode_ids_{case}"],
                                           expected[f"decode_logits_{case}"])):
        # The reference's greedy choice is ours too (the fixtures' logits
        # have no near-ties).
        np.testing.assert_array_equal(logits[:, -1].argmax(-1), ids,
                                      err_msg=f"step {step}")
        logits = compiled.decode(ids)[:, None]
        _close(logits[:, 0], want, f"decode step {step}")


def test_prompt_in_two_chunks_equals_one_prefill(checkpoint):
    compiled, expected, _ = checkpoint
    prompt = expected["prompt_a"]
    compiled.prefill(prompt[:, :41])
    rest = compiled.extend(prompt[:, 41:])
    _close(rest, expected["prefill_logits_a"][:, 41:], "extend")


def test_cache_bytes_follow_the_config(checkpoint):
    compiled, expected, folder = checkpoint
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    text = config.get("text_config", config)
    compiled.prefill(expected["prompt_b"])
    kinds = text["layer_types"]
    channels = (2 * text["linear_num_key_heads"] * text["linear_key_head_dim"]
                + text["linear_num_value_heads"]
                * text["linear_value_head_dim"])
    gdn_bytes = kinds.count("linear_attention") * 4 * (
        (text["linear_conv_kernel_dim"] - 1) * channels
        + text["linear_num_value_heads"] * text["linear_key_head_dim"]
        * text["linear_value_head_dim"])
    attention_bytes = kinds.count("full_attention") * 4 * 2 * (
        compiled.position * text["num_key_value_heads"] * text["head_dim"])
    assert compiled.cache_nbytes() == {"gdn": gdn_bytes,
                                       "mla": attention_bytes}


def test_bf16_checkpoint_reads_its_matrices_as_bf16(tmp_path):
    """A checkpoint saved in bf16 compiles to a step that reads its matrices
    as bf16 (no f32 copy): the same logits as the f32 step on the widened
    weights, and within bf16 rounding of transformers' f32 logits."""
    folder = os.path.join(FIXTURES, "qwen3_5_text")
    shutil.copy(os.path.join(folder, "config.json"), tmp_path)
    safetensors.save(str(tmp_path / "model.safetensors"),
                     safetensors.load(os.path.join(folder,
                                                   "model.safetensors")),
                     "bf16")
    summary = subprocess.run(
        [cache.find_compiler(), str(tmp_path), "--emit=summary", "-o", "-"],
        capture_output=True, text=True, check=True).stdout
    assert "40 matrices stay bf16 in the step" in summary, summary
    bf16_step = gdn.CompiledModel(tmp_path)
    f32_step = gdn.CompiledModel(
        tmp_path, library_path=gdn.CompiledModel(folder)._library_path)
    expected = np.load(os.path.join(folder, "reference.npz"))
    ids = expected["prompt_a"]
    bf16_logits, f32_logits = bf16_step.prefill(ids), f32_step.prefill(ids)
    _close(bf16_logits, f32_logits, "bf16 step against f32 step")
    ratio, _ = reference.relative_error(bf16_logits,
                                        expected["prefill_logits_a"])
    assert ratio <= 5e-2, ratio
    for _ in range(3):
        token = bf16_logits[:, -1].argmax(-1) if bf16_logits.ndim == 3 \
            else bf16_logits.argmax(-1)
        bf16_logits, f32_logits = (bf16_step.decode(token),
                                   f32_step.decode(token))
        _close(bf16_logits, f32_logits, "decode")
