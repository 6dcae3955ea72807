"""`gdn-model --perplexity FILE`: the loss of a compiled byte-level model on
a text, in windows, against the float64 model reference evaluated window
by window here; its refusals of bad windows and files; and the bundled
trained model (examples/nenya-kjv) against the PyTorch figure recorded
when it was trained."""

import json
import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

from gdn import cache, model, safetensors
from model_configs import hybrid_config

REPO = pathlib.Path(__file__).resolve().parents[2]
KJV = REPO / "examples" / "nenya-kjv"

CONFIG = dict(hybrid_config(q_lora_rank=12, tie_embeddings=True),
              vocab_size=256, tokenizer="bytes")


@pytest.fixture(scope="module")
def byte_model(tmp_path_factory):
    root = tmp_path_factory.mktemp("perplexity")
    (root / "model.json").write_text(json.dumps(CONFIG))
    weights = model.init_weights(model.load_config(CONFIG), seed=5)
    safetensors.save(str(root / "model.safetensors"), weights)
    out = root / "out"
    subprocess.run([cache.find_compiler(), str(root / "model.json"),
                    "-o", str(out)], check=True)
    return root, out, weights


def _perplexity(out, path, *args):
    return subprocess.run([str(out / "gdn-model"), "--quiet", "--perplexity",
                           str(path), *args], capture_output=True, text=True)


def _loss(stdout):
    match = re.search(r"^loss: +([0-9.]+) nats/", stdout, re.M)
    assert match, stdout
    return float(match.group(1))


def _reference_loss(weights, data, window):
    """Mean NLL of every byte after the first of each window, float64."""
    config = model.load_config(CONFIG)
    total, count = 0.0, 0
    for start in range(0, len(data), window):
        piece = np.frombuffer(data[start:start + window], np.uint8)
        if len(piece) < 2:
            continue
        logits = model.ModelReference(config, weights).prefill(
            piece[None].astype(np.int64))[0, :-1]
        best = logits.max(-1, keepdims=True)
        log_z = best[:, 0] + np.log(np.exp(logits - best).sum(-1))
        total += float((log_z - logits[np.arange(len(piece) - 1),
                                       piece[1:]]).sum())
        count += len(piece) - 1
    return total / count, count


@pytest.mark.parametrize("length,window,batch", [
    (2, 100, 1), (310, 100, 2), (301, 100, 3), (257, 128, 1), (64, 7, 4)])
def test_loss_matches_the_reference(byte_model, tmp_path, length, window,
                                    batch):
    _, out, weights = byte_model
    rng = np.random.default_rng(length)
    data = bytes(rng.integers(0, 256, length).astype(np.uint8))
    path = tmp_path / "text.bin"
    path.write_bytes(data)
    result = _perplexity(out, path, "--window", str(window),
                         "--batch", str(batch))
    assert result.returncode == 0, result.stderr
    expected, count = _reference_loss(weights, data, window)
    assert f"{count} predicted" in result.stdout
    assert abs(_loss(result.stdout) - expected) <= 1e-5 * expected


@pytest.mark.parametrize("setup,args,message", [
    ("text", ["--window", "1"], "--window must be 2..128"),
    ("text", ["--window", "129"], "--window must be 2..128"),
    ("empty", [], "0 bytes; at least 2"),
    ("one", [], "1 bytes; at least 2"),
    ("dir", [], "not a regular file"),
    ("device", [], "not a regular file"),
    ("missing", [], "No such file or directory"),
    ("text", ["a prompt"], "give no prompt or --ids"),
])
def test_bad_windows_and_files_are_refused(byte_model, tmp_path, setup, args,
                                           message):
    _, out, _ = byte_model
    path = {"text": tmp_path / "t.txt", "empty": tmp_path / "e.txt",
            "one": tmp_path / "o.txt", "dir": tmp_path,
            "device": pathlib.Path("/dev/zero"),
            "missing": tmp_path / "nothing.txt"}[setup]
    if setup == "text":
        path.write_text("In the beginning")
    elif setup in ("empty", "one"):
        path.write_bytes(b"x" * (setup == "one"))
    result = _perplexity(out, path, *args)
    assert result.returncode == 1
    assert message in result.stderr, result.stderr
    assert result.stdout == ""


@pytest.fixture(scope="module")
def kjv_model(tmp_path_factory):
    out = tmp_path_factory.mktemp("kjv") / "out"
    subprocess.run([cache.find_compiler(), str(KJV / "model.json"), "-o",
                    str(out)], check=True)
    return out


def test_trained_model_loss_equals_pytorchs(kjv_model):
    recorded = json.loads((KJV / "training.json").read_text())["sample"]
    result = _perplexity(kjv_model, KJV / "heldout-sample.txt", "--window",
                         str(recorded["window"]), "--batch", "8")
    assert result.returncode == 0, result.stderr
    assert f"{recorded['windows']} windows" in result.stdout
    assert f"{recorded['predicted']} predicted" in result.stdout
    loss = _loss(result.stdout)
    assert abs(loss - recorded["loss"]) <= 1e-3 * recorded["loss"]


def test_trained_model_writes_english(kjv_model):
    result = subprocess.run([str(kjv_model / "gdn-model"), "--quiet",
                             "And God said", "-n", "160"],
                            capture_output=True, text=True, check=True)
    text = re.search(r'^generated text: +"(.*)"$', result.stdout, re.M)[1]
    text = text.replace("\\n", "\n")
    words = re.findall(r"[A-Za-z]+", text)
    # Mostly words of the text it was trained on: letters, spaces and the
    # punctuation of verses, not the one repeated byte of random weights.
    assert len(set(text)) > 15
    assert sum(len(w) for w in words) > 0.7 * len(text)
    assert {"the", "and", "of"} & {w.lower() for w in words}
