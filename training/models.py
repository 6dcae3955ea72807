"""The two byte-level language models that training/train.py compares, in
PyTorch, differentiable:

- `HybridLM`: a gdn model description (the Nenya pattern of GDN and MLA
  blocks), its parameters named and shaped as gdn's weights
  (docs/model-description.md), so that its state_dict is a gdn model; the
  layer math is bench/torch_model.py's (the design document's GDN block in
  the chunkwise-parallel form, MLA, SwiGLU, RMSNorm, pre-norm residuals);
- `SoftmaxLM`: the same blocks with multi-head softmax attention (RoPE on
  every head) as every mixer: the design document's baseline.

Both take ids [B, T] and return logits [B, T, vocab] in float32. Under
`torch.autocast("cuda", torch.bfloat16)` the projections run in bf16 while
norms, gates, the convolutions and the delta rule stay in float32; without
autocast everything is float32 (the evaluation the compiled model is
compared with).
"""

import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(_ROOT, "python"))
sys.path.insert(0, os.path.join(_ROOT, "bench"))

from gdn import model as gdn_model  # noqa: E402
from torch_model import (GDN_NORM_EPS, NORMALIZE_EPS, _rms_norm,  # noqa: E402
                         _rope_angles, _rotate, chunked_delta_rule)

EMBEDDING_STD = 0.02


def _f32(x):
    return x.float()


def _linear(x, weight):
    return F.linear(x, weight)


def _causal_conv(u, weight, bias):
    """Depthwise causal convolution of u [B, T, d] with weight [d, 1, C]."""
    width = weight.shape[-1]
    out = F.conv1d(F.pad(u.transpose(1, 2), (width - 1, 0)), weight, bias,
                   groups=weight.shape[0])
    return out.transpose(1, 2)


def _mlp(x, gate, up, down):
    return _linear(F.silu(_linear(x, gate)) * _linear(x, up), down)


def _no_autocast(function):
    """Runs `function` with autocast off: the delta rule's products and the
    triangular solve stay in float32."""
    def wrapped(*args):
        with torch.autocast("cuda", enabled=False), \
                torch.autocast("cpu", enabled=False):
            return function(*[a.float() for a in args])
    return wrapped


_delta_rule_f32 = _no_autocast(chunked_delta_rule)


class _NamedParameters(nn.Module):
    """Parameters under names that contain dots (gdn's weight names)."""

    def __init__(self, tensors):
        super().__init__()
        self.names = list(tensors)
        self.values = nn.ParameterList(
            nn.Parameter(torch.as_tensor(tensors[n], dtype=torch.float32))
            for n in self.names)
        self._index = {n: i for i, n in enumerate(self.names)}

    def __getitem__(self, name):
        return self.values[self._index[name]]

    def tensors(self):
        """name -> float32 numpy array, detached."""
        return {n: self[n].detach().float().cpu().numpy() for n in self.names}


