"""Tests of the MLIR text helpers used by the execution tests."""

import numpy as np
import pytest

from gdn import mlir


def test_bf16_rounds_to_nearest_even():
    x = np.array([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.5, 1e-40],
                 dtype=np.float32)
    storage, values = mlir.round_to_element_type(x, "bf16")
    assert storage.dtype == np.uint16
    # 1 + 2^-8 is a tie and rounds to even (1.0); 1 + 3*2^-8 rounds up.
    np.testing.assert_array_equal(values[:4],
                                  [1.0, 1.0, 1.0 + 2**-6, -2.5])
    assert storage[0] == 0x3F80


def test_bf16_widens_exactly_and_keeps_nan_quiet():
    x = np.array([[0.0, -0.0], [3.0, np.inf]], dtype=np.float32)
    bits = mlir.float32_to_bf16(x)
    assert bits.shape == (2, 2) and bits.dtype == np.uint16
    np.testing.assert_array_equal(mlir.bf16_to_float32(bits), x)
    assert mlir.float32_to_bf16(np.float32(1.0)).shape == ()
    # A NaN whose bits would round up into -0.0 stays a NaN.
    nan = np.array([0x7FFFFFFF], np.uint32).view(np.float32)
    assert np.isnan(mlir.bf16_to_float32(mlir.float32_to_bf16(nan)))[0]


def test_tensor_type():
    assert mlir.tensor_type([2, 3]) == "tensor<2x3xf32>"
    assert mlir.tensor_type(["?", 4], "bf16") == "tensor<?x4xbf16>"
    assert mlir.tensor_type((2, 3, 4), "i64", (0, 1)) == "tensor<?x?x4xi64>"
    assert mlir.tensor_type((), "f16") == "tensor<f16>"


def test_unknown_element_type():
    with pytest.raises(ValueError, match="unsupported element type"):
        mlir.round_to_element_type([1.0], "f64")


def test_dense_constant_is_bit_exact():
    text = mlir.dense(np.array([[1.0, -2.0]], dtype=np.float32), "f32")
    assert text == ('arith.constant dense<"0x0000803F000000C0"> : '
                    'tensor<1x2xf32>')


def test_parse_printed_bits():
    printed = (
        "Unranked Memref base@ = 0x1 rank = 2 offset = 0 sizes = [1, 2] "
        "strides = [2, 1] data = \n[[1065353216,   -1073741824]]\n"
        "Unranked Memref base@ = 0x2 rank = 0 offset = 0 sizes = [] "
        "strides = [] data = \n[0]\n")
    first, second = mlir.parse_printed_bits(printed)
    np.testing.assert_array_equal(first, [[1.0, -2.0]])
    assert second.shape == () and second == 0.0


def test_program_types():
    q = np.zeros((2, 3, 1, 4), np.float32)
    v = np.zeros((2, 3, 2, 5), np.float32)
    g = np.zeros((2, 3, 2), np.float32)
    text, _ = mlir.delta_rule_program(q, q, v, g, g, element_type="bf16")
    assert ("gdn.delta_rule %q, %k, %v, %g, %beta {scale = 1.0 : f32} : "
            "(tensor<?x?x1x4xbf16>" in text)
    assert "-> (tensor<?x?x2x5xbf16>, tensor<?x2x4x5xf32>)" in text
    with pytest.raises(ValueError, match="needs a state"):
        mlir.delta_rule_program(q[:, 0], q[:, 0], v[:, 0], g[:, 0], g[:, 0],
                                step=True)
