"""Tests of the compiled ops (gdn.delta_rule, gdn.delta_rule_step): numerics
against the float64 reference, argument validation, the on-disk library
cache and compiler discovery.

The numeric tests share one cache directory for the whole session (a
temporary one, or $GDN_CACHE_DIR when set, to keep libraries across runs),
and the cases are grouped so that only a few configurations get compiled.
"""

import os
import stat
import subprocess

import numpy as np
import pytest

import gdn
from gdn import cache, compiled, inputs, mlir, reference

F32_BUDGET = 1e-5
F16_OUTPUT_BUDGET = 2e-3


@pytest.fixture(scope="session", autouse=True)
def session_cache_dir(tmp_path_factory):
    """One cache directory for every test of the session (tests of the
    cache itself override it with monkeypatch)."""
    with pytest.MonkeyPatch.context() as mp:
        path = os.environ.get("GDN_CACHE_DIR")
        if not path:
            path = str(tmp_path_factory.mktemp("gdn-cache"))
            mp.setenv("GDN_CACHE_DIR", path)
        yield path


def _scale(kind, key_dim):
    return 1.0 if kind == "one" else key_dim ** -0.5


def _assert_close(name, actual, expected, budget):
    ratio, max_rel = reference.relative_error(actual, expected)
    assert ratio <= budget and max_rel <= budget, (
        f"{name}: relative error {ratio:.3g} (l2), {max_rel:.3g} (max) "
        f"> {budget:g}")


def _copies(d):
    return {n: None if x is None else x.copy() for n, x in d.items()}


def _assert_unchanged(before, after):
    for name in before:
        if before[name] is not None:
            np.testing.assert_array_equal(after[name], before[name],
                                          err_msg=f"{name} was modified")


# ----------------------------------------------------------------------------
# Prefill against the reference
# ----------------------------------------------------------------------------

# Compile keys (H, Hv, K, V, chunk size, scale): each group of cases shares one
# library. Every value of every dimension appears at least once.
_KEYS = {
    "a": (1, 1, 16, 16, 16, "one"),
    "b": (4, 4, 64, 64, 64, "inv_sqrt_k"),
    "c": (2, 4, 64, 128, 32, "one"),
    "d": (4, 4, 128, 128, 64, "inv_sqrt_k"),
    "e": (2, 4, 16, 16, 64, "one"),
    "f": (1, 1, 64, 128, 16, "inv_sqrt_k"),
    "g": (2, 4, 128, 128, 32, "one"),
    "h": (4, 4, 16, 16, 32, "inv_sqrt_k"),
    "i": (1, 1, 64, 64, 64, "one"),
}

# (key, T, B, initial state, gate regime)
_PREFILL_CASES = [
    ("a", 1, 1, False, "none"),
    ("a", 2, 3, True, "weak"),
    ("a", 63, 1, True, "design"),
    ("a", 65, 3, False, "moderate"),
    ("a", 300, 1, True, "design"),
    ("b", 1, 3, True, "moderate"),
    ("b", 64, 1, False, "weak"),
    ("b", 127, 3, True, "design"),
    ("b", 300, 1, False, "none"),
    ("c", 2, 1, True, "design"),
    ("c", 63, 3, False, "none"),
    ("c", 64, 1, True, "moderate"),
    ("c", 127, 1, True, "weak"),
    ("d", 1000, 1, True, "design"),
    ("d", 65, 3, True, "weak"),
    ("d", 1, 1, False, "moderate"),
    ("e", 1, 3, True, "design"),
    ("e", 64, 3, False, "weak"),
    ("e", 300, 3, True, "moderate"),
    ("f", 65, 1, True, "none"),
    ("f", 127, 3, False, "moderate"),
    ("f", 2, 1, False, "design"),
    ("g", 63, 1, False, "moderate"),
    ("g", 300, 1, True, "weak"),
    ("h", 64, 3, False, "design"),
    ("h", 1, 1, True, "weak"),
    ("h", 127, 1, True, "none"),
    ("i", 65, 1, True, "design"),
    ("i", 1000, 1, False, "weak"),
    ("i", 2, 3, True, "none"),
]


def _case_id(case):
    key, tokens, batch, init, regime = case
    h, hv, kd, vd, chunk, scale = _KEYS[key]
    return (f"T{tokens}-B{batch}-H{h}x{hv}-K{kd}V{vd}-c{chunk}-{scale}-"
            f"{regime}-{'h0' if init else 'zero'}")


