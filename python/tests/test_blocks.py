"""The model building blocks gdn.embed, gdn.rms_norm, gdn.swiglu_mlp and
gdn.lm_head, compiled for the CPU, against float64 numpy."""

import ctypes

import numpy as np
import pytest

from gdn import cache, compiled, reference
from gdn.mlir import format_scale, tensor_type as _t


def _module(vocab, dim, hidden, eps):
    args = [("ids", _t(["?", "?"], "i64")), ("table", _t([vocab, dim])),
            ("norm", _t([dim])), ("gate", _t([hidden, dim])),
            ("up", _t([hidden, dim])), ("down", _t([dim, hidden])),
            ("head", _t([vocab, dim]))]
    x = _t(["?", "?", dim])
    logits = _t(["?", "?", vocab])
    signature = ", ".join(f"%{n}: {t}" for n, t in args)
    return f"""module {{
  func.func @blocks({signature}) -> ({x}, {logits}) {{
    %x = gdn.embed %ids, %table : ({args[0][1]}, {args[1][1]}) -> {x}
    %n = gdn.rms_norm %x, %norm {{eps = {format_scale(eps)} : f32}} : ({x}, {args[2][1]}) -> {x}
    %m = gdn.swiglu_mlp %n weights(%gate, %up, %down) : ({x}, {args[3][1]}, {args[4][1]}, {args[5][1]}) -> {x}
    %l = gdn.lm_head %m, %head : ({x}, {args[6][1]}) -> {logits}
    return %n, %l : {x}, {logits}
  }}
}}
"""


def _prepare(library):
    function = library._mlir_ciface_blocks
    function.restype = None
    # 7 inputs and 2 out-parameters, each a pointer to a descriptor.
    function.argtypes = [ctypes.c_void_p] * 9


def _load(vocab, dim, hidden, eps):
    library = cache.load(("blocks", vocab, dim, hidden, eps),
                         lambda: _module(vocab, dim, hidden, eps),
                         ["--target=cpu", "--emit=shared"], _prepare)
    return library._mlir_ciface_blocks


def _reference(ids, table, norm, gate, up, down, head, eps):
    """gdn.embed, gdn.rms_norm, gdn.swiglu_mlp and gdn.lm_head through the
    ops' float64 references."""
    f64 = lambda a: np.asarray(a, dtype=np.float64)
    n = reference.rms_norm(f64(table)[ids], f64(norm), eps)
    m = reference.swiglu_mlp(n, f64(gate), f64(up), f64(down))
    return n, m @ f64(head).T


@pytest.mark.parametrize("batch,tokens,vocab,dim,hidden",
                         [(1, 1, 11, 16, 32), (2, 7, 50, 32, 48),
                          (3, 5, 7, 64, 96)])
def test_blocks_match_numpy(batch, tokens, vocab, dim, hidden):
    rng = np.random.default_rng(vocab + dim)
    eps = 1e-6
    weights = dict(
        table=rng.standard_normal((vocab, dim)),
        norm=1.0 + 0.1 * rng.standard_normal(dim),
        gate=rng.standard_normal((hidden, dim)) / np.sqrt(dim),
        up=rng.standard_normal((hidden, dim)) / np.sqrt(dim),
        down=rng.standard_normal((dim, hidden)) / np.sqrt(hidden),
        head=rng.standard_normal((vocab, dim)) / np.sqrt(dim))
    weights = {k: np.ascontiguousarray(v, dtype=np.float32)
               for k, v in weights.items()}
    ids = rng.integers(0, vocab, size=(batch, tokens), dtype=np.int64)
    function = _load(vocab, dim, hidden, eps)
    normed = np.empty((batch, tokens, dim), np.float32)
    logits = np.empty((batch, tokens, vocab), np.float32)
    arrays = [ids] + [weights[k] for k in
                      ("table", "norm", "gate", "up", "down", "head")] + \
        [normed, logits]
    descriptors = [compiled.descriptor(a) for a in arrays]
    function(*[ctypes.addressof(d) for d in descriptors])
    ref_n, ref_logits = _reference(ids, **weights, eps=eps)
    for name, actual, expected in (("rms_norm", normed, ref_n),
                                   ("logits", logits, ref_logits)):
        ratio, max_rel = reference.relative_error(actual, expected)
        assert max(ratio, max_rel) < 1e-5, (name, ratio, max_rel)
