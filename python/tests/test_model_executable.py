"""The executable and C API of `gdn-compile model.json -o DIR` against the
float64 whole-model reference: greedy generation from token ids follows
the reference's greedy tokens, bf16 weights are widened exactly, sampling
is reproducible from its seed, and bad weights are refused by name."""

import json
import subprocess

import numpy as np
import pytest

from gdn import cache, compiled_model, model, safetensors
from model_configs import hybrid_config

CONFIG = hybrid_config(q_lora_rank=12, tie_embeddings=True)

# Greedy tokens agree only where the reference's best token leads the
# second best clearly; the compiled logits are within 1e-4 relative.
MIN_MARGIN = 1e-2


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """The compiled model directory and its f32 weights."""
    root = tmp_path_factory.mktemp("model")
    (root / "model.json").write_text(json.dumps(CONFIG))
    weights = model.init_weights(model.load_config(CONFIG), seed=11)
    safetensors.save(str(root / "model.safetensors"), weights)
    out = root / "out"
    subprocess.run([cache.find_compiler(), str(root / "model.json"),
                    "-o", str(out)], check=True)
    return root, out, weights


def _run(out, *args):
    return subprocess.run([str(out / "gdn-model"), "--quiet", *args],
                          capture_output=True, text=True)


def _generated(stdout):
    """The generated tokens of each sequence, from the executable's output."""
    rows = [line.split(":", 1)[1].split()
            for line in stdout.splitlines()
            if line.startswith("generated tokens:")]
    return [[int(t) for t in row if not t.startswith("[")] for row in rows]


def _reference_greedy(weights, prompt, count):
    reference = model.ModelReference(model.load_config(CONFIG), weights)
    logits = reference.prefill(np.array([prompt]))[0, -1]
    tokens = []
    for _ in range(count):
        top2 = np.sort(logits)[-2:]
        assert top2[1] - top2[0] > MIN_MARGIN * np.abs(logits).max(), (
            "near tie in the reference: choose another seed or prompt")
        tokens.append(int(np.argmax(logits)))
        logits = reference.decode(np.array([tokens[-1]]))[0]
    return tokens


@pytest.mark.parametrize("prompt", [[5], [1, 2, 3, 4, 5, 6, 7, 8, 9]])
def test_greedy_generation_follows_reference(model_dir, prompt):
    _, out, weights = model_dir
    result = _run(out, "--ids", ",".join(map(str, prompt)), "-n", "12")
    assert result.returncode == 0, result.stderr
    assert _generated(result.stdout) == [
        _reference_greedy(weights, prompt, 12)]
    # Cache: 3 GDN layers' states, 2 MLA layers x (16 + 8) floats a token.
    tokens = len(prompt) + 11
    gdn = 3 * (2 * 16 * 16 + 3 * 3 * 32) * 4
    mla = 2 * (16 + 8) * 4 * tokens
    assert (f"cache:   {gdn + mla} bytes per sequence (GDN {gdn}, "
            f"MLA {mla}) at {tokens} tokens") in result.stdout
    # The cost report (from the description alone) says the same.
    root, _, _ = model_dir
    report = subprocess.run(
        [cache.find_compiler(), str(root / "model.json"), "--emit=report",
         "--format=json", f"--report-contexts={tokens}"],
        capture_output=True, text=True, check=True)
    assert json.loads(report.stdout)["contexts"][0]["cache_bytes"] == {
        "gdn": gdn, "mla": mla}


def test_bf16_weights_are_widened_exactly(model_dir, tmp_path):
    _, out, weights = model_dir
    path = tmp_path / "bf16.safetensors"
    safetensors.save(str(path), weights, dtype="bf16")
    widened = safetensors.load(str(path))
    prompt = [3, 1, 4, 1, 5]
    result = _run(out, "--ids", ",".join(map(str, prompt)), "-n", "8",
                  "--weights", str(path))
    assert result.returncode == 0, result.stderr
    assert _generated(result.stdout) == [
        _reference_greedy(widened, prompt, 8)]


def test_sampling_is_reproducible_from_the_seed(model_dir):
    _, out, _ = model_dir
    args = ["--ids", "1,2,3", "-n", "16", "--temperature", "50",
            "--batch", "2"]
    first = _generated(_run(out, *args, "--seed", "1").stdout)
    again = _generated(_run(out, *args, "--seed", "1").stdout)
    other = _generated(_run(out, *args, "--seed", "2").stdout)
    assert first == again
    assert len(first) == 2 and all(len(row) == 16 for row in first)
    assert first != other
    # At a high temperature the tokens spread over the vocabulary.
    assert len(set(first[0] + first[1])) > 8


def test_c_api_refuses_weights_of_another_model(model_dir, tmp_path):
    root, out, weights = model_dir
    wrong = dict(weights)
    name = "model.layers.0.mlp.up_proj.weight"
    wrong[name] = np.zeros((32, 48), np.float32)
    path = tmp_path / "wrong.safetensors"
    safetensors.save(str(path), wrong)
    message = (f"tensor '{name}' must have shape \\[48, 32\\], but has "
               f"\\[32, 48\\]")
    with pytest.raises(ValueError, match=message):
        compiled_model.CompiledModel(root / "model.json", weights_path=path,
                             library_path=out / "libgdn-model.so")
    result = _run(out, "--ids", "1", "--weights", str(path))
    assert result.returncode == 1
    assert "gdn-model: error:" in result.stderr
    assert "must have shape [48, 32], but has [32, 48]" in result.stderr


def test_decode_before_prefill_is_an_error(model_dir):
    root, out, _ = model_dir
    compiled = compiled_model.CompiledModel(root / "model.json",
                                    library_path=out / "libgdn-model.so")
    with pytest.raises(ValueError, match="call gdn_model_prefill first"):
        compiled.decode([1])
