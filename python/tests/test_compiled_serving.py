"""Packed sequences and pools of states in the compiled ops (gdn.delta_rule
with cu_seqlens / state_indices / write_indices, gdn.delta_rule_step with
state_indices / write_indices), against the float64 recurrence run sequence
by sequence, and their argument checks."""

import os

import numpy as np
import pytest

import gdn
from gdn import inputs, reference

F32_BUDGET = 1e-5
F16_OUTPUT_BUDGET = 2e-3


@pytest.fixture(scope="module", autouse=True)
def module_cache_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        if not os.environ.get("GDN_CACHE_DIR"):
            mp.setenv("GDN_CACHE_DIR",
                      str(tmp_path_factory.mktemp("gdn-cache")))
        yield


def _assert_close(name, actual, expected, budget):
    ratio, max_rel = reference.relative_error(actual, expected)
    assert ratio <= budget and max_rel <= budget, (
        f"{name}: relative error {ratio:.3g} (l2), {max_rel:.3g} (max) "
        f"> {budget:g}")


def _offsets(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)


def _packed_inputs(seed, lengths, heads, value_heads, key_dim, value_dim,
                   dtype=np.float32, regime="design"):
    return inputs.delta_rule_inputs(seed, 1, int(sum(lengths)), heads,
                                    value_heads, key_dim, value_dim,
                                    regime=regime, dtype=dtype)


def _sequence_reference(d, start, end, initial, scale):
    """float64 outputs [1, end - start, Hv, V] and final state [Hv, K, V] of
    tokens [start, end) of the packed inputs d from `initial` [Hv, K, V]."""
    part = {n: d[n][:, start:end].astype(np.float64)
            for n in ("q", "k", "v", "g", "beta")}
    o, s = reference.delta_rule(part["q"], part["k"], part["v"], part["g"],
                                part["beta"], initial[None], scale=scale)
    return o, s[0]


# (lengths, H, Hv, K, V, dtype, with initial states)
_PACKED_CASES = [
    ([0, 1, 63, 64, 65, 1000], 2, 4, 16, 8, np.float32, True),
    ([5, 0, 0, 130, 1], 1, 1, 64, 64, np.float32, False),
    ([64, 7, 129], 2, 4, 64, 32, np.float16, True),
    ([0, 0, 0], 2, 4, 16, 8, np.float32, True),
]


@pytest.mark.parametrize("lengths,h,hv,k,v,dtype,with_initial",
                         _PACKED_CASES)
def test_packed_sequences_match_reference(lengths, h, hv, k, v, dtype,
                                          with_initial):
    d = _packed_inputs(1, lengths, h, hv, k, v, dtype)
    cu = _offsets(lengths)
    rng = np.random.default_rng(7)
    n = len(lengths)
    initial = (rng.standard_normal((n, hv, k, v)).astype(np.float32)
               if with_initial else None)
    scale = k ** -0.5
    o, final = gdn.delta_rule(d["q"], d["k"], d["v"], d["g"], d["beta"],
                              initial_state=initial, scale=scale,
                              cu_seqlens=cu)
    assert o.shape == d["v"].shape and o.dtype == d["v"].dtype
    assert final.shape == (n, hv, k, v) and final.dtype == np.float32
    budget = F32_BUDGET if dtype == np.float32 else F16_OUTPUT_BUDGET
    for i in range(n):
        start = initial[i] if with_initial else np.zeros((hv, k, v))
        ro, rs = _sequence_reference(d, cu[i], cu[i + 1], start, scale)
        if cu[i + 1] > cu[i]:
            _assert_close(f"o of sequence {i}", o[:, cu[i]:cu[i + 1]], ro,
                          budget)
        _assert_close(f"final state of sequence {i}", final[i], rs,
                      F32_BUDGET if dtype == np.float32 else 2e-3)