@pytest.mark.parametrize("case", _PREFILL_CASES, ids=_case_id)
def test_prefill_matches_reference(case):
    key, tokens, batch, init, regime = case
    heads, value_heads, key_dim, value_dim, chunk, scale_kind = _KEYS[key]
    scale = _scale(scale_kind, key_dim)
    seed = _PREFILL_CASES.index(case)
    d = inputs.delta_rule_inputs(seed, batch, tokens, heads, value_heads,
                                 key_dim, value_dim, regime,
                                 initial_state=init)
    before = _copies(d)
    o_ref, s_ref = reference.delta_rule(d["q"], d["k"], d["v"], d["g"],
                                        d["beta"], d["initial_state"], scale)
    o, s = gdn.delta_rule(d["q"], d["k"], d["v"], d["g"], d["beta"],
                          d["initial_state"], scale=scale, chunk_size=chunk)
    assert o.shape == d["v"].shape and o.dtype == np.float32
    assert s.shape == (batch, value_heads, key_dim, value_dim)
    assert s.dtype == np.float32
    _assert_close("o", o, o_ref, F32_BUDGET)
    _assert_close("final state", s, s_ref, F32_BUDGET)
    _assert_unchanged(before, d)


def test_prefill_sample_covers_every_value():
    seen = {name: set() for name in ("T", "B", "heads", "dims", "chunk",
                                     "init", "regime", "scale")}
    for key, tokens, batch, init, regime in _PREFILL_CASES:
        h, hv, kd, vd, chunk, scale = _KEYS[key]
        for name, value in (("T", tokens), ("B", batch), ("heads", (h, hv)),
                            ("dims", (kd, vd)), ("chunk", chunk),
                            ("init", init), ("regime", regime),
                            ("scale", scale)):
            seen[name].add(value)
    assert seen["T"] == {1, 2, 63, 64, 65, 127, 300, 1000}
    assert seen["B"] == {1, 3}
    assert seen["heads"] == {(1, 1), (4, 4), (2, 4)}
    assert seen["dims"] == {(16, 16), (64, 64), (64, 128), (128, 128)}
    assert seen["chunk"] == {16, 32, 64}
    assert seen["init"] == {False, True}
    assert seen["regime"] == {"none", "weak", "moderate", "design"}
    assert seen["scale"] == {"one", "inv_sqrt_k"}
    assert ("d", 1000) in {(c[0], c[1]) for c in _PREFILL_CASES}


# ----------------------------------------------------------------------------
# Decode steps
# ----------------------------------------------------------------------------

# (key, T, B, initial state, regime); keys with chunk 64, the chunk size the
# step entry point is compiled with, so prefill and steps share a library.
_DECODE_CASES = [
    ("b", 65, 3, True, "design"),
    ("e", 63, 1, False, "moderate"),
    ("d", 1, 1, True, "weak"),
    ("i", 64, 3, False, "none"),
]


@pytest.mark.parametrize("case", _DECODE_CASES, ids=_case_id)
def test_prefill_then_steps_equals_longer_prefill(case):
    key, tokens, batch, init, regime = case
    heads, value_heads, key_dim, value_dim, chunk, scale_kind = _KEYS[key]
    assert chunk == 64
    scale = _scale(scale_kind, key_dim)
    steps = 3
    d = inputs.delta_rule_inputs(200 + _DECODE_CASES.index(case), batch,
                                 tokens + steps, heads, value_heads, key_dim,
                                 value_dim, regime, initial_state=init)
    names = ("q", "k", "v", "g", "beta")
    head = [np.ascontiguousarray(d[n][:, :tokens]) for n in names]
    h0 = d["initial_state"]
    # (Each call gets its own copy of the state: this test is about the
    # numbers; test_inputs_are_not_modified checks the inputs.)
    own = lambda state: None if state is None else state.copy()
    o_long, s_long = gdn.delta_rule(*[d[n] for n in names], own(h0),
                                    scale=scale)
    o_head, state = gdn.delta_rule(*head, own(h0), scale=scale)
    _assert_close("prefill o", o_head, o_long[:, :tokens], F32_BUDGET)
    for t in range(tokens, tokens + steps):
        token = [np.ascontiguousarray(d[n][:, t]) for n in names]
        o_t, state = gdn.delta_rule_step(*token, own(state), scale=scale)
        assert o_t.shape == (batch, value_heads, value_dim)
        _assert_close(f"step o at t={t}", o_t, o_long[:, t], F32_BUDGET)
    _assert_close("state after steps", state, s_long, F32_BUDGET)
    o_ref, s_ref = reference.delta_rule(*[d[n] for n in names], h0, scale)
    _assert_close("long prefill o", o_long, o_ref, F32_BUDGET)
    _assert_close("long prefill state", s_long, s_ref, F32_BUDGET)


