"""Copies a Hugging Face fixture checkpoint to OUT and breaks it one way:

    break_checkpoint.py FIXTURE OUT MUTATION

MUTATION: none, missing-shard, index-names-missing-file,
tensor-not-in-shard, wrong-shape, wrong-dtype, hidden-size-string,
mixture-of-experts, model-type-llama, rope-scaling, unknown-tensor.
"""

import json
import os
import shutil
import struct
import sys

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    header.pop("__metadata__", None)
    return header, data


def write_safetensors(path, header, data):
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def replace_tensor(path, name, array, dtype):
    """Rewrites the file with tensor `name` replaced by `array` stored as
    `dtype` ("F32" or "F16")."""
    header, data = read_safetensors(path)
    tensors = {}
    for key, entry in header.items():
        begin, end = entry["data_offsets"]
        tensors[key] = (entry["dtype"], entry["shape"], data[begin:end])
    raw = array.astype("<f4" if dtype == "F32" else "<f2").tobytes()
    tensors[name] = (dtype, list(array.shape), raw)
    header, blob, offset = {}, b"", 0
    for key, (kind, shape, raw) in sorted(tensors.items()):
        header[key] = {"dtype": kind, "shape": shape,
                       "data_offsets": [offset, offset + len(raw)]}
        blob += raw
        offset += len(raw)
    write_safetensors(path, header, blob)


def edit_config(out, edit):
    path = os.path.join(out, "config.json")
    with open(path) as f:
        config = json.load(f)
    edit(config)
    with open(path, "w") as f:
        json.dump(config, f, indent=2)


def edit_index(out, edit):
    path = os.path.join(out, "model.safetensors.index.json")
    with open(path) as f:
        index = json.load(f)
    edit(index["weight_map"])
    with open(path, "w") as f:
        json.dump(index, f, indent=2)


def main():
    fixture, out, mutation = sys.argv[1:]
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(fixture, out)
    single = os.path.join(out, "model.safetensors")
    a_log = "model.layers.0.linear_attn.A_log"
    if mutation == "none":
        pass
    elif mutation == "missing-shard":
        os.remove(os.path.join(out, "model-00002-of-00005.safetensors"))
    elif mutation == "index-names-missing-file":
        edit_index(out, lambda m: m.update(
            {"model.language_model.norm.weight": "model-99.safetensors"}))
    elif mutation == "tensor-not-in-shard":
        def move(weight_map):
            name = "model.language_model.norm.weight"
            shards = sorted(set(weight_map.values()) - {weight_map[name]})
            weight_map[name] = shards[0]
        edit_index(out, move)
    elif mutation == "wrong-shape":
        replace_tensor(single, a_log, np.zeros(5, np.float32), "F32")
    elif mutation == "wrong-dtype":
        header, _ = read_safetensors(single)
        replace_tensor(single, a_log,
                       np.zeros(header[a_log]["shape"], np.float32), "F16")
    elif mutation == "unknown-tensor":
        replace_tensor(single, "model.layers.0.linear_attn.extra",
                       np.zeros(3, np.float32), "F32")
    elif mutation == "hidden-size-string":
        edit_config(out, lambda c: c.update(hidden_size="64"))
    elif mutation == "mixture-of-experts":
        edit_config(out, lambda c: c.update(num_experts=8))
    elif mutation == "model-type-llama":
        edit_config(out, lambda c: c.update(model_type="llama"))
    elif mutation == "rope-scaling":
        edit_config(out, lambda c: c["rope_parameters"].update(
            rope_type="yarn", factor=4.0))
    else:
        sys.exit(f"unknown mutation {mutation}")


if __name__ == "__main__":
    main()