def test_packed_equals_dense_prefill_per_sequence():
    # The packed call and a dense call per sequence run the same chunked
    # code on the same tokens: equal to rounding.
    lengths = [70, 3, 128]
    d = _packed_inputs(3, lengths, 2, 4, 16, 8)
    cu = _offsets(lengths)
    o, final = gdn.delta_rule(d["q"], d["k"], d["v"], d["g"], d["beta"],
                              cu_seqlens=cu)
    for i in range(len(lengths)):
        part = [d[n][:, cu[i]:cu[i + 1]] for n in ("q", "k", "v", "g",
                                                   "beta")]
        od, sd = gdn.delta_rule(*part)
        np.testing.assert_allclose(o[:, cu[i]:cu[i + 1]], od, rtol=1e-6,
                                   atol=1e-6)
        np.testing.assert_allclose(final[i], sd[0], rtol=1e-6, atol=1e-6)


def _expected_pool(pool, finals, write):
    expected = pool.astype(np.float64)
    for i, slot in enumerate(write):
        if slot >= 0:
            expected[slot] = finals[i]
    return expected


@pytest.mark.parametrize("packed", [False, True])
def test_pool_prefill_reads_and_writes_slots(packed):
    h, hv, k, v = 2, 4, 16, 8
    rng = np.random.default_rng(11)
    slots = 9
    pool = rng.standard_normal((slots, hv, k, v)).astype(np.float32)
    before = pool.copy()
    # Shuffled slots, a slot read twice (and written by its first reader,
    # after every read), an empty entry, separate write slots.
    read = np.array([3, 3, -1, 0, 8, 5], np.int32)
    write = np.array([3, 7, -1, 1, 2, 5], np.int32)
    if packed:
        lengths = [0, 1, 63, 64, 65, 200]
        d = _packed_inputs(5, lengths, h, hv, k, v)
        cu = _offsets(lengths)
        spans = list(zip(cu[:-1], cu[1:]))
    else:
        d = inputs.delta_rule_inputs(5, len(read), 70, h, hv, k, v,
                                     regime="design")
        cu = None
        spans = None
    o, final = gdn.delta_rule(d["q"], d["k"], d["v"], d["g"], d["beta"],
                              initial_state=pool, scale=0.5, cu_seqlens=cu,
                              state_indices=read, write_indices=write)
    assert final is pool
    finals = []
    for i, slot in enumerate(read):
        start = before[slot] if slot >= 0 else np.zeros((hv, k, v))
        if packed:
            ro, rs = _sequence_reference(d, spans[i][0], spans[i][1], start,
                                         0.5)
            if spans[i][1] > spans[i][0]:
                _assert_close(f"o of sequence {i}",
                              o[:, spans[i][0]:spans[i][1]], ro, F32_BUDGET)
        else:
            part = {n: d[n][i:i + 1].astype(np.float64)
                    for n in ("q", "k", "v", "g", "beta")}
            ro, rs = reference.delta_rule(part["q"], part["k"], part["v"],
                                          part["g"], part["beta"],
                                          start[None], scale=0.5)
            _assert_close(f"o of entry {i}", o[i:i + 1], ro, F32_BUDGET)
            rs = rs[0]
        finals.append(rs)
    expected = _expected_pool(before, finals, write)
    _assert_close("pool", pool, expected, F32_BUDGET)
    untouched = [s for s in range(slots) if s not in set(write.tolist())]
    np.testing.assert_array_equal(pool[untouched], before[untouched])


def test_pool_decode_steps_match_reference():
    h, hv, k, v = 2, 4, 16, 8
    rng = np.random.default_rng(13)
    slots, batch, steps = 12, 5, 6
    pool = rng.standard_normal((slots, hv, k, v)).astype(np.float32) * 0.1
    expected = pool.astype(np.float64)
    indices = np.array([10, -1, 2, 7, 0], np.int32)
    d = inputs.delta_rule_inputs(17, batch, steps, h, hv, k, v,
                                 regime="design")
    for t in range(steps):
        step = {n: d[n][:, t] for n in ("q", "k", "v", "g", "beta")}
        o, new = gdn.delta_rule_step(step["q"], step["k"], step["v"],
                                     step["g"], step["beta"], pool,
                                     state_indices=indices)
        assert new is pool
        for b, slot in enumerate(indices):
            start = expected[slot] if slot >= 0 else np.zeros((hv, k, v))
            ro, rs = reference.delta_rule_step(
                *[step[n][b:b + 1].astype(np.float64)
                  for n in ("q", "k", "v", "g", "beta")], start[None])
            _assert_close(f"o of entry {b} at step {t}", o[b], ro[0],
                          F32_BUDGET)
            if slot >= 0:
                expected[slot] = rs[0]
        _assert_close(f"pool after step {t}", pool, expected, F32_BUDGET)


