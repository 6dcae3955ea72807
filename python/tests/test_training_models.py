"""training/models.py, where torch is installed: the trained models'
forward passes against independent float64 references (the hybrid against
gdn's model reference, the softmax baseline against a numpy transformer
written here) and the parameter parity of the two."""

import math
import os
import sys

import numpy as np
import pytest

from gdn import model, reference

from model_configs import hybrid_config

TRAINING = os.path.join(os.path.dirname(__file__), "..", "..", "training")

torch = pytest.importorskip("torch")
sys.path.insert(0, TRAINING)
import models  # noqa: E402


def _tokens(config, batch, tokens, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, config["vocab_size"], (batch, tokens))


@pytest.mark.parametrize("q_lora_rank,batch,tokens", [
    (0, 1, 1), (0, 2, 37), (4, 3, 70), (4, 1, 128)])
def test_hybrid_matches_the_model_reference(q_lora_rank, batch, tokens):
    config = model.load_config(hybrid_config(q_lora_rank=q_lora_rank,
                                             tie_embeddings=True))
    weights = model.init_weights(config, seed=tokens)
    ids = _tokens(config, batch, tokens, seed=tokens)
    expected = model.ModelReference(config, weights).prefill(ids)
    lm = models.HybridLM(config, weights=weights)
    with torch.no_grad():
        actual = lm(torch.as_tensor(ids)).double().numpy()
    assert max(reference.relative_error(actual, expected)) < 1e-4


def _numpy_softmax_lm(lm, ids):
    """The baseline's forward in float64 numpy, from its parameters."""
    c = lm.config
    p = {n: t.detach().double().numpy() for n, t in lm.named_parameters()}
    n, hd, eps = c["num_heads"], c["head_dim"], c["norm_eps"]
    tokens = ids.shape[1]
    inv = c["rope_theta"] ** (-np.arange(0, hd, 2) / hd)
    angles = np.arange(tokens)[:, None] * inv
    cos, sin = np.cos(np.tile(angles, 2)), np.sin(np.tile(angles, 2))

    def rope(x):  # [B, T, n, hd]
        half = hd // 2
        rotated = np.concatenate([-x[..., half:], x[..., :half]], -1)
        return x * cos[:, None] + rotated * sin[:, None]

    def norm(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w

    def silu(x):
        return x / (1 + np.exp(-x))

    x = p["embed"][ids]
    mask = np.tril(np.ones((tokens, tokens), bool))
    for i in range(c["num_layers"]):
        b = f"blocks.{i}."
        h = norm(x, p[b + "input_norm"])
        qkv = (h @ p[b + "qkv"].T).reshape(*h.shape[:2], 3, n, hd)
        q, k, v = rope(qkv[:, :, 0]), rope(qkv[:, :, 1]), qkv[:, :, 2]
        scores = np.einsum("btnd,bsnd->bnts", q, k) / math.sqrt(hd)
        scores = np.where(mask, scores, -np.inf)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        out = np.einsum("bnts,bsnd->btnd", scores, v).reshape(*h.shape[:2], -1)
        x = x + out @ p[b + "o"].T
        h = norm(x, p[b + "post_norm"])
        x = x + (silu(h @ p[b + "gate"].T) * (h @ p[b + "up"].T)) \
            @ p[b + "down"].T
    return norm(x, p["final_norm"]) @ p["embed"].T


@pytest.mark.parametrize("batch,tokens", [(1, 1), (2, 45), (1, 130)])
def test_softmax_baseline_matches_numpy(batch, tokens):
    config = models.softmax_config(hybrid_config(), mlp_hidden_size=40,
                                   head_dim=8)
    lm = models.SoftmaxLM(config, seed=tokens)
    ids = _tokens(config, batch, tokens, seed=tokens)
    with torch.no_grad():
        actual = lm(torch.as_tensor(ids)).double().numpy()
    expected = _numpy_softmax_lm(lm, ids)
    assert max(reference.relative_error(actual, expected)) < 1e-4


def test_baseline_has_the_hybrids_parameter_count():
    path = os.path.join(TRAINING, "..", "examples", "nenya-kjv", "model.json")
    config = model.load_config(path)
    hybrid = models.HybridLM(config)
    baseline = models.SoftmaxLM(models.softmax_config(
        config, models.parity_mlp_hidden(config)))
    count = sum(p.numel() for p in hybrid.parameters())
    assert count == models.hybrid_parameter_count(config)
    other = sum(p.numel() for p in baseline.parameters())
    assert other == models.softmax_parameter_count(baseline.config)
    assert abs(other - count) / count < 0.01