@pytest.mark.parametrize("key,batch,regime", [("e", 3, "design"),
                                              ("e", 1, "weak"),
                                              ("b", 2, "moderate")])
def test_step_matches_reference(key, batch, regime):
    heads, value_heads, key_dim, value_dim, _, scale_kind = _KEYS[key]
    scale = _scale(scale_kind, key_dim)
    d = inputs.delta_rule_inputs(300 + batch, batch, 1, heads, value_heads,
                                 key_dim, value_dim, regime,
                                 initial_state=True)
    args = [np.ascontiguousarray(d[n][:, 0])
            for n in ("q", "k", "v", "g", "beta")]
    state = d["initial_state"]
    before = [a.copy() for a in args] + [state.copy()]
    o_ref, s_ref = reference.delta_rule_step(*args, state, scale)
    o, s = gdn.delta_rule_step(*args, state, scale=scale)
    assert o.shape == (batch, value_heads, value_dim) and o.dtype == np.float32
    assert s.shape == state.shape and s.dtype == np.float32
    _assert_close("step o", o, o_ref, F32_BUDGET)
    _assert_close("step state", s, s_ref, F32_BUDGET)
    for name, a, b in zip(("q", "k", "v", "g", "beta", "state"),
                          args + [state], before):
        np.testing.assert_array_equal(a, b, err_msg=f"{name} was modified")


@pytest.mark.parametrize("key,batch", [("e", 3), ("b", 2)])
def test_in_place_steps_match_reference(key, batch):
    """inplace=True: the new state overwrites the state (the C ABI lets the
    out-parameter alias the input); several chained steps stay exact."""
    heads, value_heads, key_dim, value_dim, _, scale_kind = _KEYS[key]
    scale = _scale(scale_kind, key_dim)
    steps = 4
    d = inputs.delta_rule_inputs(400 + batch, batch, steps, heads,
                                 value_heads, key_dim, value_dim, "design",
                                 initial_state=True)
    state = d["initial_state"].copy()
    ref_state = d["initial_state"]
    for t in range(steps):
        args = [np.ascontiguousarray(d[n][:, t])
                for n in ("q", "k", "v", "g", "beta")]
        o, returned = gdn.delta_rule_step(*args, state, scale=scale,
                                          inplace=True)
        assert returned is state
        o_ref, ref_state = reference.delta_rule_step(*args, ref_state, scale)
        _assert_close(f"in-place step {t} o", o, o_ref, F32_BUDGET)
        _assert_close(f"in-place step {t} state", state, ref_state,
                      F32_BUDGET)


def test_inputs_are_not_modified():
    """The compiled code reads its inputs only (the state in particular is
    not updated in place; the new state goes to a fresh array)."""
    heads, value_heads, key_dim, value_dim, chunk, _ = _KEYS["e"]
    d = inputs.delta_rule_inputs(500, 2, 10, heads, value_heads, key_dim,
                                 value_dim, "design", initial_state=True)
    before = _copies(d)
    _, s = gdn.delta_rule(d["q"], d["k"], d["v"], d["g"], d["beta"],
                          d["initial_state"], chunk_size=chunk)
    _assert_unchanged(before, d)
    token = [np.ascontiguousarray(d[n][:, 0])
             for n in ("q", "k", "v", "g", "beta")]
    snapshot = s.copy()
    gdn.delta_rule_step(*token, s)
    np.testing.assert_array_equal(s, snapshot, err_msg="state was modified")