def test_pool_decode_separate_write_slots():
    h, hv, k, v = 1, 2, 16, 16
    rng = np.random.default_rng(19)
    pool = rng.standard_normal((6, hv, k, v)).astype(np.float32)
    before = pool.copy()
    read = np.array([1, 1, 4, -1], np.int32)
    write = np.array([1, 5, -1, 0], np.int32)
    d = inputs.delta_rule_inputs(23, 4, 1, h, hv, k, v)
    step = [d[n][:, 0] for n in ("q", "k", "v", "g", "beta")]
    o, _ = gdn.delta_rule_step(*step, pool, state_indices=read,
                               write_indices=write)
    finals = []
    for b, slot in enumerate(read):
        start = before[slot] if slot >= 0 else np.zeros((hv, k, v))
        ro, rs = reference.delta_rule_step(
            *[x[b:b + 1].astype(np.float64) for x in step], start[None])
        _assert_close(f"o of entry {b}", o[b], ro[0], F32_BUDGET)
        finals.append(rs[0])
    _assert_close("pool", pool, _expected_pool(before, finals, write),
                  F32_BUDGET)
    for slot in (2, 3, 4):
        np.testing.assert_array_equal(pool[slot], before[slot])


# ----------------------------------------------------------------------------
# Argument checks: a clear error, and nothing written
# ----------------------------------------------------------------------------

def _small_packed(lengths=(3, 2)):
    d = _packed_inputs(29, list(lengths), 1, 2, 16, 8)
    return [d[n] for n in ("q", "k", "v", "g", "beta")]


@pytest.mark.parametrize("cu,message", [
    ([1, 3, 5], r"cu_seqlens\[0\] must be 0, got 1"),
    ([0, 3, 4], r"cu_seqlens\[-1\] must be the packed token count 5"),
    ([0, 4, 3, 5], r"must not decrease: cu_seqlens\[2\] = 3 < "
                   r"cu_seqlens\[1\] = 4"),
    ([], r"N \+ 1 >= 1 offsets"),
    ([[0, 5]], r"must be a 1-d array"),
])
def test_bad_offsets(cu, message):
    with pytest.raises(ValueError, match=message):
        gdn.delta_rule(*_small_packed(), cu_seqlens=np.array(cu, np.int32))


def test_offsets_must_be_integers():
    with pytest.raises(TypeError, match="cu_seqlens must be an integer"):
        gdn.delta_rule(*_small_packed(), cu_seqlens=np.array([0., 5.]))


def test_packed_needs_one_row():
    d = inputs.delta_rule_inputs(31, 2, 3, 1, 2, 16, 8)
    with pytest.raises(ValueError, match=r"packed into one row: q must have "
                                         r"shape \(1, total, H, K\)"):
        gdn.delta_rule(d["q"], d["k"], d["v"], d["g"], d["beta"],
                       cu_seqlens=np.array([0, 3, 6], np.int32))


def test_packed_initial_states_one_per_sequence():
    with pytest.raises(ValueError, match=r"initial_state must have shape "
                                         r"\(2, 2, 16, 8\)"):
        gdn.delta_rule(*_small_packed(),
                       initial_state=np.zeros((3, 2, 16, 8), np.float32),
                       cu_seqlens=np.array([0, 3, 5], np.int32))


