"""The float64 references of the gdn ops: the one oracle of the package.

Each op of the dialect has exactly one float64 numpy reference, here, and
every user goes through it: the tests of the compiled ops, layer and model
compare against it, and the whole-model reference (gdn.model.ModelReference)
and gdn.layers.gated_deltanet_reference are built from it. The references
follow the ops' definitions (include/gdn/Dialect/Gdn/IR/GdnOps.td) literally
and share no code with the compiler.

- gdn.delta_rule / gdn.delta_rule_step: `delta_rule` (token by token),
  `delta_rule_step`, and `delta_rule_chunked`, the chunkwise form the
  chunking pass implements, which cross-checks the recurrence;
- gdn.gated_deltanet: `gated_deltanet` (a sequence from zero states) and
  `gated_deltanet_step` (one token from the conv and delta-rule states);
- gdn.mla: `mla`, with `apply_rope`;
- gdn.rms_norm and gdn.swiglu_mlp: `rms_norm`, `swiglu_mlp` (gdn.embed
  and gdn.lm_head are a row lookup `table[ids]` and a product `x @ head.T`);
- the element-wise functions these use, as PyTorch defines them:
  `sigmoid`, `silu`, `softplus`, `l2_normalize`, `softmax`;
- `relative_error`, the error measure of every comparison.

Weights are named and laid out as in the ops' operand tables (PyTorch
layouts: Linear weights [out, in], depthwise conv weights [d, 1, kernel]).
"""

import math

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


# ----------------------------------------------------------------------------
# Element-wise functions and norms
# ----------------------------------------------------------------------------

NORMALIZE_EPS = 1e-12          # F.normalize's default eps
SOFTPLUS_THRESHOLD = 20.0      # F.softplus's default threshold (beta = 1)


def sigmoid(z):
    """1 / (1 + exp(-z)) without overflow."""
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def silu(z):
    return z * sigmoid(z)


def softplus(z):
    """F.softplus(z) (beta = 1, threshold = 20): z itself above 20."""
    return np.where(z > SOFTPLUS_THRESHOLD, z,
                    np.log1p(np.exp(np.minimum(z, SOFTPLUS_THRESHOLD))))


def rms_norm(z, weight, eps):
    """nn.RMSNorm over the last axis (gdn.rms_norm)."""
    return z / np.sqrt(np.mean(z * z, axis=-1, keepdims=True) + eps) * weight


def l2_normalize(z):
    """F.normalize(z, dim=-1): z / max(||z||_2, 1e-12)."""
    norm = np.sqrt(np.sum(z * z, axis=-1, keepdims=True))
    return z / np.maximum(norm, NORMALIZE_EPS)


def softmax(scores, axis=-1):
    shifted = scores - np.max(scores, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def swiglu_mlp(x, gate_proj, up_proj, down_proj):
    """gdn.swiglu_mlp: (silu(x gate^T) * (x up^T)) down^T."""
    return (silu(x @ gate_proj.T) * (x @ up_proj.T)) @ down_proj.T


# ----------------------------------------------------------------------------
# gdn.gated_deltanet
# ----------------------------------------------------------------------------

# The input projections and their causal convs, in the op's conv-state order.
GDN_PROJECTIONS = (("W_query", "conv_q"), ("W_key", "conv_k"),
                   ("W_value", "conv_v"))


def _float64(params):
    return {name: np.asarray(value, dtype=np.float64)
            for name, value in params.items()}


def _gdn_qkv(mixed, p, eps):
    """q, k (L2-normalised per head) and v (RMS-normalised per head) from
    the conv outputs [..., H, D]."""
    q = l2_normalize(mixed["W_query"])
    k = l2_normalize(mixed["W_key"])
    v = rms_norm(mixed["W_value"], p["norm.weight"], eps)
    return q, k, v


def _gdn_gates(x, p):
    """g (log alpha, computed directly: exp(-A * softplus) underflows), beta
    and the output gate of x [..., d_model]."""
    g = -np.exp(p["log_alpha"]) * softplus(
        x @ p["alpha.weight"].T + p["alpha.bias"])
    beta = sigmoid(x @ p["beta.weight"].T + p["beta.bias"])
    gate = x @ p["gate.weight"].T + p["gate.bias"]
    return g, beta, gate


def _gdn_output(o, gate, p, eps):
    """RMSNorm per head, heads merged, the SiLU output gate and out_proj."""
    shape = o.shape[:-2] + (o.shape[-2] * o.shape[-1],)
    o = rms_norm(o, p["norm.weight"], eps).reshape(shape)
    return (o * silu(gate)) @ p["out_proj.weight"].T + p["out_proj.bias"]


def gated_deltanet(x, params, num_heads, eps=1e-6):
    """gdn.gated_deltanet (the design document's
    GatedMultiHeadDeltaAttention) over x [B, T, d_model] from zero states.

    params: the op's weights by name; the conv kernel size C is that of the
    conv weights [d_out, 1, C], each conv left-padded by C - 1 zeros.
    Returns (y [B, T, d_out], state [B, H, D, D], conv_state), float64;
    conv_state maps "conv_q" / "conv_k" / "conv_v" to the projections
    [B, C - 1, d_out] of the last C - 1 tokens (zeros before the first),
    what gated_deltanet_step continues from.
    """
    x = np.asarray(x, dtype=np.float64)
    p = _float64(params)
    batch, tokens, _ = x.shape
    mixed, conv_state = {}, {}
    for proj, conv in GDN_PROJECTIONS:
        u = x @ p[proj + ".weight"].T                        # [B, T, d_out]
        w = p[conv + ".weight"][:, 0, :]                     # [d_out, C]
        pad = w.shape[1] - 1
        padded = np.concatenate([np.zeros((batch, pad, u.shape[2])), u],
                                axis=1)                   # [B, T + C-1, d]
        # out[t] = bias + sum_j w[:, j] * padded[t + j]
        out = np.broadcast_to(p[conv + ".bias"], u.shape).copy()
        for j in range(w.shape[1]):
            out += w[:, j] * padded[:, j:j + tokens]
        conv_state[conv] = padded[:, tokens:]
        mixed[proj] = silu(out).reshape(batch, tokens, num_heads, -1)
    q, k, v = _gdn_qkv(mixed, p, eps)
    g, beta, gate = _gdn_gates(x, p)
    o, state = delta_rule(q, k, v, g, beta, scale=1.0)
    return _gdn_output(o, gate, p, eps), state, conv_state


def gated_deltanet_step(x, params, num_heads, conv_state, state, eps=1e-6):
    """One token x [B, d_model] of gdn.gated_deltanet, continuing from
    conv_state (as gated_deltanet returns it) and the delta-rule state
    [B, H, D, D]. Returns (y [B, d_out], new_state, new_conv_state)."""
    x = np.asarray(x, dtype=np.float64)
    p = _float64(params)
    batch = x.shape[0]
    mixed, new_conv_state = {}, {}
    for proj, conv in GDN_PROJECTIONS:
        u = x @ p[proj + ".weight"].T                        # [B, d_out]
        window = np.concatenate([conv_state[conv], u[:, None]], axis=1)
        w = p[conv + ".weight"][:, 0, :]                     # [d_out, C]
        out = p[conv + ".bias"] + np.einsum("bcd,dc->bd", window, w)
        new_conv_state[conv] = window[:, 1:]
        mixed[proj] = silu(out).reshape(batch, num_heads, -1)
    q, k, v = _gdn_qkv(mixed, p, eps)
    g, beta, gate = _gdn_gates(x, p)
    o, new_state = delta_rule_step(q, k, v, g, beta, state, scale=1.0)
    return _gdn_output(o, gate, p, eps), new_state, new_conv_state


# ----------------------------------------------------------------------------
# gdn.mla
# ----------------------------------------------------------------------------

def apply_rope(x, positions, theta):
    """RoPE, rotate-half convention: x * cos + rotate_half(x) * sin with
    angles positions * theta^(-2i/d), i < d/2, repeated for both halves.

    x: [..., d] (d even); positions: broadcastable to x.shape[:-1].
    """
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"RoPE needs an even dimension, got {d}")
    inv_freq = float(theta) ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    angles = np.asarray(positions, dtype=np.float64)[..., None] * inv_freq
    angles = np.concatenate([angles, angles], axis=-1)
    half = d // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * np.cos(angles) + rotated * np.sin(angles)


