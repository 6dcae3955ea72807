"""gdn.delta_rule and gdn.delta_rule_step on torch CPU tensors (where torch
is installed): torch in, torch out, the same numbers as for numpy arrays and
the float64 reference, an in-place state updated in the caller's tensor,
and clear errors for what the CPU path cannot take."""

import numpy as np
import pytest

import gdn
from gdn import inputs, reference

torch = pytest.importorskip("torch")

SHAPE = dict(batch=2, tokens=37, heads=2, value_heads=4, key_dim=16,
             value_dim=8)


def _operands(seed, **shape):
    x = inputs.delta_rule_inputs(seed, **shape)
    return [x[n] for n in ("q", "k", "v", "g", "beta")]


def test_prefill_on_torch_tensors():
    arrays = _operands(0, **SHAPE)
    tensors = [torch.from_numpy(a.copy()) for a in arrays]
    o, state = gdn.delta_rule(*tensors)
    assert isinstance(o, torch.Tensor) and isinstance(state, torch.Tensor)
    assert o.dtype == torch.float32 and tuple(o.shape) == arrays[2].shape
    o_np, state_np = gdn.delta_rule(*arrays)
    np.testing.assert_array_equal(o.numpy(), o_np)
    np.testing.assert_array_equal(state.numpy(), state_np)
    _, expected = reference.delta_rule(*arrays)
    assert max(reference.relative_error(state.numpy(), expected)) < 1e-5


def test_mixed_numpy_and_torch_and_grad():
    arrays = _operands(1, **SHAPE)
    q = torch.from_numpy(arrays[0].copy()).requires_grad_(True)
    o, _ = gdn.delta_rule(q, *arrays[1:])
    assert isinstance(o, torch.Tensor) and not o.requires_grad
    np.testing.assert_array_equal(o.numpy(), gdn.delta_rule(*arrays)[0])


def test_step_in_place_on_the_callers_tensor():
    arrays = _operands(2, **dict(SHAPE, tokens=1))
    step = [a[:, 0].copy() for a in arrays]
    start = np.random.default_rng(2).standard_normal(
        (2, 4, 16, 8)).astype(np.float32)
    state = torch.from_numpy(start.copy())
    o, new_state = gdn.delta_rule_step(*[torch.from_numpy(a) for a in step],
                                       state, inplace=True)
    assert new_state is state
    expected_o, expected = reference.delta_rule_step(*step, start)
    assert max(reference.relative_error(state.numpy(), expected)) < 1e-5
    assert max(reference.relative_error(o.numpy(), expected_o)) < 1e-5


def test_refused_tensors():
    arrays = _operands(3, **SHAPE)
    tensors = [torch.from_numpy(a.copy()) for a in arrays]
    with pytest.raises(TypeError, match="v is a bfloat16 torch tensor"):
        gdn.delta_rule(tensors[0], tensors[1], tensors[2].bfloat16(),
                       *tensors[3:])
    meta = tensors[0].to("meta")
    with pytest.raises(TypeError, match="q is a torch tensor on meta"):
        gdn.delta_rule(meta, *tensors[1:])