@pytest.mark.parametrize("indices,message", [
    ([0, 4], r"state_indices\[1\] = 4 is not a slot of the pool of 4"),
    ([-2, 0], r"state_indices\[0\] = -2 is not a slot"),
    ([0], r"state_indices must have 2 entries"),
])
def test_bad_slots(indices, message):
    pool = np.zeros((4, 2, 16, 8), np.float32)
    before = pool.copy()
    with pytest.raises(ValueError, match=message):
        gdn.delta_rule(*_small_packed(), initial_state=pool,
                       cu_seqlens=np.array([0, 3, 5], np.int32),
                       state_indices=np.array(indices, np.int32))
    np.testing.assert_array_equal(pool, before)


def test_read_only_pool_is_refused():
    pool = np.zeros((4, 2, 16, 8), np.float32)
    pool.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gdn.delta_rule(*_small_packed(), initial_state=pool,
                       cu_seqlens=np.array([0, 3, 5], np.int32),
                       state_indices=np.array([0, 1], np.int32))
    d = inputs.delta_rule_inputs(37, 2, 1, 1, 2, 16, 8)
    step = [d[n][:, 0] for n in ("q", "k", "v", "g", "beta")]
    with pytest.raises(ValueError, match="read-only"):
        gdn.delta_rule_step(*step, pool,
                            state_indices=np.array([0, 1], np.int32))


def test_strided_pool_is_refused():
    pool = np.zeros((4, 2, 16, 16), np.float32)[..., ::2]
    with pytest.raises(ValueError, match="C-contiguous"):
        gdn.delta_rule(*_small_packed(), initial_state=pool,
                       cu_seqlens=np.array([0, 3, 5], np.int32),
                       state_indices=np.array([0, 1], np.int32))


def test_pool_needs_a_pool_and_write_needs_read():
    with pytest.raises(TypeError, match="state_indices needs initial_state"):
        gdn.delta_rule(*_small_packed(),
                       cu_seqlens=np.array([0, 3, 5], np.int32),
                       state_indices=np.array([0, 1], np.int32))
    with pytest.raises(TypeError, match="write_indices needs state_indices"):
        gdn.delta_rule(*_small_packed(),
                       cu_seqlens=np.array([0, 3, 5], np.int32),
                       write_indices=np.array([0, 1], np.int32))
    d = inputs.delta_rule_inputs(41, 2, 1, 1, 2, 16, 8)
    step = [d[n][:, 0] for n in ("q", "k", "v", "g", "beta")]
    with pytest.raises(TypeError, match="write_indices needs state_indices"):
        gdn.delta_rule_step(*step, np.zeros((2, 2, 16, 8), np.float32),
                            write_indices=np.array([0, 1], np.int32))


def test_pool_shape_is_checked():
    with pytest.raises(ValueError, match=r"must have shape \(S,\) \+ "
                                         r"\(2, 16, 8\)"):
        gdn.delta_rule(*_small_packed(),
                       initial_state=np.zeros((4, 2, 16, 4), np.float32),
                       cu_seqlens=np.array([0, 3, 5], np.int32),
                       state_indices=np.array([0, 1], np.int32))


# ----------------------------------------------------------------------------
# Raw gates (A_log, dt_bias)
# ----------------------------------------------------------------------------

