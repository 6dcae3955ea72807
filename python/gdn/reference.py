"""Independent float64 references of the gated delta rule.

These follow the op semantics literally, token by token, in float64 numpy.
They are the oracle that every compiled path is tested against, so they share
no code with the compiler.
"""

import numpy as np


def _check_grouping(num_heads, num_value_heads):
    if num_value_heads % num_heads != 0:
        raise ValueError(
            f"value heads Hv = {num_value_heads} must be a multiple of "
            f"query/key heads H = {num_heads}")
    return num_value_heads // num_heads


def delta_rule_step(q, k, v, g, beta, state, scale=1.0):
    """One decode token.

    q, k: [B, H, K]; v: [B, Hv, V]; g, beta: [B, Hv]; state: [B, Hv, K, V].
    Returns (o [B, Hv, V], new_state [B, Hv, K, V]), both float64.
    """
    q, k, v, g, beta, state = (np.asarray(x, dtype=np.float64)
                               for x in (q, k, v, g, beta, state))
    group = _check_grouping(q.shape[1], v.shape[1])
    kk = np.repeat(k, group, axis=1)
    qq = np.repeat(q, group, axis=1)
    decayed = np.exp(g)[:, :, None, None] * state
    v_hat = np.einsum("bhkv,bhk->bhv", decayed, kk)
    new_state = decayed + beta[:, :, None, None] * np.einsum(
        "bhk,bhv->bhkv", kk, v - v_hat)
    o = scale * np.einsum("bhkv,bhk->bhv", new_state, qq)
    return o, new_state


def delta_rule(q, k, v, g, beta, initial_state=None, scale=1.0):
    """Prefill over T tokens.

    q, k: [B, T, H, K]; v: [B, T, Hv, V]; g, beta: [B, T, Hv];
    initial_state: [B, Hv, K, V] or None (zeros).
    Returns (o [B, T, Hv, V], final_state [B, Hv, K, V]), both float64.
    """
    q = np.asarray(q, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    batch, tokens, _, key_dim = q.shape
    value_heads, value_dim = v.shape[2], v.shape[3]
    if initial_state is None:
        state = np.zeros((batch, value_heads, key_dim, value_dim))
    else:
        state = np.asarray(initial_state, dtype=np.float64)
    o = np.zeros((batch, tokens, value_heads, value_dim))
    for t in range(tokens):
        o[:, t], state = delta_rule_step(q[:, t], k[:, t], v[:, t], g[:, t],
                                         beta[:, t], state, scale)
    return o, state


def delta_rule_chunked(q, k, v, g, beta, initial_state=None, scale=1.0,
                       chunk_size=64):
    """The chunkwise-parallel (WY / UT-transform) form in float64.

    Mathematically equal to delta_rule; used to cross-check the reference and
    as the executable specification of the chunking pass. Natural-log gates
    throughout; every exponent used at a valid position is <= 0.
    """
    q, k, v, g, beta = (np.asarray(x, dtype=np.float64)
                        for x in (q, k, v, g, beta))
    batch, tokens, heads, key_dim = q.shape
    value_heads, value_dim = v.shape[2], v.shape[3]
    group = _check_grouping(heads, value_heads)
    qq = np.repeat(q, group, axis=2)
    kk = np.repeat(k, group, axis=2)
    if initial_state is None:
        state = np.zeros((batch, value_heads, key_dim, value_dim))
    else:
        state = np.array(initial_state, dtype=np.float64)
    o = np.zeros((batch, tokens, value_heads, value_dim))
    for start in range(0, tokens, chunk_size):
        end = min(start + chunk_size, tokens)
        length = end - start
        rows = np.arange(length)
        causal = rows[:, None] >= rows[None, :]
        strict = rows[:, None] > rows[None, :]
        for b in range(batch):
            for h in range(value_heads):
                kc = kk[b, start:end, h]              # [L, K]
                qc = qq[b, start:end, h]
                vc = v[b, start:end, h]               # [L, V]
                bc = beta[b, start:end, h]
                cum = np.cumsum(g[b, start:end, h])   # b_r, <= 0
                diff = cum[:, None] - cum[None, :]
                decay = np.where(causal, np.exp(np.where(causal, diff, 0.0)),
                                 0.0)
                a = np.where(strict, bc[:, None] * (kc @ kc.T) * decay, 0.0)
                system = np.eye(length) + a
                u = np.linalg.solve(system, bc[:, None] * vc)
                w = np.linalg.solve(system,
                                    (bc * np.exp(cum))[:, None] * kc)
                s0 = state[b, h]
                v_new = u - w @ s0
                inter = np.exp(cum)[:, None] * (qc @ s0)
                intra = ((qc @ kc.T) * decay) @ v_new
                o[b, start:end, h] = scale * (inter + intra)
                last = cum[-1]
                state[b, h] = (np.exp(last) * s0 +
                               (np.exp(last - cum)[:, None] * kc).T @ v_new)
    return o, state


def relative_error(actual, expected):
    """Returns (||a - e|| / ||e||, max|a - e| / max|e|) in float64."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    scale_l2 = max(np.linalg.norm(expected), np.finfo(np.float64).tiny)
    scale_max = max(np.max(np.abs(expected), initial=0.0),
                    np.finfo(np.float64).tiny)
    diff = actual - expected
    return (float(np.linalg.norm(diff) / scale_l2),
            float(np.max(np.abs(diff), initial=0.0) / scale_max))
