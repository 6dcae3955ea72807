#!/usr/bin/python3
"""CPU benchmark of the gated delta rule: the compiled kernel against
PyTorch and numpy baselines, on the same inputs, at a fixed thread count.

    /usr/bin/python3 bench/bench_cpu.py            # full run (see --help)
    /usr/bin/python3 bench/bench_cpu.py --quick    # small shapes, smoke run

Implementations (prefill, f32):
  compiled       gdn.delta_rule (the gdn-compile'd CPU kernel, via ctypes)
  torch-chunked  chunked WY/UT form in PyTorch, batched over B and heads
  torch-naive    token-by-token recurrence in PyTorch, vectorized over B, heads
  numpy-chunked  chunked WY/UT form in numpy, batched over B and heads
Decode (one token): gdn.delta_rule_step (out of place, and in place where
its API has inplace=), a torch step and a numpy step (both in place).

Every implementation is checked: the compiled kernel against the float64
reference (gdn.reference) on a prefix of the sequence, every other one
against the compiled kernel's output and final state. The script exits 1 if
any error is above 1e-3 (max |a - e| / max |e|), or if an implementation
failed.

Thread counts and the OpenBLAS core type are set in the environment below,
before numpy (and so OpenBLAS) or the compiled kernel's OpenMP runtime is
loaded; setting them later has no effect.
"""

# --- Environment first: nothing that loads numpy / OpenBLAS / OpenMP above.
import argparse
import os
import sys