def mla(x, params, config, eps, past_latent=None, past_k_rope=None):
    """gdn.mla: causal multi-head latent attention over x [B, T, d] after
    the P cached tokens of past_latent [B, P, kv_lora_rank] and past_k_rope
    [B, P, qk_rope_head_dim] (none: P = 0).

    config: the sizes and rope_theta, as the model description's "mla"
    section names them; eps: the latents' RMSNorm eps. Returns (y [B, T, d],
    latent [B, T, kv_lora_rank], k_rope [B, T, qk_rope_head_dim]) of the new
    tokens, float64: what the decode cache appends.
    """
    x = np.asarray(x, dtype=np.float64)
    p = _float64(params)
    batch, tokens, _ = x.shape
    n = config["num_heads"]
    nope, rope = config["qk_nope_head_dim"], config["qk_rope_head_dim"]
    rank, v_dim = config["kv_lora_rank"], config["v_head_dim"]
    if past_latent is None:
        past_latent = np.zeros((batch, 0, rank))
        past_k_rope = np.zeros((batch, 0, rope))
    if config["q_lora_rank"] == 0:
        q = x @ p["q_proj.weight"].T
    else:
        q = rms_norm(x @ p["q_a_proj.weight"].T,
                     p["q_a_layernorm.weight"], eps) @ p["q_b_proj.weight"].T
    q = q.reshape(batch, tokens, n, nope + rope)
    positions = past_latent.shape[1] + np.arange(tokens)
    q_nope = q[..., :nope]
    q_rope = apply_rope(q[..., nope:], positions[:, None],
                        config["rope_theta"])
    kv_a = x @ p["kv_a_proj_with_mqa.weight"].T
    latent = rms_norm(kv_a[..., :rank], p["kv_a_layernorm.weight"], eps)
    k_rope = apply_rope(kv_a[..., rank:], positions, config["rope_theta"])
    all_latent = np.concatenate([past_latent, latent], axis=1)
    all_k_rope = np.concatenate([past_k_rope, k_rope], axis=1)
    keys = all_latent.shape[1]
    kv = (all_latent @ p["kv_b_proj.weight"].T).reshape(
        batch, keys, n, nope + v_dim)
    k_nope, v = kv[..., :nope], kv[..., nope:]
    scores = (np.einsum("btnd,bsnd->bnts", q_nope, k_nope)
              + np.einsum("btnd,bsd->bnts", q_rope, all_k_rope)) \
        / math.sqrt(nope + rope)
    visible = np.arange(keys)[None, :] <= positions[:, None]   # [T, S]
    scores = np.where(visible, scores, -np.inf)
    out = np.einsum("bnts,bsnd->btnd", softmax(scores), v)
    y = out.reshape(batch, tokens, n * v_dim) @ p["o_proj.weight"].T
    return y, latent, k_rope


# ----------------------------------------------------------------------------
# Comparing
# ----------------------------------------------------------------------------

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
