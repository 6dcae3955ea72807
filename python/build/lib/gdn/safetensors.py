"""The safetensors format in pure Python + numpy (f32 and bf16 tensors).

A safetensors file is

    8 bytes        N, the header length (unsigned little-endian)
    N bytes        a JSON object: {name: {"dtype": "F32" | "BF16",
                                          "shape": [d0, d1, ...],
                                          "data_offsets": [begin, end]},
                                   "__metadata__": {str: str} (optional)}
    the rest       the data section: each tensor's little-endian row-major
                   bytes at [begin, end) relative to the section's start

`save` lays the tensors out contiguously in sorted-name order, pads the header
with spaces to a multiple of 8 bytes (as the reference implementation does,
so that the data section is aligned) and writes the file atomically (a
temporary file in the same folder, then os.replace). bf16 is float32 rounded
to nearest even, NaNs kept quiet NaNs (gdn.mlir.float32_to_bf16).

`load` returns float32 arrays (bf16, and f16 as gdn-compile also reads it,
widened exactly) after validating the header; every problem is a ValueError
naming the file and, where there is one, the tensor.
"""

import json
import math
import numbers
import os
import tempfile
from collections.abc import Mapping

import numpy as np

from .mlir import bf16_to_float32, round_to_element_type

__all__ = ["save", "load", "load_with_metadata", "DTYPES"]

# save()'s dtype argument -> the header's dtype string.
DTYPES = {"f32": "F32", "bf16": "BF16"}
# load() also reads F16 (widened), as gdn-compile's reader does.
_ITEMSIZE = {"F32": 4, "BF16": 2, "F16": 2}
_RAW = {"F32": "<f4", "BF16": "<u2", "F16": "<f2"}
_METADATA = "__metadata__"


# ----------------------------------------------------------------------------
# save
# ----------------------------------------------------------------------------

def _storage(name, value, dtype):
    """The little-endian bytes of one tensor stored as `dtype`."""
    array = np.asarray(value)
    if not (np.issubdtype(array.dtype, np.floating)
            or np.issubdtype(array.dtype, np.integer)
            or array.dtype == np.bool_):
        raise ValueError(f"tensor {name!r}: expected a real numeric array, "
                         f"got dtype {array.dtype}")
    storage, _ = round_to_element_type(array, dtype)
    storage = np.ascontiguousarray(storage)
    little = storage.dtype.newbyteorder("<")
    return array.shape, storage.astype(little, copy=False).tobytes()


