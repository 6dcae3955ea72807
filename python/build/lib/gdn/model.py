"""Hybrid Gated DeltaNet + Multi-head Latent Attention models
(docs/model-description.md) on numpy arrays.

- `load_config`: the JSON model description, every field validated (a
  ValueError names the field, what was expected and what was found);
- `layer_kinds`, `weight_shapes`, `validate_weights`, `init_weights`,
  `cache_bytes`: the model's layers, weight names and shapes, deterministic
  float32 weights and the cache size per sequence;
- `ModelReference`: the whole model in float64 numpy, with `prefill` over a
  prompt and `decode` one token at a time from the caches, composed of the
  ops' references in gdn.reference (each block's norms, mixer and MLP);
- `byte_tokenize` / `byte_detokenize` for tokenizer "bytes".

Conventions the document leaves open, and the choice made here:

- The GDN mixer is the design document's GatedMultiHeadDeltaAttention with
  d_out = d_model; its head RMSNorm keeps the module's own eps = 1e-6
  (`GDN_NORM_EPS`); `norm_eps` is for the block norms, the final norm and
  the MLA latents (q_a_layernorm and kv_a_layernorm). With a conv_size other
  than the module's 4, the causal conv is left-padded by conv_size - 1.
- MLA is DeepSeek-V2's without the interleaved-to-halves permutation that
  Hugging Face's DeepSeek-V2 applies before RoPE: q_rope and k_rope are
  rotated in place with the rotate-half convention.
- Softmax scale 1 / sqrt(qk_nope_head_dim + qk_rope_head_dim).
"""

import copy
import json
import math
import numbers
import os
from collections.abc import Mapping

import numpy as np

from . import layers, reference
from .reference import apply_rope  # noqa: F401  (part of this API)

__all__ = ["load_config", "layer_kinds", "weight_shapes", "validate_weights",
           "init_weights", "cache_bytes", "ModelReference", "apply_rope",
           "byte_tokenize", "byte_detokenize", "default_weights_path",
           "load_model", "GDN_NORM_EPS"]

LAYER_KINDS = ("gdn", "mla")
LAYER_PATTERNS = ("nenya",)
TOKENIZERS = ("bytes", "ids")
GDN_NORM_EPS = 1e-6            # nn.RMSNorm(head_dim, eps=1e-6) of the module
F32_BYTES = 4

_TOP_FIELDS = ("vocab_size", "d_model", "num_layers", "layer_types",
               "layer_pattern", "gdn", "mla", "mlp_hidden_size", "norm_eps",
               "tie_embeddings", "max_context", "tokenizer")
_GDN_FIELDS = ("num_heads", "head_dim", "conv_size")
_MLA_FIELDS = ("num_heads", "q_lora_rank", "kv_lora_rank",
               "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
               "rope_theta")


# ----------------------------------------------------------------------------
# The model description
# ----------------------------------------------------------------------------