def _raw_gates(seed, shape, value_heads, dtype):
    """Raw a and b as a Qwen-style layer projects them, and its A_log and
    dt_bias; and the float64 g and beta they stand for."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shape) * 3.0).astype(dtype)
    b = rng.standard_normal(shape).astype(dtype)
    # One head's a + dt_bias above 20, where softplus is the identity.
    a_log = np.log(rng.uniform(0.5, 8.0, value_heads)).astype(np.float32)
    dt_bias = rng.standard_normal(value_heads).astype(np.float32)
    dt_bias[-1] = 25.0
    x = a.astype(np.float64) + dt_bias.astype(np.float64)
    g = -np.exp(a_log.astype(np.float64)) * reference.softplus(x)
    beta = reference.sigmoid(b.astype(np.float64))
    return a, b, a_log, dt_bias, g, beta


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_raw_gates_prefill_and_pool_step(dtype):
    h, hv, k, v = 2, 4, 16, 8
    d = inputs.delta_rule_inputs(43, 2, 70, h, hv, k, v, dtype=dtype)
    a, b, a_log, dt_bias, g, beta = _raw_gates(47, (2, 70, hv), hv, dtype)
    o, final = gdn.delta_rule(d["q"], d["k"], d["v"], a, b, scale=0.25,
                              a_log=a_log, dt_bias=dt_bias)
    ro, rs = reference.delta_rule(
        *[d[n].astype(np.float64) for n in ("q", "k", "v")], g, beta,
        scale=0.25)
    budget = F32_BUDGET if dtype == np.float32 else F16_OUTPUT_BUDGET
    _assert_close("o", o, ro, budget)
    _assert_close("final state", final, rs, budget)

    pool = np.zeros((3, hv, k, v), np.float32)
    pool[1] = final[0]
    step = inputs.delta_rule_inputs(53, 2, 1, h, hv, k, v, dtype=dtype)
    a, b, a_log, dt_bias, g, beta = _raw_gates(59, (2, hv), hv, dtype)
    o, new = gdn.delta_rule_step(
        *[step[n][:, 0] for n in ("q", "k", "v")], a, b, pool,
        state_indices=np.array([1, -1], np.int32), a_log=a_log,
        dt_bias=dt_bias)
    ro, rs = reference.delta_rule_step(
        *[step[n][:1, 0].astype(np.float64) for n in ("q", "k", "v")],
        g[:1], beta[:1], final[:1].astype(np.float64))
    _assert_close("o after the step", o[:1], ro, budget)
    _assert_close("slot 1 after the step", pool[1], rs[0], budget)
    np.testing.assert_array_equal(pool[[0, 2]], 0.0)


def test_raw_gates_need_both():
    d = inputs.delta_rule_inputs(61, 1, 3, 1, 2, 16, 8)
    with pytest.raises(TypeError, match="need both a_log and dt_bias"):
        gdn.delta_rule(d["q"], d["k"], d["v"], d["g"], d["beta"],
                       a_log=np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=r"dt_bias must have shape \(2,\)"):
        gdn.delta_rule(d["q"], d["k"], d["v"], d["g"], d["beta"],
                       a_log=np.zeros(2, np.float32),
                       dt_bias=np.zeros(3, np.float32))


# ----------------------------------------------------------------------------
# bf16 state storage
# ----------------------------------------------------------------------------

def test_bf16_state_step_rounds_the_f32_step():
    # Widened when read, the f32 step, rounded when written: the f32 step
    # from the same (bf16) state, rounded, to one bf16 unit.
    from gdn.mlir import bf16_to_float32, float32_to_bf16
    from gdn.state_storage import BF16StateSteps
    h, hv, k, v = 2, 4, 16, 16
    steps = BF16StateSteps(h, hv, k, v, scale=0.25)
    d = inputs.delta_rule_inputs(67, 3, 1, h, hv, k, v, regime="design")
    step = [d[n][:, 0] for n in ("q", "k", "v", "g", "beta")]
    rng = np.random.default_rng(71)
    bits = float32_to_bf16(rng.standard_normal((3, hv, k, v))
                           .astype(np.float32))
    o16, new_bits = steps.step_bf16(*step, bits)
    o32, new32 = steps.step_f32(*step, bf16_to_float32(bits))
    np.testing.assert_allclose(o16, o32, rtol=1e-6, atol=1e-6)
    difference = np.abs(new_bits.astype(np.int32)
                        - float32_to_bf16(new32).astype(np.int32))
    assert difference.max() <= 1, "more than one bf16 unit from rounding"
    ro, rs = reference.delta_rule_step(
        *[x.astype(np.float64) for x in step], bf16_to_float32(bits),
        scale=0.25)
    _assert_close("o", o16, ro, 1e-5)
    _assert_close("bf16 state", bf16_to_float32(new_bits), rs, 8e-3)


def bf16_state_drift(steps, seed, batch, tokens, heads, value_heads, key_dim,
                     value_dim, regime):
    """Relative error (l2) of the bf16-stored state and of the outputs
    against the f32 state's, after `tokens` decode steps from zeros: (state
    at the end, largest state over the run, largest output over the run)."""
    from gdn.mlir import bf16_to_float32
    d = inputs.delta_rule_inputs(seed, batch, tokens, heads, value_heads,
                                 key_dim, value_dim, regime=regime)
    state32 = np.zeros((batch, value_heads, key_dim, value_dim), np.float32)
    bits = np.zeros(state32.shape, np.uint16)
    worst_state = worst_output = 0.0

    def relative(a, b):
        return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
    for t in range(tokens):
        step = [d[n][:, t] for n in ("q", "k", "v", "g", "beta")]
        o32, state32 = steps.step_f32(*step, state32)
        o16, bits = steps.step_bf16(*step, bits)
        end = relative(bf16_to_float32(bits), state32)
        worst_state = max(worst_state, end)
        worst_output = max(worst_output, relative(o16, o32))
    return end, worst_state, worst_output


@pytest.mark.parametrize("regime", ["design", "weak"])
def test_bf16_state_error_stays_bounded_over_4096_steps(regime):
    from gdn.state_storage import BF16StateSteps
    steps = BF16StateSteps(2, 4, 32, 32, scale=32 ** -0.5)
    end, worst_state, worst_output = bf16_state_drift(
        steps, 73, 1, 4096, 2, 4, 32, 32, regime)
    # bf16 keeps 8 bits of mantissa (a relative step of 2^-9 = 2e-3 per
    # rounding); the decay and the delta rule's correction keep the error
    # from growing with the steps.
    assert end < 2e-2 and worst_state < 2e-2 and worst_output < 2e-2, (
        f"{regime}: state {end:.3g} at the end, {worst_state:.3g} at "
        f"worst; outputs {worst_output:.3g} at worst")


# ----------------------------------------------------------------------------
# Speculative verification (gdn.delta_rule_verify)
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("pooled,gated,tokens",
                         [(False, False, 1), (True, False, 16),
                          (True, True, 5)])
def test_verify_states_equal_steps(pooled, gated, tokens):
    h, hv, k, v = 2, 4, 16, 8
    batch = 3
    d = inputs.delta_rule_inputs(79, batch, tokens, h, hv, k, v,
                                 regime="design")
    q, kk, vv = d["q"], d["k"], d["v"]
    if gated:
        g, beta, a_log, dt_bias, g64, beta64 = _raw_gates(
            83, (batch, tokens, hv), hv, np.float32)
        gates = dict(a_log=a_log, dt_bias=dt_bias)
    else:
        g, beta = d["g"], d["beta"]
        g64, beta64 = g.astype(np.float64), beta.astype(np.float64)
        gates = {}
    rng = np.random.default_rng(89)
    if pooled:
        state = rng.standard_normal((5, hv, k, v)).astype(np.float32)
        indices = np.array([4, -1, 1], np.int32)
        starts = [state[i] if i >= 0 else np.zeros((hv, k, v))
                  for i in indices]
        extra = dict(state_indices=indices)
    else:
        state = rng.standard_normal((batch, hv, k, v)).astype(np.float32)
        starts = list(state)
        extra = {}
    before = state.copy()
    o, states = gdn.delta_rule_verify(q, kk, vv, g, beta, state, scale=0.5,
                                      **extra, **gates)
    np.testing.assert_array_equal(state, before)
    assert states.shape == (batch, tokens, hv, k, v)
    for b in range(batch):
        s = np.asarray(starts[b], np.float64)[None]
        for t in range(tokens):
            ro, s = reference.delta_rule_step(
                q[b:b + 1, t].astype(np.float64),
                kk[b:b + 1, t].astype(np.float64),
                vv[b:b + 1, t].astype(np.float64), g64[b:b + 1, t],
                beta64[b:b + 1, t], s, scale=0.5)
            _assert_close(f"o of entry {b}, token {t}", o[b, t], ro[0],
                          F32_BUDGET)
            _assert_close(f"state of entry {b} after token {t}",
                          states[b, t], s[0], F32_BUDGET)


def test_verify_takes_at_most_16_tokens():
    d = inputs.delta_rule_inputs(97, 1, 17, 1, 2, 16, 8)
    with pytest.raises(ValueError, match="at most 16 draft tokens, got T = "
                                         "17"):
        gdn.delta_rule_verify(d["q"], d["k"], d["v"], d["g"], d["beta"],
                              np.zeros((1, 2, 16, 8), np.float32))


# ----------------------------------------------------------------------------
# Checkpoints for prefix caching
# ----------------------------------------------------------------------------

def _prefix_state(d, batch, start, end, initial):
    part = [d[n][batch:batch + 1, start:end].astype(np.float64)
            for n in ("q", "k", "v", "g", "beta")]
    return reference.delta_rule(*part, initial[None])[1][0]


@pytest.mark.parametrize("every,tokens", [(64, 200), (32, 64), (16, 15)])
def test_dense_checkpoints_equal_prefix_prefills(every, tokens):
    h, hv, k, v = 2, 4, 16, 8
    d = inputs.delta_rule_inputs(101, 2, tokens, h, hv, k, v,
                                 regime="design")
    initial = np.random.default_rng(103).standard_normal(
        (2, hv, k, v)).astype(np.float32)
    o, final, checkpoints = gdn.delta_rule(
        *[d[n] for n in ("q", "k", "v", "g", "beta")],
        initial_state=initial, checkpoint_every=every)
    assert checkpoints.shape == (2, tokens // every, hv, k, v)
    ro, rs = reference.delta_rule(
        *[d[n].astype(np.float64) for n in ("q", "k", "v", "g", "beta")],
        initial)
    _assert_close("o", o, ro, F32_BUDGET)
    _assert_close("final state", final, rs, F32_BUDGET)
    for b in range(2):
        for c in range(tokens // every):
            _assert_close(f"checkpoint {c} of entry {b}", checkpoints[b, c],
                          _prefix_state(d, b, 0, (c + 1) * every,
                                        initial[b]), F32_BUDGET)


def test_packed_pool_checkpoints_follow_one_another():
    h, hv, k, v = 2, 4, 16, 8
    every = 32
    lengths = [70, 0, 31, 32, 100]
    cu = _offsets(lengths)
    d = _packed_inputs(107, lengths, h, hv, k, v)
    rng = np.random.default_rng(109)
    pool = rng.standard_normal((8, hv, k, v)).astype(np.float32)
    before = pool.copy()
    slots = np.array([5, 1, -1, 0, 7], np.int32)
    o, final, checkpoints = gdn.delta_rule(
        *[d[n] for n in ("q", "k", "v", "g", "beta")], initial_state=pool,
        cu_seqlens=cu, state_indices=slots, checkpoint_every=every)
    assert final is pool
    assert checkpoints.shape == (int(cu[-1]) // every, hv, k, v)
    row = 0
    for n, length in enumerate(lengths):
        start = before[slots[n]] if slots[n] >= 0 else np.zeros((hv, k, v))
        for c in range(length // every):
            _assert_close(f"checkpoint {c} of sequence {n}", checkpoints[row],
                          _prefix_state(d, 0, cu[n], cu[n] + (c + 1) * every,
                                        start), F32_BUDGET)
            row += 1
    np.testing.assert_array_equal(checkpoints[row:], 0.0)


def test_checkpoint_every_is_checked():
    with pytest.raises(ValueError, match="checkpoint_every must be at least "
                                         "1, got 0"):
        gdn.delta_rule(*_small_packed(), checkpoint_every=0)
    with pytest.raises(TypeError, match="checkpoint_every must be an int"):
        gdn.delta_rule(*_small_packed(), checkpoint_every=2.5)