# ----------------------------------------------------------------------------
# float16
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("beta_dtype", [np.float32, np.float16])
def test_float16(beta_dtype):
    d = inputs.delta_rule_inputs(400, 2, 70, 2, 4, 64, 64, "design",
                                 initial_state=True, dtype=np.float16)
    d["beta"] = d["beta"].astype(beta_dtype)
    # The reference sees exactly the f16 values the compiled code sees.
    o_ref, s_ref = reference.delta_rule(d["q"], d["k"], d["v"], d["g"],
                                        d["beta"], d["initial_state"])
    o, s = gdn.delta_rule(d["q"], d["k"], d["v"], d["g"], d["beta"],
                          d["initial_state"].copy())
    assert o.dtype == np.float16 and s.dtype == np.float32
    _assert_close("f16 o", o, o_ref, F16_OUTPUT_BUDGET)
    _assert_close("f16 state", s, s_ref, F32_BUDGET)
    token = [np.ascontiguousarray(d[n][:, -1])
             for n in ("q", "k", "v", "g", "beta")]
    o1_ref, s1_ref = reference.delta_rule_step(*token, s)
    o1, s1 = gdn.delta_rule_step(*token, s.copy())
    assert o1.dtype == np.float16
    _assert_close("f16 step o", o1, o1_ref, F16_OUTPUT_BUDGET)
    _assert_close("f16 step state", s1, s1_ref, F32_BUDGET)


# ----------------------------------------------------------------------------
# Validation (no compiler needed: everything is rejected before compiling)
# ----------------------------------------------------------------------------

@pytest.fixture
def no_compiler(monkeypatch, tmp_path):
    monkeypatch.setenv("GDN_COMPILE", str(tmp_path / "no-such-gdn-compile"))


def _prefill_args(batch=2, tokens=5, heads=4, value_heads=4, key_dim=64,
                  value_dim=32):
    d = inputs.delta_rule_inputs(7, batch, tokens, heads, value_heads,
                                 key_dim, value_dim, initial_state=True)
    return dict(q=d["q"], k=d["k"], v=d["v"], g=d["g"], beta=d["beta"],
                initial_state=d["initial_state"])


def _step_args(batch=2, heads=2, value_heads=4, key_dim=16, value_dim=8):
    d = inputs.delta_rule_inputs(8, batch, 1, heads, value_heads, key_dim,
                                 value_dim, initial_state=True)
    return dict(q=d["q"][:, 0].copy(), k=d["k"][:, 0].copy(),
                v=d["v"][:, 0].copy(), g=d["g"][:, 0].copy(),
                beta=d["beta"][:, 0].copy(), state=d["initial_state"])


def _f32(shape):
    return np.zeros(shape, np.float32)


def _strided(shape, axis=-1):
    """A non-contiguous float32 view of the given shape."""
    big = list(shape)
    big[axis] *= 2
    index = [slice(None)] * len(shape)
    index[axis] = slice(None, None, 2)
    return np.zeros(big, np.float32)[tuple(index)]


_PREFILL_ERRORS = [
    ("q ndim", dict(q=_f32((2, 5, 64))), r"q must be a 4-d array"),
    ("beta ndim", dict(beta=_f32((2, 5, 4, 1))), r"beta must be a 3-d array"),
    ("state ndim", dict(initial_state=_f32((2, 4, 64))),
     r"initial_state must be a 4-d array"),
    ("k shape", dict(k=_f32((2, 5, 4, 32))),
     r"k must have shape \(2, 5, 4, 64\) like q, got \(2, 5, 4, 32\)"),
    ("v shape", dict(v=_f32((3, 5, 4, 32))),
     r"v must have shape \(2, 5, Hv, V\).*got \(3, 5, 4, 32\)"),
    ("g shape", dict(g=_f32((2, 5, 3))),
     r"g must have shape \(2, 5, 4\).*got \(2, 5, 3\)"),
    ("beta shape", dict(beta=_f32((2, 6, 4))),
     r"beta must have shape \(2, 5, 4\).*got \(2, 6, 4\)"),
    ("state shape", dict(initial_state=_f32((2, 4, 32, 64))),
     r"initial_state must have shape \(2, 4, 64, 32\).*got \(2, 4, 32, 64\)"),
    ("grouping", dict(v=_f32((2, 5, 6, 32)), g=_f32((2, 5, 6)),
                      beta=_f32((2, 5, 6)),
                      initial_state=_f32((2, 6, 64, 32))),
     r"Hv = 6 .* multiple of .* H = 4"),
    ("q dtype", dict(q=np.zeros((2, 5, 4, 64), np.float64)),
     r"q must have the dtype of v \(float32\), got float64"),
    ("v dtype", dict(v=np.zeros((2, 5, 4, 32), np.float64)),
     r"v must be float32 or float16, got float64"),
    ("k f16 with f32 v", dict(k=np.zeros((2, 5, 4, 64), np.float16)),
     r"k must have the dtype of v"),
    ("g dtype", dict(g=np.zeros((2, 5, 4), np.float16)),
     r"g must be float32, got float16"),
    ("beta dtype", dict(beta=np.zeros((2, 5, 4), np.float16)),
     r"beta must be float32 or the dtype of v"),
    ("state dtype", dict(initial_state=np.zeros((2, 4, 64, 32), np.float64)),
     r"initial_state must be float32, got float64"),
    ("int dtype", dict(g=np.zeros((2, 5, 4), np.int32)),
     r"g must be float32, got int32"),
    ("not an array", dict(beta=[[0.5] * 4] * 5), r"beta must be a numpy"),
    ("scale nan", dict(scale=float("nan")), r"scale must be a finite"),
    ("scale string", dict(scale="1.0"), r"scale must be a real number"),
]