def save(path, tensors, dtype="f32", metadata=None):
    """Writes `tensors` (name -> array) to `path` as safetensors.

    dtype: "f32" or "bf16" (every tensor is stored in it); metadata: an
    optional mapping of str -> str written as "__metadata__". Tensors are
    laid out contiguously in sorted-name order. The file is replaced
    atomically: readers see the old file or the complete new one.
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got "
                         f"{dtype!r}")
    if not isinstance(tensors, Mapping):
        raise TypeError(f"tensors must be a mapping of name -> array, got "
                        f"{type(tensors).__name__}")
    header = {}
    if metadata is not None:
        if not isinstance(metadata, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str)
                for k, v in metadata.items()):
            raise ValueError("metadata must be a mapping of str -> str")
        header[_METADATA] = dict(metadata)
    for name in tensors:
        if not isinstance(name, str) or not name:
            raise ValueError(f"tensor names must be non-empty strings, got "
                             f"{name!r}")
        if name == _METADATA:
            raise ValueError(f"{_METADATA!r} is reserved and cannot name a "
                             f"tensor")
    blobs = []
    offset = 0
    for name in sorted(tensors):
        shape, data = _storage(name, tensors[name], dtype)
        header[name] = {"dtype": DTYPES[dtype],
                        "shape": [int(d) for d in shape],
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False)
    encoded = text.encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)

    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".",
                                suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(len(encoded).to_bytes(8, "little"))
            f.write(encoded)
            for data in blobs:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


# ----------------------------------------------------------------------------
# load
# ----------------------------------------------------------------------------

class _Duplicate(Exception):
    pass


def _no_duplicates(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise _Duplicate(key)
        seen[key] = value
    return seen


def _is_count(value):
    """A JSON non-negative integer (not a bool)."""
    return (isinstance(value, numbers.Integral) and not isinstance(value, bool)
            and value >= 0)


def _read(path):
    path = os.fspath(path)

    def fail(message, tensor=None):
        where = f"{path}: tensor {tensor!r}: " if tensor is not None else \
            f"{path}: "
        raise ValueError(where + message)

    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            fail(f"not a safetensors file: {size} bytes, shorter than the "
                 f"8-byte header length")
        length = int.from_bytes(f.read(8), "little")
        if length > size - 8:
            fail(f"header length {length} runs past the end of the file "
                 f"({size} bytes; truncated or not a safetensors file)")
        raw = f.read(length)
        try:
            header = json.loads(raw.decode("utf-8"),
                                object_pairs_hook=_no_duplicates)
        except _Duplicate as e:
            fail("appears twice in the header", str(e))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            fail(f"header is not valid JSON: {e}")
        if not isinstance(header, dict):
            fail(f"header must be a JSON object, got "
                 f"{type(header).__name__}")

        metadata = header.pop(_METADATA, None)
        if metadata is not None and not (
                isinstance(metadata, dict) and all(
                    isinstance(v, str) for v in metadata.values())):
            fail(f"{_METADATA} must be an object of string values")

        base = 8 + length
        data_size = size - base
        entries = []
        for name, info in header.items():
            if not isinstance(info, dict):
                fail("expected an object with dtype, shape and data_offsets, "
                     f"got {json.dumps(info)}", name)
            for key in ("dtype", "shape", "data_offsets"):
                if key not in info:
                    fail(f"missing {key!r}", name)
            dtype = info["dtype"]
            if dtype not in _ITEMSIZE:
                fail(f"unsupported dtype {json.dumps(dtype)} (expected "
                     f"\"F32\", \"BF16\" or \"F16\")", name)
            shape = info["shape"]
            if not isinstance(shape, list) or not all(map(_is_count, shape)):
                fail(f"shape must be a list of non-negative integers, got "
                     f"{json.dumps(shape)}", name)
            offsets = info["data_offsets"]
            if (not isinstance(offsets, list) or len(offsets) != 2
                    or not all(map(_is_count, offsets))
                    or offsets[0] > offsets[1]):
                fail(f"data_offsets must be [begin, end] with 0 <= begin <= "
                     f"end, got {json.dumps(offsets)}", name)
            begin, end = offsets
            numel = math.prod(shape)
            needed = numel * _ITEMSIZE[dtype]
            if end - begin != needed:
                fail(f"data_offsets [{begin}, {end}] hold {end - begin} "
                     f"bytes, but shape {shape} of {dtype} needs {needed}",
                     name)
            if end > data_size:
                fail(f"data_offsets [{begin}, {end}] run past the end of the "
                     f"data section ({data_size} bytes; truncated file?)",
                     name)
            entries.append((name, dtype, shape, begin, end))

        spans = sorted((e for e in entries if e[4] > e[3]),
                       key=lambda e: (e[3], e[4]))
        for previous, current in zip(spans, spans[1:]):
            if current[3] < previous[4]:
                fail(f"data_offsets [{current[3]}, {current[4]}] overlap "
                     f"those of tensor {previous[0]!r} "
                     f"[{previous[3]}, {previous[4]}]", current[0])

        tensors = {}
        for name, dtype, shape, begin, end in entries:
            numel = math.prod(shape)
            buffer = np.empty(numel, dtype=_RAW[dtype])
            f.seek(base + begin)
            if f.readinto(memoryview(buffer).cast("B")) != end - begin:
                fail("data ends early (file changed while reading?)", name)
            if dtype == "BF16":
                value = bf16_to_float32(buffer)
            else:
                value = buffer.astype(np.float32, copy=False)
            tensors[name] = value.reshape(shape)
    return tensors, dict(metadata) if metadata is not None else None


def load(path):
    """name -> float32 array of every tensor of the safetensors file at
    `path` (bf16 widened exactly), in header order. ValueError naming the
    file and the tensor for a malformed file."""
    return _read(path)[0]


def load_with_metadata(path):
    """(tensors, metadata): load's result and the "__metadata__" mapping
    (None when the file has none)."""
    return _read(path)