def _parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Shapes: prefill as BxTxHxHvxKxV (e.g. 1x4096x16x16x128x128), "
               "decode as decode:BxHxHvxKxV or 'decode' for the default "
               "decode shape (B=32, H=Hv=16, K=V=128).")
    p.add_argument("--shapes", default=None,
                   help="comma-separated shapes to run (default: the three "
                        "issue shapes and decode; with --quick, the quick "
                        "shapes)")
    p.add_argument("--impls", default="compiled,torch-chunked,torch-naive,"
                   "numpy-chunked",
                   help="comma-separated implementations (default: all); "
                        "the compiled kernel is always run, since the others "
                        "are checked against it; decode has a torch step if "
                        "a torch implementation is selected and a numpy step "
                        "if numpy-chunked is")
    p.add_argument("--repeat", type=int, default=5,
                   help="timed runs per implementation and shape; the median "
                        "is reported (default 5)")
    p.add_argument("--threads", type=int, default=2,
                   help="threads for every implementation (default 2)")
    p.add_argument("--chunk-size", type=int, default=64,
                   help="chunk size of the compiled kernel and of the "
                        "chunked baselines (default 64)")
    p.add_argument("--regime", default="design",
                   help="gate regime of gdn.inputs.delta_rule_inputs "
                        "(moderate, weak, strong, realistic, design, none; "
                        "default design)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true",
                   help="small shapes for a smoke run (timings meaningless)")
    p.add_argument("--skip-naive-above", type=int, default=None, metavar="T",
                   help="skip torch-naive on prefill shapes with T > this "
                        "(default: never skip)")
    p.add_argument("--naive-repeat", type=int, default=1,
                   help="timed runs of torch-naive (it is slow); "
                        "min(--repeat, this) is used (default 1)")
    p.add_argument("--decode-steps", type=int, default=20,
                   help="decode steps per timed run, each feeding its new "
                        "state to the next (default 20); ms/step = median "
                        "run / steps")
    p.add_argument("--ref-tokens", type=int, default=160,
                   help="tokens of the prefix on which the compiled kernel "
                        "is checked against the float64 reference "
                        "(default 160)")
    p.add_argument("--settle", type=float, default=0.5,
                   help="seconds to sleep between implementations, so that "
                        "the spinning worker threads of the previous one "
                        "(libomp, libgomp, OpenBLAS) go idle (default 0.5)")
    p.add_argument("--install-openblas", action="store_true",
                   help="apt-get install libopenblas0-pthread before numpy "
                        "is loaded (a system-wide change: it becomes the "
                        "libblas.so.3 of numpy and torch); without it the "
                        "script only reports which BLAS is loaded")
    p.add_argument("--no-install", action="store_true",
                   help="do not apt-get install python3-torch when torch is "
                        "missing")
    return p.parse_args(argv)


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _run_logged(command):
    import subprocess
    print(f"  $ {' '.join(command)}", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        rc = subprocess.run(command, env=env).returncode
    except OSError as e:
        print(f"  -> could not run: {e}")
        return 127
    print(f"  -> exit status {rc}", flush=True)
    return rc


def _apt_install(package):
    """apt-get install -y package, after apt-get update if that fails."""
    command = ["apt-get", "install", "-y", package]
    if _run_logged(command) != 0:
        print("install failed; updating the package lists and retrying:")
        _run_logged(["apt-get", "update"])
        return _run_logged(command)
    return 0


ARGS = _parse_args()
if ARGS.install_openblas:
    print("--install-openblas: installing Debian's OpenBLAS (pthread "
          "build):", flush=True)
    _apt_install("libopenblas0-pthread")
ENV_NOTES = []
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = str(ARGS.threads)
ENV_NOTES.append(f"OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS="
                 f"{ARGS.threads}")
if "OPENBLAS_CORETYPE" in os.environ:
    ENV_NOTES.append(f"OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} "
                     f"(kept from the environment)")
elif "avx512f" in _cpu_flags():
    # Debian's OpenBLAS 0.3.21 does not recognise this CPU and falls back to
    # SSE3 (Prescott) kernels.
    os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    ENV_NOTES.append("OPENBLAS_CORETYPE=SkylakeX")
else:
    ENV_NOTES.append("OPENBLAS_CORETYPE not set (no AVX-512 on this CPU)")
ENV_NOTES.append("all set in os.environ before numpy, torch and the "
                 "compiled kernel were loaded")

# --- Now the libraries.
import importlib  # noqa: E402
import inspect  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
import gdn  # noqa: E402
from gdn import inputs as gdn_inputs  # noqa: E402
from gdn import reference  # noqa: E402

BUDGET = 1e-3
MODEL_CHUNK = 64   # chunk length of the FLOP model (fixed, see chunk_flops)

ISSUE_PREFILL = [(1, 4096, 16, 16, 128, 128), (4, 512, 16, 16, 128, 128),
                 (1, 2048, 8, 8, 128, 128)]
ISSUE_DECODE = (32, 16, 16, 128, 128)
QUICK_PREFILL = [(1, 256, 4, 4, 64, 64), (2, 100, 2, 4, 32, 64)]
QUICK_DECODE = (4, 2, 4, 32, 64)

PREFILL_IMPLS = ("compiled", "torch-chunked", "torch-naive", "numpy-chunked")

# ----------------------------------------------------------------------------
# FLOP and byte models
# ----------------------------------------------------------------------------

def chunk_flops(length, key_dim, value_dim):
    """FLOPs of one chunk of `length` tokens of one value head in the chunked
    form, with C = length:

        2 C^2 K             Gram matrix K_c K_c^T
      + 2 C^2 V + 2 C^2 K   U = T (beta V_c), W = T (beta gamma K_c)
      + 4 C K V             state pass: W S and K_c^T V_new
      + 2 C K V + 2 C^2 K + 2 C^2 V   output: Q_c S, Q_c K_c^T, (.) V_new
      = 6 C^2 K + 4 C^2 V + 6 C K V

    Additions of the masks, decays and the triangular solve are not counted.
    C = 64, K = V = 128: 11.53 MFLOP per chunk per value head.
    """
    c, k, v = length, key_dim, value_dim
    return 6 * c * c * k + 4 * c * c * v + 6 * c * k * v


def prefill_flops(batch, tokens, value_heads, key_dim, value_dim):
    """Model FLOPs of a prefill: B * Hv * (full chunks of 64 + the last
    partial chunk of T mod 64 tokens). The model's chunk is 64 whatever
    --chunk-size is, so that rates stay comparable between runs."""
    full, rest = divmod(tokens, MODEL_CHUNK)
    per_head = full * chunk_flops(MODEL_CHUNK, key_dim, value_dim)
    if rest:
        per_head += chunk_flops(rest, key_dim, value_dim)
    return batch * value_heads * per_head


def decode_state_bytes(batch, value_heads, key_dim, value_dim):
    """State traffic of one decode step: read + write of the f32 state."""
    return 2 * batch * value_heads * key_dim * value_dim * 4


# ----------------------------------------------------------------------------
# Torch: import, installing Debian's python3-torch if needed
# ----------------------------------------------------------------------------

def import_torch(allow_install):
    """Returns (torch module or None, note)."""
    try:
        import torch
        return torch, None
    except ImportError as e:
        first_error = e
    if not allow_install:
        return None, f"torch not importable ({first_error}); --no-install"
    print(f"torch not importable ({first_error}); installing Debian's "
          f"python3-torch:", flush=True)
    _apt_install("python3-torch")
    importlib.invalidate_caches()
    try:
        import torch
        return torch, "installed python3-torch with apt-get"
    except ImportError as e:
        return None, f"torch still not importable after apt-get ({e})"


# ----------------------------------------------------------------------------
# Baselines: torch
# ----------------------------------------------------------------------------

def torch_chunked(torch, q, k, v, g, beta, scale, chunk):
    """Chunked WY/UT form, f32, batched over B, heads and chunks except for
    the sequential state pass. q, k: [B,T,H,K]; v: [B,T,Hv,V]; g, beta:
    [B,T,Hv] (torch tensors). Returns (o [B,T,Hv,V], final state
    [B,Hv,K,V]). T is padded to a multiple of the chunk with rows of
    g = 0, beta = 0, k = q = v = 0, which leave the state unchanged."""
    batch, tokens, heads, key_dim = q.shape
    value_heads, value_dim = v.shape[2], v.shape[3]
    group = value_heads // heads
    chunks = -(-tokens // chunk)
    pad = chunks * chunk - tokens
    F = torch.nn.functional
    if pad:
        q = F.pad(q, (0, 0, 0, 0, 0, pad))
        k = F.pad(k, (0, 0, 0, 0, 0, pad))
        v = F.pad(v, (0, 0, 0, 0, 0, pad))
        g = F.pad(g, (0, 0, 0, pad))
        beta = F.pad(beta, (0, 0, 0, pad))
    # [B, heads, N, C, dim]; key head hv // group serves value head hv.
    q = q.reshape(batch, chunks, chunk, heads, key_dim).permute(0, 3, 1, 2, 4)
    k = k.reshape(batch, chunks, chunk, heads, key_dim).permute(0, 3, 1, 2, 4)
    if group > 1:
        q = q.repeat_interleave(group, dim=1)
        k = k.repeat_interleave(group, dim=1)
    v = v.reshape(batch, chunks, chunk, value_heads,
                  value_dim).permute(0, 3, 1, 2, 4)
    g = g.reshape(batch, chunks, chunk, value_heads).permute(0, 3, 1, 2)
    beta = beta.reshape(batch, chunks, chunk, value_heads).permute(0, 3, 1, 2)

    b = g.cumsum(-1)                                   # [B,Hv,N,C], <= 0
    causal = torch.ones(chunk, chunk, dtype=torch.bool).tril()
    decay = (b[..., :, None] - b[..., None, :]).masked_fill(
        ~causal, float("-inf")).exp()                  # exp(b_i - b_j), i>=j
    kt = k.transpose(-1, -2)
    a = ((k @ kt) * decay * beta[..., :, None]).tril(-1)
    system = a + torch.eye(chunk, dtype=a.dtype)
    rhs = torch.cat([beta[..., None] * v,
                     (beta * b.exp())[..., None] * k], dim=-1)
    uw = torch.linalg.solve_triangular(system, rhs, upper=False,
                                       unitriangular=True)
    u, w = uw[..., :value_dim], uw[..., value_dim:]
    b_last = b[..., -1]                                # [B,Hv,N]
    k_tail = (k * (b_last[..., None] - b).exp()[..., None]).transpose(-1, -2)
    gamma_last = b_last.exp()

    state = torch.zeros(batch, value_heads, key_dim, value_dim,
                        dtype=q.dtype)
    h = torch.empty(batch, value_heads, chunks, key_dim, value_dim,
                    dtype=q.dtype)
    v_new = torch.empty_like(u)
    for n in range(chunks):
        h[:, :, n] = state
        vn = torch.baddbmm(
            u[:, :, n].reshape(-1, chunk, value_dim),
            w[:, :, n].reshape(-1, chunk, key_dim),
            state.reshape(-1, key_dim, value_dim), alpha=-1.0)
        vn = vn.view(batch, value_heads, chunk, value_dim)
        v_new[:, :, n] = vn
        state = state * gamma_last[:, :, n, None, None] + k_tail[:, :, n] @ vn
    o = b.exp()[..., None] * (q @ h) + ((q @ kt) * decay) @ v_new
    o = (o * scale).permute(0, 2, 3, 1, 4).reshape(
        batch, chunks * chunk, value_heads, value_dim)[:, :tokens]
    return o.contiguous(), state


def torch_step(torch, q, k, v, g, beta, state, scale, inplace=False):
    """One decode token. q, k: [B,H,K]; v: [B,Hv,V]; g, beta: [B,Hv];
    state [B,Hv,K,V]. Returns (o [B,Hv,V], new state); with inplace the new
    state is written into `state` (which is returned), otherwise `state` is
    not modified."""
    batch, value_heads, key_dim, value_dim = state.shape
    group = value_heads // q.shape[1]
    if group > 1:
        q = q.repeat_interleave(group, dim=1)
        k = k.repeat_interleave(group, dim=1)
    if inplace:
        s = state.mul_(g.exp()[..., None, None])
    else:
        s = state * g.exp()[..., None, None]
    s3 = s.view(-1, key_dim, value_dim)
    k3 = k.reshape(-1, 1, key_dim)
    v_hat = torch.bmm(k3, s3)                                  # [BH,1,V]
    delta = (v.reshape(-1, 1, value_dim) - v_hat) * beta.reshape(-1, 1, 1)
    s3.baddbmm_(k3.transpose(1, 2), delta)                     # k^T delta
    o = torch.bmm(q.reshape(-1, 1, key_dim), s3).view(
        batch, value_heads, value_dim) * scale
    return o, s


def torch_naive(torch, q, k, v, g, beta, scale):
    """Token-by-token recurrence (decay, v_hat, update, output per token),
    vectorized over B and heads."""
    batch, tokens, heads, key_dim = q.shape
    value_heads, value_dim = v.shape[2], v.shape[3]
    qt, kt, vt = (x.transpose(0, 1).contiguous() for x in (q, k, v))
    gt, bt = g.transpose(0, 1).contiguous(), beta.transpose(0, 1).contiguous()
    state = torch.zeros(batch, value_heads, key_dim, value_dim,
                        dtype=q.dtype)
    o = torch.empty(tokens, batch, value_heads, value_dim, dtype=q.dtype)
    for t in range(tokens):
        o[t], state = torch_step(torch, qt[t], kt[t], vt[t], gt[t], bt[t],
                                 state, scale, inplace=True)
    return o.transpose(0, 1).contiguous(), state


# ----------------------------------------------------------------------------
# Baselines: numpy
# ----------------------------------------------------------------------------

def numpy_chunked(q, k, v, g, beta, scale, chunk):
    """The chunked WY/UT form in numpy, f32, batched over B, heads and
    chunks except for the sequential state pass (same algorithm as
    torch_chunked; the unit lower-triangular system is solved with
    np.linalg.solve, which does not pivot here since |A_ij| < 1)."""
    f32 = np.float32
    batch, tokens, heads, key_dim = q.shape
    value_heads, value_dim = v.shape[2], v.shape[3]
    group = value_heads // heads
    chunks = -(-tokens // chunk)
    pad = chunks * chunk - tokens
    if pad:
        q = np.pad(q, ((0, 0), (0, pad), (0, 0), (0, 0)))
        k = np.pad(k, ((0, 0), (0, pad), (0, 0), (0, 0)))
        v = np.pad(v, ((0, 0), (0, pad), (0, 0), (0, 0)))
        g = np.pad(g, ((0, 0), (0, pad), (0, 0)))
        beta = np.pad(beta, ((0, 0), (0, pad), (0, 0)))
    q = q.reshape(batch, chunks, chunk, heads, key_dim).transpose(0, 3, 1, 2, 4)
    k = k.reshape(batch, chunks, chunk, heads, key_dim).transpose(0, 3, 1, 2, 4)
    if group > 1:
        q = np.repeat(q, group, axis=1)
        k = np.repeat(k, group, axis=1)
    q = np.ascontiguousarray(q)
    k = np.ascontiguousarray(k)
    v = np.ascontiguousarray(v.reshape(batch, chunks, chunk, value_heads,
                                       value_dim).transpose(0, 3, 1, 2, 4))
    g = g.reshape(batch, chunks, chunk, value_heads).transpose(0, 3, 1, 2)
    beta = beta.reshape(batch, chunks, chunk, value_heads).transpose(0, 3, 1, 2)

    b = np.cumsum(g, axis=-1, dtype=f32)
    causal = np.tril(np.ones((chunk, chunk), dtype=bool))
    decay = np.exp(np.where(causal, b[..., :, None] - b[..., None, :],
                            f32(-np.inf)))
    kt = np.swapaxes(k, -1, -2)
    a = np.tril((k @ kt) * decay * beta[..., :, None], -1)
    system = a + np.eye(chunk, dtype=f32)
    rhs = np.concatenate([beta[..., None] * v,
                          (beta * np.exp(b))[..., None] * k], axis=-1)
    uw = np.linalg.solve(system, rhs)
    u, w = uw[..., :value_dim], uw[..., value_dim:]
    b_last = b[..., -1]
    k_tail = np.ascontiguousarray(np.swapaxes(
        k * np.exp(b_last[..., None] - b)[..., None], -1, -2))
    gamma_last = np.exp(b_last)

    state = np.zeros((batch, value_heads, key_dim, value_dim), dtype=f32)
    h = np.empty((batch, value_heads, chunks, key_dim, value_dim), dtype=f32)
    v_new = np.empty_like(u)
    for n in range(chunks):
        h[:, :, n] = state
        vn = u[:, :, n] - w[:, :, n] @ state
        v_new[:, :, n] = vn
        state = state * gamma_last[:, :, n, None, None] + k_tail[:, :, n] @ vn
    o = np.exp(b)[..., None] * (q @ h) + ((q @ kt) * decay) @ v_new
    o = (o * f32(scale)).transpose(0, 2, 3, 1, 4).reshape(
        batch, chunks * chunk, value_heads, value_dim)[:, :tokens]
    return np.ascontiguousarray(o), state


def numpy_step(q, k, v, g, beta, state, scale, inplace=False):
    """One decode token in numpy (as torch_step; the rank-1 update still
    goes through a temporary of the state's size)."""
    batch, value_heads, key_dim, value_dim = state.shape
    group = value_heads // q.shape[1]
    if group > 1:
        q = np.repeat(q, group, axis=1)
        k = np.repeat(k, group, axis=1)
    if inplace:
        s = state
        s *= np.exp(g)[..., None, None]
    else:
        s = state * np.exp(g)[..., None, None]
    v_hat = (k[..., None, :] @ s)[..., 0, :]                    # [B,Hv,V]
    delta = (v - v_hat) * beta[..., None]
    s += k[..., :, None] * delta[..., None, :]
    o = (q[..., None, :] @ s)[..., 0, :] * np.float32(scale)
    return o, s


# ----------------------------------------------------------------------------
# Measurement
# ----------------------------------------------------------------------------

def time_median(fn, runs):
    """Calls fn() `runs` times; returns (median seconds, last result)."""
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def max_rel(actual, expected):
    """max over the pairs of max|a - e| / max|e| (float64)."""
    worst = 0.0
    for a, e in zip(actual, expected):
        worst = max(worst, reference.relative_error(np.asarray(a),
                                                    np.asarray(e))[1])
    return worst


def to_numpy(x):
    return x.numpy() if hasattr(x, "numpy") else x


class Row:
    def __init__(self, impl, shape):
        self.impl, self.shape = impl, shape
        self.seconds = None
        self.error = None
        self.against = ""
        self.note = ""
        self.failed = False
        self.failure = ""

    def fail(self, error):
        self.failed, self.failure = True, f"{type(error).__name__}: {error}"
        self.note = "failed (see below)"
        print(f"  {self.impl} failed: {self.failure}", flush=True)


def settle():
    if ARGS.settle > 0:
        time.sleep(ARGS.settle)


def run_prefill(shape, impls, torch, rows):
    batch, tokens, heads, value_heads, key_dim, value_dim = shape
    data = gdn_inputs.delta_rule_inputs(
        ARGS.seed, batch, tokens, heads, value_heads, key_dim, value_dim,
        regime=ARGS.regime)
    q, k, v, g, beta = (data[n] for n in ("q", "k", "v", "g", "beta"))
    scale = key_dim ** -0.5
    chunk = ARGS.chunk_size
    name = "x".join(str(s) for s in shape)
    print(f"- prefill {name}", flush=True)

    # compiled, checked against the float64 reference on a prefix
    row = Row("compiled", name)
    rows.append(row)
    expected = None
    try:
        prefix = min(tokens, ARGS.ref_tokens)
        sl = slice(0, prefix)
        part = [np.ascontiguousarray(x[:, sl]) for x in (q, k, v, g, beta)]
        got = gdn.delta_rule(*part, scale=scale, chunk_size=chunk)
        ref = reference.delta_rule(*part, scale=scale)
        row.error = max_rel(got, ref)
        row.against = f"f64 ref, T={prefix}"
        fn = lambda: gdn.delta_rule(q, k, v, g, beta, scale=scale,
                                    chunk_size=chunk)
        fn()                                             # warm-up
        row.seconds, expected = time_median(fn, ARGS.repeat)
        row.note = f"chunk {chunk}"
    except Exception as e:  # noqa: BLE001 - report and go on
        row.fail(e)
    settle()

    def check(row, result, fallback_fn):
        """Against the compiled result, or if that failed the float64
        reference on a prefix (running fallback_fn(prefix inputs))."""
        if expected is not None:
            row.error = max_rel(result, expected)
            row.against = "compiled"
        else:
            prefix = min(tokens, ARGS.ref_tokens)
            part = [np.ascontiguousarray(x[:, :prefix])
                    for x in (q, k, v, g, beta)]
            row.error = max_rel(fallback_fn(part),
                                reference.delta_rule(*part, scale=scale))
            row.against = f"f64 ref, T={prefix}"

    def bench(impl, make_fn, runs, warm_fn=None, note=""):
        row = Row(impl, name)
        rows.append(row)
        try:
            (warm_fn or make_fn(None))()
            row.seconds, result = time_median(make_fn(None), runs)
            check(row, [to_numpy(x) for x in result],
                  lambda part: [to_numpy(x) for x in make_fn(part)()])
            row.note = note
        except Exception as e:  # noqa: BLE001
            row.fail(e)
        settle()

    if torch is not None:
        tq, tk, tv, tg, tb = (torch.from_numpy(x) for x in (q, k, v, g, beta))

        def torch_args(part):
            return ((tq, tk, tv, tg, tb) if part is None
                    else tuple(torch.from_numpy(x) for x in part))

        if "torch-chunked" in impls:
            bench("torch-chunked",
                  lambda part: (lambda a=torch_args(part): torch_chunked(
                      torch, *a, scale, chunk)),
                  ARGS.repeat, note=f"chunk {chunk}")
        if "torch-naive" in impls:
            if (ARGS.skip_naive_above is not None
                    and tokens > ARGS.skip_naive_above):
                row = Row("torch-naive", name)
                row.note = f"skipped: T > {ARGS.skip_naive_above}"
                rows.append(row)
            else:
                runs = max(1, min(ARGS.repeat, ARGS.naive_repeat))
                warm = min(tokens, 64)
                warm_args = tuple(x[:, :warm] for x in (tq, tk, tv, tg, tb))
                bench("torch-naive",
                      lambda part: (lambda a=torch_args(part): torch_naive(
                          torch, *a, scale)),
                      runs,
                      warm_fn=lambda: torch_naive(torch, *warm_args, scale),
                      note=f"{runs} timed run{'s' if runs > 1 else ''}, "
                           f"warm-up on {warm} tokens")
    if "numpy-chunked" in impls:
        bench("numpy-chunked",
              lambda part: (lambda a=(part or (q, k, v, g, beta)):
                            numpy_chunked(*a, scale, chunk)),
              ARGS.repeat, note=f"chunk {chunk}")


def run_decode(shape, impls, torch, rows):
    batch, heads, value_heads, key_dim, value_dim = shape
    data = gdn_inputs.delta_rule_inputs(
        ARGS.seed, batch, 1, heads, value_heads, key_dim, value_dim,
        regime=ARGS.regime, initial_state=True)
    q, k, v, g, beta = (np.ascontiguousarray(data[n][:, 0])
                        for n in ("q", "k", "v", "g", "beta"))
    state0 = data["initial_state"]
    scale = key_dim ** -0.5
    steps = max(1, ARGS.decode_steps)
    name = "decode:" + "x".join(str(s) for s in shape)
    print(f"- {name}", flush=True)

    def chain(step, s0):
        def fn():
            s = s0
            for _ in range(steps):
                o, s = step(s)
            return o, s
        return fn

    # Out of place: a fresh new-state array per step (the API's default).
    # In place: the step overwrites its state argument, so a decode loop
    # allocates nothing; used for the compiled kernel where its API offers
    # it, and for the torch and numpy steps.
    row = Row("compiled-step", name)
    rows.append(row)
    expected = None
    compiled_ok = False
    try:
        expected = gdn.delta_rule_step(q, k, v, g, beta, state0, scale=scale)
        ref = reference.delta_rule_step(q, k, v, g, beta, state0, scale=scale)
        row.error = max_rel(expected, ref)
        row.against = "f64 ref"
        fn = chain(lambda s: gdn.delta_rule_step(q, k, v, g, beta, s,
                                                 scale=scale), state0)
        fn()
        row.seconds, _ = time_median(fn, ARGS.repeat)
        row.seconds /= steps
        row.note = f"new state per step; {steps} chained steps per run"
        compiled_ok = True
    except Exception as e:  # noqa: BLE001
        row.fail(e)
        expected = [np.asarray(x, dtype=np.float32) for x in
                    reference.delta_rule_step(q, k, v, g, beta, state0,
                                              scale=scale)]
    settle()

    def bench(impl, step, copy_state, note):
        """step(s) -> (o, s) updating s in place; copy_state() -> a fresh
        copy of state0 (the working state of the timed runs)."""
        row = Row(impl, name)
        rows.append(row)
        try:
            first = step(copy_state())
            row.error = max_rel([to_numpy(x) for x in first], expected)
            row.against = "compiled" if compiled_ok else "f64 ref"
            fn = chain(step, copy_state())
            fn()
            row.seconds, _ = time_median(fn, ARGS.repeat)
            row.seconds /= steps
            row.note = f"{note}; {steps} chained steps per run"
        except Exception as e:  # noqa: BLE001
            row.fail(e)
        settle()

    try:
        has_inplace = "inplace" in inspect.signature(
            gdn.delta_rule_step).parameters
    except (TypeError, ValueError):
        has_inplace = False
    if has_inplace:
        bench("compiled-step-inplace",
              lambda s: gdn.delta_rule_step(q, k, v, g, beta, s, scale=scale,
                                            inplace=True),
              lambda: state0.copy(), "in place")
    if torch is not None and any(i.startswith("torch") for i in impls):
        tq, tk, tv, tg, tb, ts = (torch.from_numpy(x) for x in
                                  (q, k, v, g, beta, state0))
        bench("torch-step",
              lambda s: torch_step(torch, tq, tk, tv, tg, tb, s, scale,
                                   inplace=True),
              lambda: ts.clone(), "in place")
    if "numpy-chunked" in impls:
        bench("numpy-step",
              lambda s: numpy_step(q, k, v, g, beta, s, scale, inplace=True),
              lambda: state0.copy(), "in place (one state-sized temporary)")


# ----------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------

def loaded_blas():
    """[(path, provider)] of the BLAS/LAPACK libraries mapped into this
    process (numpy and torch both use libblas.so.3, which Debian's
    alternatives point at netlib's reference BLAS or at OpenBLAS)."""
    paths = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                name = os.path.basename(path)
                if (path.startswith("/") and re.search(r"blas|lapack|blis",
                                                       name)
                        and path not in paths):
                    paths.append(path)
    except OSError:
        return []
    result = []
    for path in paths:
        real = os.path.realpath(path)
        if "openblas" in real:
            provider = "OpenBLAS"
        elif "blis" in real:
            provider = "BLIS"
        elif "atlas" in real:
            provider = "ATLAS"
        elif "mkl" in real:
            provider = "MKL"
        elif re.search(r"/(blas|lapack)/lib(blas|lapack)\.so", real):
            provider = "netlib reference"
        else:
            provider = "unknown"
        result.append((real, provider))
    return result


def blas_lines():
    libs = loaded_blas()
    if not libs:
        return ["BLAS: none found in /proc/self/maps"]
    lines = ["BLAS: " + ", ".join(f"{path} ({provider})"
                                  for path, provider in libs)]
    if not any(p == "OpenBLAS" for _, p in libs):
        lines.append(
            "WARNING: numpy and torch are not using OpenBLAS here, so "
            "OPENBLAS_* have no effect and their matmuls run on the BLAS "
            "above (netlib's reference BLAS is unoptimised and "
            "single-threaded): the numpy and torch rows are not "
            "representative. Install libopenblas0-pthread (or pass "
            "--install-openblas) for meaningful baselines.")
    return lines


def torch_capability(torch):
    try:
        text = torch.__config__.show()
    except Exception:  # noqa: BLE001
        return None
    m = re.search(r"CPU capability usage:\s*(\S+)", text)
    return m.group(1) if m else None


def machine_line(torch, torch_note):
    model, family, cpu_model = "unknown CPU", "?", "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "model name" and model == "unknown CPU":
                    model = value
                elif key == "cpu family" and family == "?":
                    family = value
                elif key == "model" and cpu_model == "?":
                    cpu_model = value
    except OSError:
        pass
    flags = _cpu_flags()
    isa = "AVX-512" if "avx512f" in flags else (
        "AVX2" if "avx2" in flags else "no AVX2")
    cores = os.cpu_count()
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = cores
    if torch is not None:
        torch_text = f"torch {torch.__version__}"
        capability = torch_capability(torch)
        if capability:
            torch_text += f" (ATen CPU capability {capability})"
    else:
        torch_text = "torch not available"
    load = os.getloadavg()
    return [
        f"machine: {model} (family {family} model {cpu_model}, {isa}), "
        f"{cores} logical CPUs ({affinity} usable); python "
        f"{platform.python_version()}, numpy {np.__version__}, {torch_text}",
        f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
        + ("  (above 0.5: timings are not meaningful)" if load[0] > 0.5
           else ""),
        f"threads: {ARGS.threads} (torch.set_num_threads; "
        f"{'; '.join(ENV_NOTES)})",
    ] + blas_lines() + ([f"torch: {torch_note}"] if torch_note else [])


def fmt_ms(seconds):
    return "-" if seconds is None else f"{seconds * 1e3:.3f}"


def fmt_rate(value, unit=""):
    if value is None:
        return "-"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.2f}{suffix}{unit}"
    return f"{value:.1f}{unit}"


def print_table(header, lines):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    def fmt(cells):
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    print(fmt(header))
    print("  ".join("-" * w for w in widths))
    for line in lines:
        print(fmt(line))


def report(prefill_rows, decode_rows, shapes_by_name):
    if prefill_rows:
        print()
        print("Prefill (f32). GFLOP/s: chunked FLOP model, "
              "6C^2K + 4C^2V + 6CKV per 64-token chunk per value head.")
        lines = []
        for r in prefill_rows:
            batch, tokens, _, value_heads, key_dim, value_dim = \
                shapes_by_name[r.shape]
            tps = gflops = None
            if r.seconds:
                tps = batch * tokens / r.seconds
                gflops = prefill_flops(batch, tokens, value_heads, key_dim,
                                       value_dim) / r.seconds / 1e9
            lines.append([
                r.impl, r.shape, fmt_ms(r.seconds), fmt_rate(tps),
                "-" if gflops is None else f"{gflops:.1f}",
                "-" if r.error is None else f"{r.error:.1e}",
                r.against or "-", r.note])
        print_table(["impl", "shape BxTxHxHvxKxV", "ms", "tokens/s",
                     "GFLOP/s", "max rel err", "vs", "note"], lines)
    if decode_rows:
        print()
        print("Decode (one token, f32). GB/s: state read + write, "
              "2*B*Hv*K*V*4 bytes per step.")
        lines = []
        for r in decode_rows:
            batch, _, value_heads, key_dim, value_dim = shapes_by_name[r.shape]
            gbs = None
            if r.seconds:
                gbs = decode_state_bytes(batch, value_heads, key_dim,
                                         value_dim) / r.seconds / 1e9
            lines.append([
                r.impl, r.shape, fmt_ms(r.seconds),
                "-" if gbs is None else f"{gbs:.1f}",
                "-" if r.error is None else f"{r.error:.1e}",
                r.against or "-", r.note])
        print_table(["impl", "shape BxHxHvxKxV", "ms/step", "GB/s",
                     "max rel err", "vs", "note"], lines)


# ----------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------

def parse_shapes():
    if ARGS.shapes is None:
        prefill = QUICK_PREFILL if ARGS.quick else ISSUE_PREFILL
        decode = [QUICK_DECODE if ARGS.quick else ISSUE_DECODE]
        return list(prefill), decode
    prefill, decode = [], []
    for item in ARGS.shapes.split(","):
        item = item.strip()
        if not item:
            continue
        if item == "decode":
            decode.append(QUICK_DECODE if ARGS.quick else ISSUE_DECODE)
            continue
        is_decode = item.startswith("decode:")
        text = item[len("decode:"):] if is_decode else item
        try:
            dims = tuple(int(x) for x in text.lower().split("x"))
        except ValueError:
            sys.exit(f"bad shape {item!r}")
        if len(dims) != (5 if is_decode else 6) or min(dims) <= 0:
            sys.exit(f"bad shape {item!r}: want BxTxHxHvxKxV or "
                     f"decode:BxHxHvxKxV with positive sizes")
        if dims[-3] % dims[-4] != 0:
            sys.exit(f"bad shape {item!r}: Hv must be a multiple of H")
        (decode if is_decode else prefill).append(dims)
    return prefill, decode


def main():
    impls = [x.strip() for x in ARGS.impls.split(",") if x.strip()]
    for impl in impls:
        if impl not in PREFILL_IMPLS:
            sys.exit(f"unknown implementation {impl!r}; one of "
                     f"{', '.join(PREFILL_IMPLS)}")
    if ARGS.repeat < 1 or ARGS.threads < 1 or ARGS.chunk_size < 1:
        sys.exit("--repeat, --threads and --chunk-size must be positive")
    if ARGS.regime not in gdn_inputs.GATE_REGIMES:
        sys.exit(f"unknown regime {ARGS.regime!r}; one of "
                 f"{', '.join(gdn_inputs.GATE_REGIMES)}")
    prefill_shapes, decode_shapes = parse_shapes()

    torch, torch_note = None, None
    if any(i.startswith("torch") for i in impls):
        torch, torch_note = import_torch(not ARGS.no_install)
        if torch is not None:
            torch.set_num_threads(ARGS.threads)
        else:
            print(f"note: {torch_note}; the torch rows are skipped")

    for line in machine_line(torch, torch_note):
        print(line)
    print(f"inputs: gdn.inputs.delta_rule_inputs(seed={ARGS.seed}, "
          f"regime={ARGS.regime!r}), f32, scale = K^-0.5, no initial state "
          f"(prefill) / random initial state (decode); median of "
          f"{ARGS.repeat} runs after one warm-up; errors are "
          f"max|a-e|/max|e| over o and the final state, budget {BUDGET:g}")
    print(flush=True)

    prefill_rows, decode_rows, shapes_by_name = [], [], {}
    for shape in prefill_shapes:
        shapes_by_name["x".join(str(s) for s in shape)] = shape
        run_prefill(shape, impls, torch, prefill_rows)
    for shape in decode_shapes:
        shapes_by_name["decode:" + "x".join(str(s) for s in shape)] = shape
        run_decode(shape, impls, torch, decode_rows)

    report(prefill_rows, decode_rows, shapes_by_name)

    bad = []
    for r in prefill_rows + decode_rows:
        if r.failed:
            bad.append(f"{r.impl} {r.shape}: {r.failure}")
        elif r.error is not None and not r.error <= BUDGET:
            bad.append(f"{r.impl} {r.shape}: max rel err {r.error:.3g} vs "
                       f"{r.against} > {BUDGET:g}")
    if torch is None and any(i.startswith("torch") for i in impls):
        print(f"\nnote: torch rows skipped ({torch_note})")
    if bad:
        print("\nFAILED:")
        for line in bad:
            print(f"  {line}")
        return 1
    print(f"\nall implementations within {BUDGET:g} of their check")
    return 0


if __name__ == "__main__":
    sys.exit(main())