# Wrong types and dtypes raise TypeError, wrong shapes ValueError (numpy's
# convention).
_TYPE_ERRORS = {"q dtype", "v dtype", "k f16 with f32 v", "g dtype",
                "beta dtype", "state dtype", "int dtype", "not an array",
                "scale string", "state none"}


@pytest.mark.parametrize("name,changes,message", _PREFILL_ERRORS,
                         ids=[e[0] for e in _PREFILL_ERRORS])
def test_prefill_rejects(no_compiler, name, changes, message):
    args = _prefill_args()
    args.update(changes)
    error = TypeError if name in _TYPE_ERRORS else ValueError
    with pytest.raises(error, match=message):
        gdn.delta_rule(**args)


@pytest.mark.parametrize("chunk_size", [0, -16, 1025, 10**6])
def test_prefill_rejects_chunk_size(no_compiler, chunk_size):
    with pytest.raises(ValueError, match=r"chunk_size must be a positive int"):
        gdn.delta_rule(**_prefill_args(), chunk_size=chunk_size)


@pytest.mark.parametrize("chunk_size", [1.5, 64.0, "64", None, True])
def test_prefill_rejects_chunk_size_type(no_compiler, chunk_size):
    with pytest.raises(TypeError, match=r"chunk_size must be an int"):
        gdn.delta_rule(**_prefill_args(), chunk_size=chunk_size)


_STEP_ERRORS = [
    ("q ndim", dict(q=_f32((2, 1, 2, 16))), r"q must be a 3-d array"),
    ("g ndim", dict(g=_f32((2,))), r"g must be a 2-d array"),
    ("state ndim", dict(state=_f32((2, 4, 16))), r"state must be a 4-d"),
    ("state none", dict(state=None), r"state must be"),
    ("k shape", dict(k=_f32((2, 2, 8))),
     r"k must have shape \(2, 2, 16\) like q, got \(2, 2, 8\)"),
    ("v shape", dict(v=_f32((1, 4, 8))), r"v must have shape \(2, Hv, V\)"),
    ("beta shape", dict(beta=_f32((2, 2))),
     r"beta must have shape \(2, 4\).*got \(2, 2\)"),
    ("state shape", dict(state=_f32((2, 4, 8, 16))),
     r"state must have shape \(2, 4, 16, 8\).*got \(2, 4, 8, 16\)"),
    ("grouping", dict(q=_f32((2, 3, 16)), k=_f32((2, 3, 16))),
     r"Hv = 4 .* multiple of .* H = 3"),
    ("v dtype", dict(v=np.zeros((2, 4, 8), np.float64)),
     r"v must be float32 or float16"),
    ("state dtype", dict(state=np.zeros((2, 4, 16, 8), np.float16)),
     r"state must be float32, got float16"),
    ("state strided in place", dict(state=_strided((2, 4, 16, 8)),
                                    inplace=True),
     r"inplace=True .* must then be C-contiguous"),
]


@pytest.mark.parametrize("name,changes,message", _STEP_ERRORS,
                         ids=[e[0] for e in _STEP_ERRORS])
def test_step_rejects(no_compiler, name, changes, message):
    args = _step_args()
    args.update(changes)
    error = TypeError if name in _TYPE_ERRORS else ValueError
    with pytest.raises(error, match=message):
        gdn.delta_rule_step(**args)