class HybridLM(nn.Module):
    """A gdn model description as a trainable PyTorch module."""

    def __init__(self, config, seed=0, weights=None):
        super().__init__()
        self.config = gdn_model.load_config(config)
        self.kinds = gdn_model.layer_kinds(self.config)
        if weights is None:
            weights = gdn_model.init_weights(self.config, seed=seed)
            # gdn's initialiser draws the embedding from N(0, 1)
            # (nn.Embedding's default); with the LM head tied to it the first
            # logits would have a spread of sqrt(d_model).
            embedding = weights["model.embed_tokens.weight"]
            weights["model.embed_tokens.weight"] = embedding * EMBEDDING_STD
        gdn_model.validate_weights(self.config, weights)
        self.p = _NamedParameters(weights)

    def weights(self):
        """The parameters as gdn weights: name -> float32 numpy array."""
        return self.p.tensors()

    def forward(self, ids):
        p, eps = self.p, self.config["norm_eps"]
        x = F.embedding(ids, p["model.embed_tokens.weight"])
        for i, kind in enumerate(self.kinds):
            block = f"model.layers.{i}."
            h = _rms_norm(x, p[block + "input_layernorm.weight"], eps)
            prefix = gdn_model._mixer_prefix(i, kind)
            mixer = self._gdn if kind == "gdn" else self._mla
            x = x + _f32(mixer(h, lambda n, prefix=prefix: p[prefix + n]))
            h = _rms_norm(x, p[block + "post_attention_layernorm.weight"], eps)
            x = x + _f32(_mlp(h, p[block + "mlp.gate_proj.weight"],
                              p[block + "mlp.up_proj.weight"],
                              p[block + "mlp.down_proj.weight"]))
        h = _rms_norm(x, p["model.norm.weight"], eps)
        head = p["model.embed_tokens.weight"] if self.config["tie_embeddings"] \
            else p["lm_head.weight"]
        return _f32(_linear(h, head))

    def _gdn(self, h, w):
        heads = self.config["gdn"]["num_heads"]
        mixed = []
        for proj, conv in (("W_query", "conv_q"), ("W_key", "conv_k"),
                           ("W_value", "conv_v")):
            u = _f32(_linear(h, w(proj + ".weight")))
            out = _causal_conv(u, w(conv + ".weight"), w(conv + ".bias"))
            mixed.append(F.silu(_f32(out)).unflatten(-1, (heads, -1)))
        q = F.normalize(mixed[0], dim=-1, eps=NORMALIZE_EPS)
        k = F.normalize(mixed[1], dim=-1, eps=NORMALIZE_EPS)
        v = _rms_norm(mixed[2], w("norm.weight"), GDN_NORM_EPS)
        g = -w("log_alpha").exp() * F.softplus(
            _f32(_linear(h, w("alpha.weight"))) + w("alpha.bias"))
        beta = torch.sigmoid(_f32(_linear(h, w("beta.weight")))
                             + w("beta.bias"))
        gate = _f32(_linear(h, w("gate.weight"))) + w("gate.bias")
        batch, value_dim = q.shape[0], v.shape[-1]
        state = q.new_zeros(batch, heads, q.shape[-1], value_dim)
        o, _ = _delta_rule_f32(q, k, v, g, beta, state)
        o = _rms_norm(o, w("norm.weight"), GDN_NORM_EPS).flatten(-2)
        return _linear(o * F.silu(gate), w("out_proj.weight")) \
            + w("out_proj.bias")

    def _mla(self, h, w):
        mla, eps = self.config["mla"], self.config["norm_eps"]
        n, nope, rope, v_dim, rank = (
            mla["num_heads"], mla["qk_nope_head_dim"], mla["qk_rope_head_dim"],
            mla["v_head_dim"], mla["kv_lora_rank"])
        if mla["q_lora_rank"] == 0:
            q = _linear(h, w("q_proj.weight"))
        else:
            q_a = _rms_norm(_f32(_linear(h, w("q_a_proj.weight"))),
                            w("q_a_layernorm.weight"), eps)
            q = _linear(q_a, w("q_b_proj.weight"))
        q = _f32(q).unflatten(-1, (n, nope + rope))
        tokens = h.shape[1]
        cos, sin = _rope_angles(torch.arange(tokens, device=h.device), rope,
                                mla["rope_theta"], torch.float32)
        q_rope = _rotate(q[..., nope:], cos[:, None], sin[:, None])
        kv_a = _f32(_linear(h, w("kv_a_proj_with_mqa.weight")))
        latent = _rms_norm(kv_a[..., :rank], w("kv_a_layernorm.weight"), eps)
        k_rope = _rotate(kv_a[..., rank:], cos, sin)
        kv = _f32(_linear(latent, w("kv_b_proj.weight"))).unflatten(
            -1, (n, nope + v_dim))
        key = torch.cat([kv[..., :nope],
                         k_rope[:, :, None].expand(-1, -1, n, -1)], -1)
        query = torch.cat([q[..., :nope], q_rope], -1)
        out = _attention(query, key, kv[..., nope:])
        return _linear(out.flatten(-2), w("o_proj.weight"))


def _attention(query, key, value):
    """Causal softmax attention of [B, T, n, d] tensors (scale
    1/sqrt(d)), in the autocast dtype when autocast is on."""
    dtype = torch.get_autocast_dtype("cuda") if query.is_cuda and \
        torch.is_autocast_enabled("cuda") else torch.float32
    q, k, v = (t.transpose(1, 2).to(dtype) for t in (query, key, value))
    return _f32(F.scaled_dot_product_attention(q, k, v, is_causal=True)
                ).transpose(1, 2)


