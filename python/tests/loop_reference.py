"""A deliberately naive transcription of the Gated DeltaNet layer: the
independent check of gdn.reference.gated_deltanet, which the package and
every compiled test rely on. It shares no code with gdn: explicit loops
over batch, tokens, heads and conv taps, scalar gates with the math module,
alpha = exp(-softplus * exp(log_alpha)) as the module computes it (the
reference uses its logarithm directly)."""

import math

import numpy as np

NORMALIZE_EPS = 1e-12          # F.normalize's default eps


def gated_deltanet_loops(x, params, num_heads, eps=1e-6):
    """The module's forward over x [B, T, d_model] from a zero state, for
    any conv kernel size (that of params' conv weights [d_out, 1, C]).
    Returns (y [B, T, d_out], final_state [B, H, D, D]), float64."""
    x = np.asarray(x, dtype=np.float64)
    batch, tokens, _ = x.shape
    p = {n: np.asarray(a, dtype=np.float64) for n, a in params.items()}
    d_out = p["W_query.weight"].shape[0]
    hd = d_out // num_heads
    y = np.zeros((batch, tokens, d_out))
    states = np.zeros((batch, num_heads, hd, hd))

    def sig(z):
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else (
            math.exp(z) / (1.0 + math.exp(z)))

    def rms(z):
        return z / math.sqrt(sum(e * e for e in z) / len(z) + eps) * \
            p["norm.weight"]

    for b in range(batch):
        proj = {n: [p[n + ".weight"] @ x[b, t] for t in range(tokens)]
                for n in ("W_query", "W_key", "W_value")}
        conv = {}
        for n, c in (("W_query", "conv_q"), ("W_key", "conv_k"),
                     ("W_value", "conv_v")):
            w, bias = p[c + ".weight"], p[c + ".bias"]
            kernel = w.shape[2]
            conv[n] = []
            for t in range(tokens):
                acc = bias.copy()
                for j in range(kernel):
                    src = t - (kernel - 1) + j   # token under tap j
                    if src >= 0:
                        acc = acc + w[:, 0, j] * proj[n][src]
                conv[n].append(np.array([a * sig(a) for a in acc]))
        for h in range(num_heads):
            S = np.zeros((hd, hd))
            for t in range(tokens):
                cols = slice(h * hd, (h + 1) * hd)
                q = conv["W_query"][t][cols]
                k = conv["W_key"][t][cols]
                v = rms(conv["W_value"][t][cols])
                q = q / max(math.sqrt(float(q @ q)), NORMALIZE_EPS)
                k = k / max(math.sqrt(float(k @ k)), NORMALIZE_EPS)
                a = float(p["alpha.weight"][h] @ x[b, t] + p["alpha.bias"][h])
                sp = a if a > 20 else math.log1p(math.exp(a))
                alpha = math.exp(-sp * math.exp(p["log_alpha"][h]))
                beta = sig(float(p["beta.weight"][h] @ x[b, t]
                                 + p["beta.bias"][h]))
                S = alpha * S
                v_hat = k @ S
                S = S + beta * np.outer(k, v - v_hat)
                y[b, t, cols] = rms(q @ S)
            states[b, h] = S
        for t in range(tokens):
            gate = p["gate.weight"] @ x[b, t] + p["gate.bias"]
            mixed = y[b, t] * np.array([g * sig(g) for g in gate])
            y[b, t] = p["out_proj.weight"] @ mixed + p["out_proj.bias"]
    return y, states
