"""gdn.safetensors: round trips (f32, bf16), the file layout, atomic writes
and every malformed-file error, which must name the file and the tensor."""

import json
import os
import re

import numpy as np
import pytest

from gdn import safetensors
from gdn.mlir import round_to_element_type


def _tensors(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "b.matrix": rng.standard_normal((5, 7)).astype(np.float32),
        "a.vector": (1e3 * rng.standard_normal(11)).astype(np.float32),
        "c.conv": rng.uniform(-0.5, 0.5, (6, 1, 4)).astype(np.float32),
        "d.scalar": np.float32(3.25),
        "e.empty": np.zeros((0, 3), np.float32),
        "f.tiny": np.array([1e-30, -1e-41, np.inf, -np.inf], np.float32),
    }


def _header(path):
    with open(path, "rb") as f:
        length = int.from_bytes(f.read(8), "little")
        return length, json.loads(f.read(length))


def _write_raw(path, header, data=b"", length=None):
    """A hand-made file: header (an object, or the raw header bytes) and the
    data section; `length` overrides the 8-byte header length."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write((len(raw) if length is None else length).to_bytes(8,
                                                                  "little"))
        f.write(raw)
        f.write(data)
    return str(path)


def _entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape),
            "data_offsets": list(offsets)}


def test_round_trip_f32_is_exact(tmp_path):
    tensors = _tensors()
    path = tmp_path / "w.safetensors"
    safetensors.save(path, tensors)
    loaded = safetensors.load(path)
    assert sorted(loaded) == sorted(tensors)
    for name, value in tensors.items():
        assert loaded[name].dtype == np.float32
        assert loaded[name].shape == np.shape(value)
        np.testing.assert_array_equal(loaded[name], value)


def test_round_trip_bf16_rounds_to_nearest_even(tmp_path):
    tensors = _tensors(1)
    tensors["g.ties"] = np.array(
        [1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, -(1 + 2.0 ** -8), 1 + 2.0 ** -7,
         3.0e38, 1 + 2.0 ** -8 + 2.0 ** -20], np.float32)
    path = tmp_path / "w.safetensors"
    safetensors.save(path, tensors, dtype="bf16")
    loaded = safetensors.load(path)
    for name, value in tensors.items():
        flat = np.asarray(value, np.float32).reshape(-1)
        _, expected = round_to_element_type(flat, "bf16")
        expected = expected.reshape(np.shape(value))
        assert loaded[name].dtype == np.float32
        np.testing.assert_array_equal(loaded[name], expected)
    np.testing.assert_array_equal(
        loaded["g.ties"][:4], [1.0, 1 + 2.0 ** -6, -1.0, 1 + 2.0 ** -7])
    assert np.isfinite(loaded["g.ties"][4])
    assert loaded["g.ties"][5] == np.float32(1 + 2.0 ** -7)  # above the tie
    _, header = _header(path)
    assert {e["dtype"] for n, e in header.items()} == {"BF16"}
    # Widening the stored values again changes nothing.
    safetensors.save(path, loaded, dtype="bf16")
    again = safetensors.load(path)
    for name in loaded:
        np.testing.assert_array_equal(again[name], loaded[name])


def test_bf16_keeps_nan_a_nan(tmp_path):
    bits = np.array([0x7FFFFFFF, 0xFFFFFFFF, 0x7FC00000], np.uint32)
    path = tmp_path / "nan.safetensors"
    safetensors.save(path, {"x": bits.view(np.float32)}, dtype="bf16")
    x = safetensors.load(path)["x"]
    assert np.all(np.isnan(x))
    assert list(np.signbit(x)) == [False, True, False]


def test_layout_sorted_contiguous_aligned(tmp_path):
    tensors = _tensors(2)
    path = tmp_path / "w.safetensors"
    safetensors.save(path, tensors, metadata={"format": "pt"})
    length, header = _header(path)
    assert length % 8 == 0
    assert header.pop("__metadata__") == {"format": "pt"}
    names = sorted(tensors)
    assert list(header) == names
    offset = 0
    for name in names:
        entry = header[name]
        assert entry["dtype"] == "F32"
        assert entry["shape"] == list(np.shape(tensors[name]))
        size = 4 * int(np.prod(np.shape(tensors[name])))
        assert entry["data_offsets"] == [offset, offset + size]
        offset += size
    assert os.path.getsize(path) == 8 + length + offset
    raw = open(path, "rb").read()
    begin = 8 + length + header["b.matrix"]["data_offsets"][0]
    np.testing.assert_array_equal(
        np.frombuffer(raw[begin:begin + 4 * 35], "<f4").reshape(5, 7),
        tensors["b.matrix"])
    _, metadata = safetensors.load_with_metadata(path)
    assert metadata == {"format": "pt"}


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "w.safetensors"
    safetensors.save(path, {"x": np.ones(3, np.float32)})
    before = path.read_bytes()

    def broken_replace(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(safetensors.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        safetensors.save(path, {"x": np.zeros(5, np.float32)})
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["w.safetensors"]
    safetensors.save(path, {"y": np.zeros(5, np.float32)})
    assert list(safetensors.load(path)) == ["y"]
    assert os.listdir(tmp_path) == ["w.safetensors"]


@pytest.mark.parametrize("kwargs,tensors,message", [
    ({"dtype": "f16"}, {"x": np.ones(2)}, "dtype must be one of"),
    ({}, {"__metadata__": np.ones(2)}, "reserved"),
    ({}, {"": np.ones(2)}, "non-empty strings"),
    ({}, {"x": np.array(["a"])}, "tensor 'x': expected a real numeric"),
    ({}, {"x": np.ones(2, np.complex64)}, "tensor 'x'"),
    ({"metadata": {"a": 1}}, {"x": np.ones(2)}, "metadata must be"),
])
def test_save_rejects(tmp_path, kwargs, tensors, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        safetensors.save(tmp_path / "w.safetensors", tensors, **kwargs)
    assert os.listdir(tmp_path) == []


def _expect(path, pattern, tensor=None):
    with pytest.raises(ValueError) as info:
        safetensors.load(path)
    message = str(info.value)
    assert message.startswith(str(path) + ": "), message
    if tensor is not None:
        assert f"tensor {tensor!r}" in message, message
    assert re.search(pattern, message), message


@pytest.mark.parametrize("size", [0, 5])
def test_file_shorter_than_eight_bytes(tmp_path, size):
    path = tmp_path / "short.safetensors"
    path.write_bytes(b"\x01" * size)
    _expect(path, rf"{size} bytes, shorter than the 8-byte header length")


def test_header_length_past_end(tmp_path):
    path = _write_raw(tmp_path / "w.safetensors", {"x": _entry()},
                      data=b"\0" * 8, length=10 ** 6)
    _expect(path, r"header length 1000000 runs past the end of the file")


@pytest.mark.parametrize("raw", [b"{not json", b"\xff\xfe{}", b""])
def test_header_not_json(tmp_path, raw):
    path = _write_raw(tmp_path / "w.safetensors", raw)
    _expect(path, "header is not valid JSON")


@pytest.mark.parametrize("header", [[1, 2], "x", 3])
def test_header_not_an_object(tmp_path, header):
    path = _write_raw(tmp_path / "w.safetensors", header)
    _expect(path, "header must be a JSON object")


def test_duplicate_tensor_name(tmp_path):
    raw = (b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
           b'"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}')
    path = _write_raw(tmp_path / "w.safetensors", raw, data=b"\0" * 8)
    _expect(path, "appears twice", tensor="w")


@pytest.mark.parametrize("entry,pattern", [
    ([1, 2], "expected an object with dtype, shape and data_offsets"),
    ({"shape": [2], "data_offsets": [0, 8]}, "missing 'dtype'"),
    ({"dtype": "F32", "data_offsets": [0, 8]}, "missing 'shape'"),
    ({"dtype": "F32", "shape": [2]}, "missing 'data_offsets'"),
    (_entry(dtype="F64"), r'unsupported dtype "F64"'),
    (_entry(dtype="I8"), r'unsupported dtype "I8"'),
    (_entry(dtype=5), r"unsupported dtype 5"),
    ({**_entry(), "shape": "2"}, "shape must be a list of non-negative"),
    (_entry(shape=(-2,)), "shape must be a list of non-negative"),
    (_entry(shape=(2.0,)), "shape must be a list of non-negative"),
    (_entry(shape=(True, 2)), "shape must be a list of non-negative"),
    ({**_entry(), "data_offsets": "0,8"}, "data_offsets must be"),
    ({**_entry(), "data_offsets": [0, 4, 8]}, "data_offsets must be"),
    ({**_entry(), "data_offsets": [0.0, 8]}, "data_offsets must be"),
    ({**_entry(), "data_offsets": [-8, 0]}, "data_offsets must be"),
    ({**_entry(), "data_offsets": [8, 0]}, "data_offsets must be"),
    (_entry(shape=(3,)), r"hold 8 bytes, but shape \[3\] of F32 needs 12"),
    (_entry(dtype="BF16"), r"hold 8 bytes, but shape \[2\] of BF16 needs 4"),
    (_entry(offsets=(8, 16)), r"run past the end of the data section "
                              r"\(8 bytes; truncated file\?\)"),
])
def test_bad_tensor_entry(tmp_path, entry, pattern):
    header = {"ok": _entry(offsets=(0, 0), shape=(0,)), "bad.tensor": entry}
    path = _write_raw(tmp_path / "w.safetensors", header, data=b"\0" * 8)
    _expect(path, pattern, tensor="bad.tensor")


def test_overlapping_offsets(tmp_path):
    header = {"first": _entry(shape=(2,), offsets=(0, 8)),
              "second": _entry(shape=(2,), offsets=(4, 12))}
    path = _write_raw(tmp_path / "w.safetensors", header, data=b"\0" * 12)
    _expect(path, r"overlap those of tensor 'first' \[0, 8\]",
            tensor="second")


def test_truncated_file(tmp_path):
    path = tmp_path / "w.safetensors"
    safetensors.save(path, _tensors())
    raw = path.read_bytes()
    path.write_bytes(raw[:-5])
    _expect(path, "run past the end of the data section", tensor="f.tiny")
    # Cut inside the header: the header length runs past the end.
    path.write_bytes(raw[:20])
    _expect(path, "header length .* runs past the end of the file")


def test_bad_metadata(tmp_path):
    header = {"__metadata__": {"a": 1}, "x": _entry()}
    path = _write_raw(tmp_path / "w.safetensors", header, data=b"\0" * 8)
    _expect(path, "__metadata__ must be an object of string values")


def test_hand_made_file_with_padding_and_gaps(tmp_path):
    """Spaces after the header and unused bytes between tensors are
    accepted; values are read little-endian at their offsets; F16 (which
    gdn-compile also reads) is widened."""
    header = {"x": _entry(shape=(2,), offsets=(4, 12)),
              "y": _entry(dtype="BF16", shape=(1, 2), offsets=(12, 16)),
              "z": _entry(dtype="F16", shape=(2,), offsets=(16, 20))}
    raw = json.dumps(header).encode() + b"   "
    data = (b"\xaa" * 4 + np.array([1.5, -2.0], "<f4").tobytes()
            + np.array([0x3F80, 0xC040], "<u2").tobytes()
            + np.array([0.5, -65504.0], "<f2").tobytes())
    path = _write_raw(tmp_path / "w.safetensors", raw, data=data)
    loaded = safetensors.load(path)
    np.testing.assert_array_equal(loaded["x"], [1.5, -2.0])
    np.testing.assert_array_equal(loaded["y"], [[1.0, -3.0]])
    np.testing.assert_array_equal(loaded["z"], [0.5, -65504.0])
    assert all(v.dtype == np.float32 for v in loaded.values())
    assert safetensors.load_with_metadata(path)[1] is None