def softmax_config(hybrid_config, mlp_hidden_size, head_dim=64):
    """The baseline's shape: the hybrid's vocabulary, width, depth and
    norms, softmax attention with `head_dim`-wide heads in every block."""
    return {"vocab_size": hybrid_config["vocab_size"],
            "d_model": hybrid_config["d_model"],
            "num_layers": hybrid_config["num_layers"],
            "num_heads": hybrid_config["d_model"] // head_dim,
            "head_dim": head_dim,
            "rope_theta": 10000.0,
            "mlp_hidden_size": mlp_hidden_size,
            "norm_eps": hybrid_config["norm_eps"]}


def softmax_parameter_count(config):
    d, hidden = config["d_model"], config["mlp_hidden_size"]
    attention = 4 * d * config["num_heads"] * config["head_dim"]
    block = attention + 3 * d * hidden + 2 * d
    return config["vocab_size"] * d + config["num_layers"] * block + d


def parity_mlp_hidden(hybrid_config, multiple=8):
    """The baseline's MLP width whose parameter count is closest to the
    hybrid's (a multiple of `multiple`)."""
    target = hybrid_parameter_count(hybrid_config)
    best = None
    for hidden in range(multiple, 16 * hybrid_config["d_model"] + 1,
                        multiple):
        count = softmax_parameter_count(softmax_config(hybrid_config, hidden))
        if best is None or abs(count - target) < abs(best[1] - target):
            best = (hidden, count)
    return best[0]


def hybrid_parameter_count(config):
    shapes = gdn_model.weight_shapes(gdn_model.load_config(config))
    return sum(math.prod(s) for s in shapes.values())


class SoftmaxLM(nn.Module):
    """Every block pre-norm softmax attention + SwiGLU, tied LM head."""

    def __init__(self, config, seed=0):
        super().__init__()
        self.config = dict(config)
        d, hidden = config["d_model"], config["mlp_hidden_size"]
        width = config["num_heads"] * config["head_dim"]
        generator = torch.Generator().manual_seed(1000003 * seed + 7)

        def linear(out, inp):
            bound = 1.0 / math.sqrt(inp)
            return nn.Parameter((torch.rand(out, inp, generator=generator)
                                 * 2 - 1) * bound)

        self.embed = nn.Parameter(torch.randn(
            config["vocab_size"], d, generator=generator) * EMBEDDING_STD)
        self.blocks = nn.ModuleList()
        for _ in range(config["num_layers"]):
            block = nn.Module()
            block.input_norm = nn.Parameter(torch.ones(d))
            block.qkv = linear(3 * width, d)
            block.o = linear(d, width)
            block.post_norm = nn.Parameter(torch.ones(d))
            block.gate = linear(hidden, d)
            block.up = linear(hidden, d)
            block.down = linear(d, hidden)
            self.blocks.append(block)
        self.final_norm = nn.Parameter(torch.ones(d))

    def forward(self, ids):
        config, eps = self.config, self.config["norm_eps"]
        n, head_dim = config["num_heads"], config["head_dim"]
        tokens = ids.shape[1]
        cos, sin = _rope_angles(torch.arange(tokens, device=ids.device),
                                head_dim, config["rope_theta"], torch.float32)
        x = F.embedding(ids, self.embed)
        for block in self.blocks:
            h = _rms_norm(x, block.input_norm, eps)
            q, k, v = _f32(_linear(h, block.qkv)).unflatten(
                -1, (3, n, head_dim)).unbind(2)
            q = _rotate(q, cos[:, None], sin[:, None])
            k = _rotate(k, cos[:, None], sin[:, None])
            x = x + _f32(_linear(_attention(q, k, v).flatten(-2), block.o))
            h = _rms_norm(x, block.post_norm, eps)
            x = x + _f32(_mlp(h, block.gate, block.up, block.down))
        h = _rms_norm(x, self.final_norm, eps)
        return _f32(_linear(h, self.embed))