def _show(value):
    """A value as its JSON text where it has one."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _require(section, key, field, expected):
    if key not in section:
        raise ValueError(f"{field}: missing (expected {expected})")
    return section[key]


def _int_field(section, key, prefix="", minimum=1, even=False):
    field = prefix + key
    expected = (("an even integer" if even else "an integer")
                + (" > 0" if minimum == 1 else f" >= {minimum}"))
    value = _require(section, key, field, expected)
    if not _is_int(value) or value < minimum or (even and value % 2):
        raise ValueError(f"{field}: expected {expected}, got {_show(value)}")
    return int(value)


def _positive_number(section, key, prefix=""):
    field = prefix + key
    expected = "a number > 0"
    value = _require(section, key, field, expected)
    if (not isinstance(value, numbers.Real) or isinstance(value, bool)
            or not math.isfinite(value) or value <= 0):
        raise ValueError(f"{field}: expected {expected}, got {_show(value)}")
    return float(value)


def _check_unknown(section, known, prefix=""):
    for key in section:
        if key not in known:
            raise ValueError(f"{prefix}{key}: unknown field (expected one of "
                             f"{', '.join(prefix + k for k in known)})")


def _nenya(num_layers):
    return ["mla" if i % 4 == 0 or i == num_layers - 1 else "gdn"
            for i in range(num_layers)]


def _section(raw, name, fields, kinds):
    users = [i for i, kind in enumerate(kinds) if kind == name]
    if name not in raw:
        if users:
            raise ValueError(
                f"{name}: missing (required: layer"
                f"{'s' if len(users) > 1 else ''} "
                f"{', '.join(map(str, users))} "
                f"{'are' if len(users) > 1 else 'is'} {name.upper()})")
        return None
    section = raw[name]
    if not isinstance(section, Mapping):
        raise ValueError(f"{name}: expected an object, got {_show(section)}")
    _check_unknown(section, fields, name + ".")
    return section


def _validate(raw):
    if not isinstance(raw, Mapping):
        raise ValueError(f"the model description must be a JSON object, got "
                         f"{_show(raw)}")
    _check_unknown(raw, _TOP_FIELDS)
    config = {}
    config["vocab_size"] = _int_field(raw, "vocab_size")
    config["d_model"] = d_model = _int_field(raw, "d_model")
    config["num_layers"] = num_layers = _int_field(raw, "num_layers")

    has_types, has_pattern = "layer_types" in raw, "layer_pattern" in raw
    if has_types and has_pattern:
        raise ValueError("layer_types, layer_pattern: expected exactly one "
                         "of them, got both")
    if not has_types and not has_pattern:
        raise ValueError('layer_types: missing (expected a list of "gdn" / '
                         '"mla" of length num_layers, or instead '
                         'layer_pattern "nenya")')
    if has_types:
        types = raw["layer_types"]
        if not isinstance(types, (list, tuple)):
            raise ValueError(f'layer_types: expected a list of "gdn" / "mla",'
                             f' got {_show(types)}')
        if len(types) != num_layers:
            raise ValueError(f"layer_types: expected {num_layers} entries "
                             f"(num_layers), got {len(types)}")
        for i, kind in enumerate(types):
            if not isinstance(kind, str) or kind not in LAYER_KINDS:
                raise ValueError(f'layer_types[{i}]: expected "gdn" or "mla",'
                                 f' got {_show(kind)}')
        kinds = list(types)
        config["layer_types"] = kinds
    else:
        pattern = raw["layer_pattern"]
        if not isinstance(pattern, str) or pattern not in LAYER_PATTERNS:
            raise ValueError(f'layer_pattern: expected "nenya", got '
                             f'{_show(pattern)}')
        kinds = _nenya(num_layers)
        config["layer_pattern"] = pattern

    section = _section(raw, "gdn", _GDN_FIELDS, kinds)
    if section is not None:
        gdn = {key: _int_field(section, key, "gdn.") for key in _GDN_FIELDS}
        if gdn["num_heads"] * gdn["head_dim"] != d_model:
            raise ValueError(
                f"gdn.num_heads * gdn.head_dim: expected d_model = {d_model},"
                f" got {gdn['num_heads']} * {gdn['head_dim']} = "
                f"{gdn['num_heads'] * gdn['head_dim']}")
        config["gdn"] = gdn

    section = _section(raw, "mla", _MLA_FIELDS, kinds)
    if section is not None:
        p = "mla."
        config["mla"] = {
            "num_heads": _int_field(section, "num_heads", p),
            "q_lora_rank": _int_field(section, "q_lora_rank", p, minimum=0),
            "kv_lora_rank": _int_field(section, "kv_lora_rank", p),
            "qk_nope_head_dim": _int_field(section, "qk_nope_head_dim", p),
            "qk_rope_head_dim": _int_field(section, "qk_rope_head_dim", p,
                                           even=True),
            "v_head_dim": _int_field(section, "v_head_dim", p),
            "rope_theta": _positive_number(section, "rope_theta", p),
        }

    config["mlp_hidden_size"] = _int_field(raw, "mlp_hidden_size")
    config["norm_eps"] = _positive_number(raw, "norm_eps")
    tie = _require(raw, "tie_embeddings", "tie_embeddings",
                   "true or false")
    if not isinstance(tie, (bool, np.bool_)):
        raise ValueError(f"tie_embeddings: expected true or false, got "
                         f"{_show(tie)}")
    config["tie_embeddings"] = bool(tie)
    config["max_context"] = _int_field(raw, "max_context")
    tokenizer = _require(raw, "tokenizer", "tokenizer", '"bytes" or "ids"')
    if not isinstance(tokenizer, str) or tokenizer not in TOKENIZERS:
        raise ValueError(f'tokenizer: expected "bytes" or "ids", got '
                         f'{_show(tokenizer)}')
    config["tokenizer"] = tokenizer
    if tokenizer == "bytes" and config["vocab_size"] < 256:
        raise ValueError(f'vocab_size: expected >= 256 for tokenizer '
                         f'"bytes", got {config["vocab_size"]}')
    return config


def _reject_duplicates(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"{key}: given twice")
        result[key] = value
    return result


def load_config(path_or_dict):
    """The validated model description (a new dict, integers as int and
    numbers as float) from a JSON file or a mapping. ValueError naming the
    field (and the file) for anything that does not follow
    docs/model-description.md."""
    if isinstance(path_or_dict, (str, bytes, os.PathLike)):
        path = os.fsdecode(path_or_dict)
        try:
            with open(path, "rb") as f:
                text = f.read()
        except OSError as e:
            raise ValueError(f"{path}: cannot read the model description: "
                             f"{e.strerror or e}") from e
        try:
            raw = json.loads(text.decode("utf-8"),
                             object_pairs_hook=_reject_duplicates)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"{path}: not valid JSON: {e}") from None
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
        try:
            return _validate(raw)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
    if isinstance(path_or_dict, Mapping):
        return _validate(copy.deepcopy(dict(path_or_dict)))
    return _validate(path_or_dict)         # ValueError: not an object


def layer_kinds(config):
    """"gdn" / "mla" for every block."""
    config = load_config(config)
    if "layer_types" in config:
        return list(config["layer_types"])
    return _nenya(config["num_layers"])


# ----------------------------------------------------------------------------
# Weights
# ----------------------------------------------------------------------------

def _gdn_shapes(config):
    gdn = config["gdn"]
    d_out = gdn["num_heads"] * gdn["head_dim"]
    shapes = dict(layers.state_dict_shapes(config["d_model"], d_out,
                                           gdn["num_heads"]))
    for name in ("conv_q", "conv_k", "conv_v"):
        shapes[name + ".weight"] = (d_out, 1, gdn["conv_size"])
    return shapes


def _mla_shapes(config):
    mla = config["mla"]
    d, n = config["d_model"], mla["num_heads"]
    qk = mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"]
    rank = mla["q_lora_rank"]
    shapes = {}
    if rank == 0:
        shapes["q_proj.weight"] = (n * qk, d)
    else:
        shapes["q_a_proj.weight"] = (rank, d)
        shapes["q_a_layernorm.weight"] = (rank,)
        shapes["q_b_proj.weight"] = (n * qk, rank)
    shapes["kv_a_proj_with_mqa.weight"] = (
        mla["kv_lora_rank"] + mla["qk_rope_head_dim"], d)
    shapes["kv_a_layernorm.weight"] = (mla["kv_lora_rank"],)
    shapes["kv_b_proj.weight"] = (
        n * (mla["qk_nope_head_dim"] + mla["v_head_dim"]),
        mla["kv_lora_rank"])
    shapes["o_proj.weight"] = (d, n * mla["v_head_dim"])
    return shapes


def _mixer_prefix(i, kind):
    return f"model.layers.{i}." + ("linear_attn." if kind == "gdn"
                                   else "self_attn.")


def weight_shapes(config):
    """name -> shape (tuple) of every weight, in model order (embedding,
    blocks, final norm, LM head)."""
    config = load_config(config)
    d, vocab = config["d_model"], config["vocab_size"]
    hidden = config["mlp_hidden_size"]
    shapes = {"model.embed_tokens.weight": (vocab, d)}
    for i, kind in enumerate(layer_kinds(config)):
        block = f"model.layers.{i}."
        shapes[block + "input_layernorm.weight"] = (d,)
        mixer = _gdn_shapes(config) if kind == "gdn" else _mla_shapes(config)
        prefix = _mixer_prefix(i, kind)
        for name, shape in mixer.items():
            shapes[prefix + name] = shape
        shapes[block + "post_attention_layernorm.weight"] = (d,)
        shapes[block + "mlp.gate_proj.weight"] = (hidden, d)
        shapes[block + "mlp.up_proj.weight"] = (hidden, d)
        shapes[block + "mlp.down_proj.weight"] = (d, hidden)
    shapes["model.norm.weight"] = (d,)
    if not config["tie_embeddings"]:
        shapes["lm_head.weight"] = (vocab, d)
    return shapes


def validate_weights(config, tensors):
    """ValueError naming every missing, unexpected, wrongly shaped, non-float
    or non-finite tensor (one line each)."""
    config = load_config(config)
    if not isinstance(tensors, Mapping):
        raise ValueError(f"weights must be a mapping of name -> array, got "
                         f"{type(tensors).__name__}")
    expected = weight_shapes(config)
    problems = []
    for name, shape in expected.items():
        if name not in tensors:
            problems.append(f"{name}: missing (expected shape "
                            f"{list(shape)})")
    for name in tensors:
        if name not in expected:
            hint = (" (tie_embeddings is true: the LM head is "
                    "model.embed_tokens.weight)"
                    if name == "lm_head.weight" else "")
            problems.append(f"{name}: unexpected tensor{hint}")
    for name, shape in expected.items():
        if name not in tensors:
            continue
        value = np.asarray(tensors[name])
        if tuple(value.shape) != shape:
            problems.append(f"{name}: expected shape {list(shape)}, got "
                            f"{list(value.shape)}")
        elif not (np.issubdtype(value.dtype, np.floating)
                  or np.issubdtype(value.dtype, np.integer)):
            problems.append(f"{name}: expected a real array, got dtype "
                            f"{value.dtype}")
        else:
            bad = ~np.isfinite(value)
            if name.endswith(".log_alpha"):
                bad &= ~(value == -np.inf)   # A = exp(-inf) = 0: no decay
            if np.any(bad):
                problems.append(f"{name}: holds non-finite values")
    if problems:
        raise ValueError("weights do not match the model description: "
                         + "; ".join(problems))


def init_weights(config, seed=0):
    """Deterministic float32 weights (name -> array, weight_shapes order):

    - every Linear (MLP, MLA projections, untied LM head): PyTorch's
      default U(-1/sqrt(fan_in), 1/sqrt(fan_in)), no biases;
    - the embedding: N(0, 1) (nn.Embedding's default);
    - every norm weight: ones;
    - GDN mixers: gdn.layers.init_gated_deltanet (the design document's
      module, biases included); with conv_size != 4 the convs' weights and
      biases are redrawn as U(-1/sqrt(conv_size), 1/sqrt(conv_size)).

    Every part draws from its own generator seeded by (seed, part, layer),
    so a layer's weights do not depend on the other layers.
    """
    config = load_config(config)
    if not _is_int(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    seed = int(seed)
    shapes = weight_shapes(config)
    weights = {}

    def uniform(rng, name):
        shape = shapes[name]
        bound = 1.0 / math.sqrt(shape[1])
        weights[name] = rng.uniform(-bound, bound, shape)

    weights["model.embed_tokens.weight"] = np.random.default_rng(
        [seed, 0]).standard_normal(shapes["model.embed_tokens.weight"])
    for i, kind in enumerate(layer_kinds(config)):
        block = f"model.layers.{i}."
        prefix = _mixer_prefix(i, kind)
        if kind == "gdn":
            gdn = config["gdn"]
            params = layers.init_gated_deltanet(
                [seed, 1, i], config["d_model"],
                gdn["num_heads"] * gdn["head_dim"], gdn["num_heads"])
            if gdn["conv_size"] != layers.KERNEL_SIZE:
                rng = np.random.default_rng([seed, 2, i])
                bound = 1.0 / math.sqrt(gdn["conv_size"])
                for conv in ("conv_k", "conv_v", "conv_q"):
                    for part in (".weight", ".bias"):
                        shape = shapes[prefix + conv + part]
                        params[conv + part] = rng.uniform(-bound, bound,
                                                          shape)
            for name, value in params.items():
                weights[prefix + name] = value
        else:
            rng = np.random.default_rng([seed, 3, i])
            for name in _mla_shapes(config):
                if name.endswith("layernorm.weight"):
                    weights[prefix + name] = np.ones(shapes[prefix + name])
                else:
                    uniform(rng, prefix + name)
        rng = np.random.default_rng([seed, 4, i])
        for name in ("gate_proj", "up_proj", "down_proj"):
            uniform(rng, block + f"mlp.{name}.weight")
        for name in ("input_layernorm", "post_attention_layernorm"):
            weights[block + name + ".weight"] = np.ones(shapes[block + name
                                                               + ".weight"])
    weights["model.norm.weight"] = np.ones(shapes["model.norm.weight"])
    if "lm_head.weight" in shapes:
        uniform(np.random.default_rng([seed, 5]), "lm_head.weight")
    return {name: np.ascontiguousarray(weights[name], dtype=np.float32)
            for name in shapes}


def cache_bytes(config, context_length, batch_size=1):
    """The cache in float32 bytes (docs/model-description.md):

        {"gdn": {"layers", "per_layer", "bytes"},
         "mla": {"layers", "per_token", "per_layer", "bytes"},
         "total": bytes}

    per_layer is per sequence at `context_length` tokens; bytes counts every
    layer of the kind and `batch_size` sequences. A GDN layer's cache does not
    depend on the context length, an MLA layer's grows linearly with it.
    """
    config = load_config(config)
    for name, value in (("context_length", context_length),
                        ("batch_size", batch_size)):
        if not _is_int(value) or value < 0:
            raise ValueError(f"{name}: expected an integer >= 0, got "
                             f"{value!r}")
    kinds = layer_kinds(config)
    num_gdn, num_mla = kinds.count("gdn"), kinds.count("mla")
    gdn_layer = 0
    if "gdn" in config:
        gdn = config["gdn"]
        heads, head_dim = gdn["num_heads"], gdn["head_dim"]
        d_out = heads * head_dim
        gdn_layer = (heads * head_dim * head_dim * F32_BYTES
                     + 3 * (gdn["conv_size"] - 1) * d_out * F32_BYTES)
    mla_token = 0
    if "mla" in config:
        mla = config["mla"]
        mla_token = (mla["kv_lora_rank"] + mla["qk_rope_head_dim"]) \
            * F32_BYTES
    mla_layer = mla_token * int(context_length)
    result = {
        "gdn": {"layers": num_gdn, "per_layer": gdn_layer,
                "bytes": num_gdn * gdn_layer * int(batch_size)},
        "mla": {"layers": num_mla, "per_token": mla_token,
                "per_layer": mla_layer,
                "bytes": num_mla * mla_layer * int(batch_size)},
    }
    result["total"] = result["gdn"]["bytes"] + result["mla"]["bytes"]
    return result


def default_weights_path(config_path):
    """model.safetensors beside the JSON file."""
    return os.path.join(os.path.dirname(os.path.abspath(
        os.fspath(config_path))), "model.safetensors")


def load_model(config_path, weights_path=None):
    """(config, weights): the validated description and its safetensors
    weights (float32), checked against each other."""
    from . import safetensors
    config = load_config(config_path)
    if weights_path is None:
        weights_path = default_weights_path(config_path)
    weights = safetensors.load(weights_path)
    try:
        validate_weights(config, weights)
    except ValueError as e:
        raise ValueError(f"{os.fspath(weights_path)}: {e}") from None
    return config, weights


# ----------------------------------------------------------------------------
# Tokenizer "bytes"
# ----------------------------------------------------------------------------

def byte_tokenize(text):
    """Token ids of a str (its UTF-8 bytes) or of bytes."""
    if isinstance(text, str):
        text = text.encode("utf-8")
    return list(bytes(text))


def byte_detokenize(ids, errors="replace"):
    """The text of byte token ids (UTF-8; invalid sequences per `errors`).
    ValueError for an id outside 0..255."""
    ids = [int(i) for i in np.asarray(ids, dtype=np.int64).reshape(-1)]
    for position, token in enumerate(ids):
        if not 0 <= token <= 255:
            raise ValueError(f"token {token} at position {position} is not a "
                             f"byte (tokenizer \"bytes\" decodes ids 0..255)")
    return bytes(ids).decode("utf-8", errors=errors)


# ----------------------------------------------------------------------------
# float64 reference
# ----------------------------------------------------------------------------

class ModelReference:
    """The model of a description and its weights in float64 numpy.

        model = ModelReference(config, weights)
        logits = model.prefill(ids)        # ids [B, T] -> [B, T, vocab]
        next_logits = model.decode(ids_t)  # ids_t [B] -> [B, vocab]

    `prefill` starts a new sequence; `decode` continues it from the caches
    (or starts one from empty caches). `caches[i]` is, for a GDN block,
    {"state": [B, H, D, D], "conv_q" / "conv_k" / "conv_v":
    [B, conv_size - 1, d_out]} (the projections before the conv of the last
    conv_size - 1 tokens, zeros before the first token) and, for an MLA
    block, {"latent": [B, T, kv_lora_rank] (after kv_a_layernorm),
    "k_rope": [B, T, qk_rope_head_dim] (rotated)}. `position` counts the
    tokens seen.
    """

    def __init__(self, config, weights):
        self.config = load_config(config)
        validate_weights(self.config, weights)
        self.kinds = layer_kinds(self.config)
        shapes = weight_shapes(self.config)
        w = {name: np.asarray(weights[name], dtype=np.float64)
             for name in shapes}
        self.embedding = w["model.embed_tokens.weight"]
        self.head = w["model.embed_tokens.weight" if
                      self.config["tie_embeddings"] else "lm_head.weight"]
        self.final_norm = w["model.norm.weight"]
        self.blocks = []
        for i, kind in enumerate(self.kinds):
            block = f"model.layers.{i}."
            prefix = _mixer_prefix(i, kind)
            self.blocks.append({
                "input_layernorm": w[block + "input_layernorm.weight"],
                "post_attention_layernorm":
                    w[block + "post_attention_layernorm.weight"],
                "mlp": {n: w[block + f"mlp.{n}.weight"]
                        for n in ("gate_proj", "up_proj", "down_proj")},
                "mixer": {name[len(prefix):]: value
                          for name, value in w.items()
                          if name.startswith(prefix)},
            })
        self.reset()

    def reset(self):
        """Forgets the sequence."""
        self.caches = None
        self.position = 0
        self.batch_size = None

    def _empty_caches(self, batch):
        caches = []
        for kind in self.kinds:
            if kind == "gdn":
                gdn = self.config["gdn"]
                d_out = gdn["num_heads"] * gdn["head_dim"]
                conv = (batch, gdn["conv_size"] - 1, d_out)
                caches.append({
                    "state": np.zeros((batch, gdn["num_heads"],
                                       gdn["head_dim"], gdn["head_dim"])),
                    "conv_q": np.zeros(conv), "conv_k": np.zeros(conv),
                    "conv_v": np.zeros(conv)})
            else:
                mla = self.config["mla"]
                caches.append({
                    "latent": np.zeros((batch, 0, mla["kv_lora_rank"])),
                    "k_rope": np.zeros((batch, 0,
                                        mla["qk_rope_head_dim"]))})
        return caches

    def _ids(self, token_ids, ndim, what):
        ids = np.asarray(token_ids)
        if ids.ndim != ndim or ids.size == 0:
            raise ValueError(f"token_ids must be a non-empty {what}, got "
                             f"shape {ids.shape}")
        if not (np.issubdtype(ids.dtype, np.integer) or ids.dtype == object):
            raise ValueError(f"token_ids must be integers, got dtype "
                             f"{ids.dtype}")
        ids = ids.astype(np.int64)
        vocab = self.config["vocab_size"]
        bad = (ids < 0) | (ids >= vocab)
        if np.any(bad):
            raise ValueError(f"token id {int(ids[bad][0])} outside the "
                             f"vocabulary 0..{vocab - 1}")
        tokens = ids.shape[1] if ndim == 2 else 1
        if self.position + tokens > self.config["max_context"]:
            limit = self.config["max_context"]
            raise ValueError(f"max_context: {self.position + tokens} tokens "
                             f"exceed the model's {limit}")
        return ids

    def prefill(self, token_ids):
        """Logits [B, T, vocab] (float64) of a new sequence token_ids
        [B, T]; the caches then hold the sequence."""
        self.reset()
        ids = self._ids(token_ids, 2, "[B, T] array")
        self.batch_size = ids.shape[0]
        self.caches = self._empty_caches(self.batch_size)
        return self._forward(ids, prefill=True)

    def decode(self, token_ids):
        """Logits [B, vocab] (float64) of the next token of each sequence,
        token_ids [B], continuing from the caches."""
        ids = self._ids(token_ids, 1, "[B] array")
        if self.caches is None:
            self.batch_size = ids.shape[0]
            self.caches = self._empty_caches(self.batch_size)
        elif ids.shape[0] != self.batch_size:
            raise ValueError(f"token_ids: expected {self.batch_size} tokens "
                             f"(the batch of the caches), got "
                             f"{ids.shape[0]}")
        return self._forward(ids[:, None], prefill=False)[:, 0]

    def cache_nbytes(self):
        """{"gdn": bytes, "mla": bytes} of one sequence's caches counted as
        float32 (compare cache_bytes)."""
        result = {"gdn": 0, "mla": 0}
        for kind, cache in zip(self.kinds, self.caches or ()):
            result[kind] += sum(v.size for v in cache.values()) \
                * F32_BYTES // self.batch_size
        return result

    def _forward(self, ids, prefill):
        eps = self.config["norm_eps"]
        x = self.embedding[ids]                                # [B, T, d]
        for i, (kind, block) in enumerate(zip(self.kinds, self.blocks)):
            h = reference.rms_norm(x, block["input_layernorm"], eps)
            if kind == "gdn":
                x = x + self._gdn(h, block["mixer"], self.caches[i], prefill)
            else:
                x = x + self._mla(h, block["mixer"], self.caches[i])
            h = reference.rms_norm(x, block["post_attention_layernorm"], eps)
            mlp = block["mlp"]
            x = x + reference.swiglu_mlp(h, mlp["gate_proj"], mlp["up_proj"],
                                         mlp["down_proj"])
        self.position += ids.shape[1]
        return reference.rms_norm(x, self.final_norm, eps) @ self.head.T

    def _gdn(self, h, p, cache, prefill):
        """The GDN mixer, its caches updated in place."""
        heads = self.config["gdn"]["num_heads"]
        convs = [conv for _, conv in reference.GDN_PROJECTIONS]
        if prefill:
            y, cache["state"], conv_state = reference.gated_deltanet(
                h, p, heads, GDN_NORM_EPS)
        else:
            y, cache["state"], conv_state = reference.gated_deltanet_step(
                h[:, 0], p, heads, {c: cache[c] for c in convs},
                cache["state"], GDN_NORM_EPS)
            y = y[:, None]
        cache.update(conv_state)
        return y

    def _mla(self, h, p, cache):
        """The MLA mixer, its caches grown in place."""
        y, latent, k_rope = reference.mla(
            h, p, self.config["mla"], self.config["norm_eps"],
            cache["latent"], cache["k_rope"])
        cache["latent"] = np.concatenate([cache["latent"], latent], axis=1)
        cache["k_rope"] = np.concatenate([cache["k_rope"], k_rope], axis=1)
        return y
