"""Tests of the float64 references: the recurrence against hand-computed
values and against the independently derived chunkwise-parallel form."""

import itertools

import numpy as np
import pytest

from gdn import inputs, reference


def test_scalar_state_by_hand():
    # K = V = 1: S1 = 0.5 * 2 = 1, o1 = 3 * 1; then S' = e^-1, v_hat = e^-1,
    # S2 = e^-1 + 0.25 * (4 - e^-1), o2 = -1 * S2.
    q = np.array([3.0, -1.0]).reshape(1, 2, 1, 1)
    k = np.ones((1, 2, 1, 1))
    v = np.array([2.0, 4.0]).reshape(1, 2, 1, 1)
    g = np.array([0.0, -1.0]).reshape(1, 2, 1)
    beta = np.array([0.5, 0.25]).reshape(1, 2, 1)
    o, s = reference.delta_rule(q, k, v, g, beta)
    s2 = np.exp(-1) + 0.25 * (4 - np.exp(-1))
    np.testing.assert_allclose(o.ravel(), [3.0, -s2], rtol=1e-15)
    np.testing.assert_allclose(s.ravel(), [s2], rtol=1e-15)


def test_rank_one_write_and_read_back():
    # With beta = 1 and a unit key, reading the key back returns v exactly.
    rng = np.random.default_rng(1)
    k = rng.standard_normal(8)
    k /= np.linalg.norm(k)
    v = rng.standard_normal(5)
    state = rng.standard_normal((1, 1, 8, 5))
    _, new_state = reference.delta_rule_step(
        k.reshape(1, 1, 8), k.reshape(1, 1, 8), v.reshape(1, 1, 5),
        np.full((1, 1), -0.3), np.ones((1, 1)), state)
    np.testing.assert_allclose(new_state[0, 0].T @ k, v, rtol=1e-12,
                               atol=1e-12)


def test_zero_beta_only_decays():
    d = inputs.delta_rule_inputs(3, 2, 9, 2, 4, 8, 6, "strong",
                                 initial_state=True)
    beta = np.zeros_like(d["beta"])
    o, s = reference.delta_rule(d["q"], d["k"], d["v"], d["g"], beta,
                                d["initial_state"], scale=0.5)
    total = np.exp(d["g"].astype(np.float64).sum(axis=1))
    np.testing.assert_allclose(
        s, total[:, :, None, None] * d["initial_state"], rtol=1e-12)


def test_grouped_heads_equal_repeated_heads():
    d = inputs.delta_rule_inputs(4, 2, 7, 2, 6, 4, 4)
    o, s = reference.delta_rule(d["q"], d["k"], d["v"], d["g"], d["beta"])
    q3 = np.repeat(d["q"], 3, axis=2)
    k3 = np.repeat(d["k"], 3, axis=2)
    o3, s3 = reference.delta_rule(q3, k3, d["v"], d["g"], d["beta"])
    np.testing.assert_array_equal(o, o3)
    np.testing.assert_array_equal(s, s3)


def test_rejects_heads_that_do_not_group():
    d = inputs.delta_rule_inputs(5, 1, 2, 2, 3, 4, 4)
    with pytest.raises(ValueError, match="multiple of"):
        reference.delta_rule(d["q"], d["k"], d["v"], d["g"], d["beta"])


def test_prefill_then_steps_equals_longer_prefill():
    d = inputs.delta_rule_inputs(6, 2, 12, 1, 2, 8, 4, "realistic",
                                 initial_state=True)
    o_all, s_all = reference.delta_rule(d["q"], d["k"], d["v"], d["g"],
                                        d["beta"], d["initial_state"], 0.7)
    o, state = reference.delta_rule(d["q"][:, :9], d["k"][:, :9],
                                    d["v"][:, :9], d["g"][:, :9],
                                    d["beta"][:, :9], d["initial_state"], 0.7)
    for t in range(9, 12):
        o_t, state = reference.delta_rule_step(
            d["q"][:, t], d["k"][:, t], d["v"][:, t], d["g"][:, t],
            d["beta"][:, t], state, 0.7)
        np.testing.assert_allclose(o_t, o_all[:, t], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(state, s_all, rtol=1e-13)


CHUNK_CASES = list(itertools.product(
    [1, 15, 16, 17, 40],                   # T, around the chunk size 16
    [(1, 1, 8, 8), (2, 4, 8, 4), (1, 3, 4, 12)],   # H, Hv, K, V
    ["moderate", "strong", "realistic", "design", "weak", "none"],
))


@pytest.mark.parametrize("tokens,heads,regime", CHUNK_CASES)
def test_chunked_form_matches_recurrence(tokens, heads, regime):
    h, hv, kd, vd = heads
    seed = tokens * 100 + hv * 10 + len(regime)
    d = inputs.delta_rule_inputs(seed, 2, tokens, h, hv, kd, vd, regime,
                                 initial_state=tokens % 2 == 1)
    o_ref, s_ref = reference.delta_rule(d["q"], d["k"], d["v"], d["g"],
                                        d["beta"], d["initial_state"], 0.5)
    o, s = reference.delta_rule_chunked(d["q"], d["k"], d["v"], d["g"],
                                        d["beta"], d["initial_state"], 0.5,
                                        chunk_size=16)
    assert max(reference.relative_error(o, o_ref)) < 1e-11
    assert max(reference.relative_error(s, s_ref)) < 1e-11


@pytest.mark.parametrize("chunk_size", [16, 32, 64])
def test_chunk_size_does_not_change_the_result(chunk_size):
    d = inputs.delta_rule_inputs(9, 1, 100, 2, 2, 16, 16, "realistic")
    o_ref, s_ref = reference.delta_rule(d["q"], d["k"], d["v"], d["g"],
                                        d["beta"])
    o, s = reference.delta_rule_chunked(d["q"], d["k"], d["v"], d["g"],
                                        d["beta"], chunk_size=chunk_size)
    assert max(reference.relative_error(o, o_ref)) < 1e-11
    assert max(reference.relative_error(s, s_ref)) < 1e-11


def test_relative_error_metrics():
    ratio, max_rel = reference.relative_error([1.0, 2.0], [1.0, 4.0])
    assert ratio == pytest.approx(2.0 / np.sqrt(17.0))
    assert max_rel == pytest.approx(0.5)
    assert reference.relative_error([0.0], [0.0]) == (0.0, 0.0)


def test_input_recipe():
    d = inputs.delta_rule_inputs(11, 2, 50, 2, 4, 16, 8, "design")
    np.testing.assert_allclose(np.linalg.norm(d["q"], axis=-1), 1.0,
                               rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(d["k"], axis=-1), 1.0,
                               rtol=1e-5)
    assert np.all(d["g"] <= 0) and d["g"].min() < -5
    assert np.all((d["beta"] > 0) & (d["beta"] < 1))
    with pytest.raises(ValueError, match="unknown gate regime"):
        inputs.gates(np.random.default_rng(0), (2,), "bogus")