def test_strided_operands_are_copied():
    """Strided, transposed and unaligned arrays are accepted and give the
    results of their contiguous copies (numpy's convention), for the
    prefill and the step; the caller's arrays are left as they were."""
    heads, value_heads, key_dim, value_dim, chunk, _ = _KEYS["e"]
    d = inputs.delta_rule_inputs(600, 2, 9, heads, value_heads, key_dim,
                                 value_dim, "design", initial_state=True)

    def strided(a):
        # Every other element of a twice-as-long last axis.
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        big[..., ::2] = a
        return big[..., ::2]
    names = ("q", "k", "v", "g", "beta", "initial_state")
    views = {n: strided(d[n]) for n in names}
    views["v"] = np.asfortranarray(d["v"])
    assert not any(views[n].flags.c_contiguous for n in ("q", "g", "v"))
    o_ref, s_ref = gdn.delta_rule(*(d[n] for n in names), chunk_size=chunk)
    o, s = gdn.delta_rule(*(views[n] for n in names), chunk_size=chunk)
    np.testing.assert_array_equal(o, o_ref)
    np.testing.assert_array_equal(s, s_ref)
    token = {n: d[n][:, 0] for n in ("q", "k", "v", "g", "beta")}
    step_ref = gdn.delta_rule_step(*(np.ascontiguousarray(token[n])
                                     for n in token), d["initial_state"])
    step = gdn.delta_rule_step(*token.values(), views["initial_state"])
    for actual, expected in zip(step, step_ref):
        np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("kind", ["flag", "frombuffer"])
def test_in_place_step_refuses_read_only_state(no_compiler, kind):
    """inplace=True never writes into memory the caller marked read-only,
    such as an immutable bytes object seen through np.frombuffer."""
    args = _step_args()
    shape = args["state"].shape
    if kind == "flag":
        state = np.zeros(shape, np.float32)
        state.flags.writeable = False
    else:
        raw = bytes(int(np.prod(shape)) * 4)
        state = np.frombuffer(raw, np.float32).reshape(shape)
    args["state"] = state
    before = state.copy()
    with pytest.raises(ValueError, match=r"state.*read-only"):
        gdn.delta_rule_step(**args, inplace=True)
    np.testing.assert_array_equal(state, before)
    if kind == "frombuffer":
        assert raw == bytes(len(raw))


def test_empty_sequence_returns_initial_state(no_compiler):
    args = _prefill_args(tokens=0)
    o, s = gdn.delta_rule(**args)
    assert o.shape == (2, 0, 4, 32)
    np.testing.assert_array_equal(s, args["initial_state"])
    assert s is not args["initial_state"]
    args["initial_state"] = None
    _, s = gdn.delta_rule(**args)
    np.testing.assert_array_equal(s, np.zeros((2, 4, 64, 32), np.float32))


# ----------------------------------------------------------------------------
# MLIR text and descriptors
# ----------------------------------------------------------------------------

def test_module_source():
    text = compiled.module_source(2, 4, 64, 128, "f16", "f32", 0.125)
    assert ("func.func @gdn_delta_rule(%q: tensor<?x?x2x64xf16>, "
            "%k: tensor<?x?x2x64xf16>, %v: tensor<?x?x4x128xf16>, "
            "%g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>, "
            "%h0: tensor<?x4x64x128xf32>) -> (tensor<?x?x4x128xf16>, "
            "tensor<?x4x64x128xf32>) attributes {llvm.emit_c_interface}"
            in text)
    assert ("gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0) "
            "{scale = 0.125 : f32}" in text)
    assert ("func.func @gdn_delta_rule_step(%q: tensor<?x2x64xf16>, "
            "%k: tensor<?x2x64xf16>, %v: tensor<?x4x128xf16>, "
            "%g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, "
            "%s0: tensor<?x4x64x128xf32>) -> (tensor<?x4x128xf16>, "
            "tensor<?x4x64x128xf32>) attributes {llvm.emit_c_interface}"
            in text)
    assert ("gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0 "
            "{scale = 0.125 : f32}" in text)


@pytest.mark.parametrize("scale,text", [(1.0, "1.0"), (0.125, "0.125"),
                                        (1e-5, "1.0e-05"), (2e20, "2.0e+20"),
                                        (64 ** -0.5, "0.125"), (3, "3.0")])
def test_scale_is_an_mlir_float_literal(scale, text):
    assert mlir.format_scale(scale) == text


def test_module_source_parses():
    build = os.environ.get("GDN_BUILD_DIR",
                           os.path.join(cache.REPO, "build"))
    gdn_opt = os.path.join(build, "bin", "gdn-opt")
    if not os.path.exists(gdn_opt):
        pytest.skip(f"gdn-opt is not built ({gdn_opt})")
    for args in ((1, 1, 16, 16, "f32", "f32", 1.0),
                 (2, 4, 64, 128, "f16", "f16", 1e-5)):
        result = subprocess.run([gdn_opt, "-"], capture_output=True,
                                text=True,
                                input=compiled.module_source(*args))
        assert result.returncode == 0, result.stderr


