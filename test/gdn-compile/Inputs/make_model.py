"""Writes a small GDN-only model description and weights for the
gdn-compile model tests, optionally corrupted in one way:

  make_model.py OUT_DIR [fault]

faults: missing-tensor, unexpected-tensor, wrong-shape, wrong-dtype,
truncated, overlapping-offsets, header-too-long, bad-json, bad-config;
hostile descriptions: duplicate-key, deep-nesting, leading-zero,
too-many-layers, huge-eps; hostile weights: nan-weight (one value of layer 1's W_key is NaN),
huge-weight (layer 1's input norm and W_key are 3e38 everywhere: finite,
but their products overflow), trailing-bytes,
unknown-entry-field, deep-header, zero-size-shared (a valid zero-size
tensor at an offset inside another tensor; the weights then have one
tensor too many)
"""

import json
import os
import struct
import sys

import numpy as np

CONFIG = {"vocab_size": 64, "d_model": 32, "num_layers": 2,
          "layer_types": ["gdn", "gdn"],
          "gdn": {"num_heads": 2, "head_dim": 16, "conv_size": 4},
          "mlp_hidden_size": 48, "norm_eps": 1e-6, "tie_embeddings": True,
          "max_context": 256, "tokenizer": "ids"}


def shapes(cfg):
    d, f = cfg["d_model"], cfg["mlp_hidden_size"]
    g = cfg["gdn"]
    h, hd, cs = g["num_heads"], g["head_dim"], g["conv_size"]
    out = h * hd
    s = {"model.embed_tokens.weight": (cfg["vocab_size"], d),
         "model.norm.weight": (d,)}
    for i in range(cfg["num_layers"]):
        p = f"model.layers.{i}."
        s[p + "input_layernorm.weight"] = (d,)
        s[p + "post_attention_layernorm.weight"] = (d,)
        s[p + "mlp.gate_proj.weight"] = (f, d)
        s[p + "mlp.up_proj.weight"] = (f, d)
        s[p + "mlp.down_proj.weight"] = (d, f)
        a = p + "linear_attn."
        for w in ("W_query", "W_key", "W_value", "gate"):
            s[a + w + ".weight"] = (out, d)
        s[a + "gate.bias"] = (out,)
        s[a + "out_proj.weight"] = (out, out)
        s[a + "out_proj.bias"] = (out,)
        for w in ("beta", "alpha"):
            s[a + w + ".weight"] = (h, d)
            s[a + w + ".bias"] = (h,)
        s[a + "log_alpha"] = (h,)
        for c in ("conv_q", "conv_k", "conv_v"):
            s[a + c + ".weight"] = (out, 1, cs)
            s[a + c + ".bias"] = (out,)
        s[a + "norm.weight"] = (hd,)
    return s


def main():
    out_dir, fault = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
    os.makedirs(out_dir, exist_ok=True)
    config = dict(CONFIG)
    if fault == "bad-config":
        config["gdn"] = dict(config["gdn"], num_heads=3)
    if fault == "too-many-layers":
        config.update(num_layers=1000000, layer_pattern="nenya",
                      misspelt_field=1)
        del config["layer_types"]
    if fault == "huge-eps":
        config["norm_eps"] = 1e300
    text = json.dumps(config)
    if fault == "duplicate-key":
        text = text.replace('"d_model": 32', '"d_model": 32, "d_model": 64')
    if fault == "leading-zero":
        text = text.replace('"max_context": 256', '"max_context": 0256')
    if fault == "deep-nesting":
        text = text[:-1] + ', "x": ' + "[" * 100000 + "]" * 100000 + "}"
    with open(os.path.join(out_dir, "model.json"), "w") as f:
        f.write(text)
    tensor_shapes = shapes(CONFIG)
    if fault == "missing-tensor":
        del tensor_shapes["model.layers.1.linear_attn.log_alpha"]
    if fault == "unexpected-tensor":
        tensor_shapes["model.layers.1.linear_attn.extra"] = (2,)
    if fault == "wrong-shape":
        tensor_shapes["model.layers.0.mlp.up_proj.weight"] = (32, 48)
    rng = np.random.default_rng(0)
    header, data = {}, b""
    for name in sorted(tensor_shapes):
        array = (0.1 * rng.standard_normal(tensor_shapes[name])).astype(
            np.float32)
        dtype = "F32"
        if fault == "wrong-dtype" and name == "model.norm.weight":
            array = array.astype(np.int32)
            dtype = "I32"
        if fault == "nan-weight" and name == "model.layers.1.linear_attn.W_key.weight":
            array.flat[3] = np.nan
        if fault == "huge-weight" and name in (
                "model.layers.1.linear_attn.W_key.weight",
                "model.layers.1.input_layernorm.weight"):
            array[...] = 3e38
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [len(data), len(data) + array.nbytes]}
        data += array.tobytes()
    if fault == "unknown-entry-field":
        header["model.norm.weight"]["extra"] = 1
    if fault == "zero-size-shared":
        begin, _ = header["model.norm.weight"]["data_offsets"]
        header["model.zero"] = {"dtype": "F32", "shape": [0],
                                "data_offsets": [begin + 4, begin + 4]}
    if fault == "overlapping-offsets":
        begin, end = header["model.norm.weight"]["data_offsets"]
        header["model.norm.weight"]["data_offsets"] = [begin - 4, end - 4]
    text = json.dumps(header).encode()
    if fault == "deep-header":
        text = text[:-1] + b', "x": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    if fault == "bad-json":
        text = text[:-1]
    length = len(text) + (1 << 40 if fault == "header-too-long" else 0)
    blob = struct.pack("<Q", length) + text + data
    if fault == "truncated":
        blob = blob[:-10]
    if fault == "trailing-bytes":
        blob += bytes(16)
    with open(os.path.join(out_dir, "model.safetensors"), "wb") as f:
        f.write(blob)


if __name__ == "__main__":
    main()
