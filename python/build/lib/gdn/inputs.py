"""Random inputs for the delta rule that make comparisons meaningful.

q and k have unit length per head, v unit RMS, beta = sigmoid(randn) in (0, 1)
and g (natural log of the forget gate) comes from one of several regimes, the
strongest matching the design document's initialisation (A up to 16).
"""

import numpy as np

GATE_REGIMES = ("moderate", "weak", "strong", "realistic", "design", "none")


def _unit(x, axis=-1):
    return x / np.sqrt(np.sum(x * x, axis=axis, keepdims=True) + 1e-6)


def gates(rng, shape, regime="moderate"):
    """Log forget gates g <= 0 of the given shape."""
    log_sigmoid = lambda x: -np.logaddexp(0.0, -x)
    if regime == "moderate":       # [-0.69, -0.31]
        return log_sigmoid(rng.random(shape))
    if regime == "weak":           # long memory, half the tokens without decay
        g = log_sigmoid(rng.random(shape)) / 10.0
        return np.where(rng.random(shape) < 0.5, 0.0, g)
    if regime == "strong":         # state nearly reset every few tokens
        return log_sigmoid(rng.random(shape)) / 0.1
    if regime == "realistic":      # -A softplus(x + dt_bias), A ~ U[1, 16]
        a = rng.uniform(1.0, 16.0, size=shape[-1])
        dt = np.exp(rng.uniform(np.log(1e-3), np.log(1e-1), size=shape[-1]))
        dt_bias = dt + np.log(-np.expm1(-dt))   # softplus^-1(dt)
        return -a * np.logaddexp(0.0, rng.standard_normal(shape) + dt_bias)
    if regime == "design":         # the design document: -A softplus(W x),
        a = rng.uniform(0.0, 16.0, size=shape[-1])   # A = exp(log U(0, 16))
        return -a * np.logaddexp(0.0, rng.standard_normal(shape))
    if regime == "none":
        return np.zeros(shape)
    raise ValueError(f"unknown gate regime {regime!r}; one of {GATE_REGIMES}")


def delta_rule_inputs(seed, batch, tokens, heads, value_heads, key_dim,
                      value_dim, regime="moderate", initial_state=False,
                      dtype=np.float32):
    """Returns dict(q, k, v, g, beta, initial_state) as arrays of `dtype`
    (g, beta and the state always float32)."""
    rng = np.random.default_rng(seed)
    q = _unit(rng.standard_normal((batch, tokens, heads, key_dim)))
    k = _unit(rng.standard_normal((batch, tokens, heads, key_dim)))
    v = rng.standard_normal((batch, tokens, value_heads, value_dim))
    v = v / np.sqrt(np.mean(v * v, axis=-1, keepdims=True) + 1e-6)
    beta = 1.0 / (1.0 + np.exp(-rng.standard_normal((batch, tokens,
                                                     value_heads))))
    g = gates(rng, (batch, tokens, value_heads), regime)
    state = None
    if initial_state:
        state = rng.standard_normal(
            (batch, value_heads, key_dim, value_dim)).astype(np.float32)
    return dict(q=q.astype(dtype), k=k.astype(dtype), v=v.astype(dtype),
                g=g.astype(np.float32), beta=beta.astype(np.float32),
                initial_state=state)