def test_descriptor():
    a = np.arange(24, dtype=np.float16).reshape(2, 3, 4)
    d = compiled.descriptor(a)
    assert d.allocated == d.aligned == a.ctypes.data
    assert d.offset == 0
    assert list(d.sizes) == [2, 3, 4] and list(d.strides) == [12, 4, 1]
    one = np.zeros((1, 5, 1), np.float32)
    assert list(compiled.descriptor(one).strides) == [5, 1, 1]
    with pytest.raises(ValueError):
        compiled.descriptor(a.transpose())


# ----------------------------------------------------------------------------
# Compiler discovery and the cache
# ----------------------------------------------------------------------------

def _fake_compiler(path, body):
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP
               | stat.S_IXOTH)
    return path


def test_missing_compiler(monkeypatch, tmp_path):
    missing = tmp_path / "nowhere" / "gdn-compile"
    monkeypatch.setenv("GDN_COMPILE", str(missing))
    monkeypatch.setenv("GDN_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(RuntimeError) as info:
        gdn.delta_rule(**_prefill_args())
    assert str(missing) in str(info.value)
    assert "scripts/setup.sh" in str(info.value)
    with pytest.raises(RuntimeError, match="nowhere"):
        gdn.delta_rule_step(**_step_args())


def test_build_dir_is_honoured(monkeypatch, tmp_path):
    monkeypatch.delenv("GDN_COMPILE", raising=False)
    (tmp_path / "bin").mkdir()
    fake = _fake_compiler(tmp_path / "bin" / "gdn-compile", "exit 1")
    monkeypatch.setenv("GDN_BUILD_DIR", str(tmp_path))
    assert cache.find_compiler() == str(fake)
    monkeypatch.setenv("GDN_BUILD_DIR", str(tmp_path / "other"))
    with pytest.raises(RuntimeError, match="other/bin/gdn-compile"):
        cache.find_compiler()


def test_compile_failure_reports_stderr(monkeypatch, tmp_path):
    fake = _fake_compiler(tmp_path / "gdn-compile",
                          "echo 'error: something went wrong' >&2; exit 3")
    monkeypatch.setenv("GDN_COMPILE", str(fake))
    directory = tmp_path / "cache"
    monkeypatch.setenv("GDN_CACHE_DIR", str(directory))
    with pytest.raises(RuntimeError, match="something went wrong"):
        gdn.delta_rule(**_prefill_args())
    assert [p.name for p in directory.iterdir()] == []   # no leftovers


def test_library_name_depends_on_compiler_and_options(tmp_path):
    fake = _fake_compiler(tmp_path / "gdn-compile", "exit 1")
    source = compiled.module_source(1, 1, 16, 16)

    def path(source=source, chunk_size=64):
        return cache.library_path(source, compiled._compile_options(
            chunk_size), str(fake), str(tmp_path))

    first = path()
    assert first == path()
    assert first != path(chunk_size=32)
    assert first != path(source + " ")
    st = fake.stat()
    os.utime(fake, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert first != path()


def test_cache_is_reused(monkeypatch, tmp_path):
    directory = tmp_path / "cache"
    monkeypatch.setenv("GDN_CACHE_DIR", str(directory))
    monkeypatch.setattr(cache, "_LOADED", {})
    calls = []
    real_run = subprocess.run

    def counting_run(command, *args, **kwargs):
        calls.append(command)
        return real_run(command, *args, **kwargs)

    monkeypatch.setattr(cache.subprocess, "run", counting_run)
    d = inputs.delta_rule_inputs(9, 1, 20, 1, 1, 16, 16, initial_state=True)
    args = [d[n] for n in ("q", "k", "v", "g", "beta")]
    h0 = d["initial_state"]

    o1, s1 = gdn.delta_rule(*args, h0.copy(), chunk_size=16)
    assert len(calls) == 1
    assert calls[0][2:] == ["--target=cpu", "--emit=shared",
                            "--chunk-size=16", "-o", calls[0][-1]]
    libraries = sorted(directory.glob("*.so"))
    assert len(libraries) == 1
    assert sorted(p.suffix for p in directory.iterdir()) == [".mlir", ".so"]
    mtime = libraries[0].stat().st_mtime_ns

    o2, s2 = gdn.delta_rule(*args, h0.copy(), chunk_size=16)  # in-process
    monkeypatch.setattr(cache, "_LOADED", {})
    o3, s3 = gdn.delta_rule(*args, h0.copy(), chunk_size=16)  # from disk
    assert len(calls) == 1
    assert libraries[0].stat().st_mtime_ns == mtime
    for o, s in ((o2, s2), (o3, s3)):
        np.testing.assert_array_equal(o, o1)
        np.testing.assert_array_equal(s, s1)


def test_compile_options_are_the_compilers():
    """The keywords are gdn-compile's pipeline flags, not a copy of them."""
    known = gdn.cache.pipeline_options()
    assert {"chunk_size", "matmul_tile_n", "cuda_value_tile"} <= set(known)
    assert known["chunk_size"]["default"] == "64"
    assert gdn.cache.compile_flags({"num_threads": 1, "flush_denormals":
                                    False}) == [
        "--flush-denormals=false", "--num-threads=1"]
    with pytest.raises(ValueError, match="unknown compile option 'tile'"):
        gdn.cache.compile_flags({"tile": 3})
    with pytest.raises(TypeError, match="matmul_tile_n"):
        gdn.cache.compile_flags({"matmul_tile_n": 1.5})


def test_compile_options_reach_the_pipeline():
    """A non-default register tile (chunks run: T over recurrent-below)
    compiles and computes what the float64 recurrence does."""
    x = inputs.delta_rule_inputs(7, 1, 150, 1, 2, 16, 32)
    args = [x[name] for name in ("q", "k", "v", "g", "beta")]
    expected, expected_state = reference.delta_rule(*args)
    o, state = gdn.delta_rule(*args, chunk_size=32,
                              compile_options={"matmul_tile_n": 64,
                                               "matmul_tile_m": 4})
    assert reference.relative_error(o, expected)[0] < 1e-4
    assert reference.relative_error(state, expected_state)[0] < 1e-4
    with pytest.raises(RuntimeError, match="matmul-tile-n a multiple of 16"):
        gdn.delta_rule(*args, compile_options={"matmul_tile_n": 20})


def test_check_numerics_names_the_first_bad_element():
    x = inputs.delta_rule_inputs(3, 1, 9, 1, 1, 8, 16)
    args = [x[name] for name in ("q", "k", "v", "g", "beta")]
    args[2] = args[2].copy()
    args[2][0, 4, 0, 2] = np.nan
    o, _ = gdn.delta_rule(*args)           # unchecked: runs on
    assert np.isnan(o).any()
    with pytest.raises(FloatingPointError,
                       match="numerics: nan in o at batch 0, token 4"):
        gdn.delta_rule(*args, check_numerics=True)
    step = [a[:, 4] for a in args]
    state = np.zeros((1, 1, 8, 16), np.float32)
    with pytest.raises(FloatingPointError, match="numerics: nan in o"):
        gdn.delta_rule_step(*step, state, check_numerics=True)


@pytest.mark.parametrize("name,position,value,message", [
    ("g", (0, 2, 0), 0.5, "g at batch 0, token 2, head 0 is 0.5; g must be <= 0"),
    ("beta", (0, 6, 0), 1.5, "beta at batch 0, token 6, head 0 is 1.5"),
    ("k", (0, 3, 0), None, "k at batch 0, token 3, head 0 is 2; k must "
                           "have unit length"),
])
def test_check_numerics_refuses_values_outside_the_preconditions(
        name, position, value, message):
    x = inputs.delta_rule_inputs(5, 1, 9, 1, 1, 8, 16)
    args = {n: x[n].copy() for n in ("q", "k", "v", "g", "beta")}
    if name == "k":
        args["k"][position] *= 2.0
    else:
        args[name][position] = value
    ordered = [args[n] for n in ("q", "k", "v", "g", "beta")]
    gdn.delta_rule(*ordered)                   # unchecked: runs
    with pytest.raises(ValueError, match="precondition: " + message):
        gdn.delta_rule(*ordered, check_numerics=True)
    step = [a[:, position[1]] for a in ordered]
    state = np.zeros((1, 1, 8, 16), np.float32)
    with pytest.raises(ValueError, match=f"precondition: {name} at batch 0, "
                                         f"head 0"):
        gdn.delta_rule_step(*step, state, check_numerics=True)
