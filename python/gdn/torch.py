"""gdn's delta-rule kernels as torch custom ops, and functions with the
signatures of flash-linear-attention's.

    import gdn.torch
    gdn.torch.register("gpu-kernels")     # a folder of gdn.cuda libraries
    from gdn.torch import (chunk_gated_delta_rule,
                           fused_recurrent_gated_delta_rule)

Custom ops (torch.library, with fake implementations, so that
torch.compile traces them and CUDA graphs capture them):

- `torch.ops.gdn.prefill(q, k, v, g, beta, initial_state, scale)` ->
  (o, final_state): q, k [B, T, H, K]; v [B, T, Hv, V]; g, beta [B, T, Hv]
  float32; initial_state [B, Hv, K, V] float32 or None.
- `torch.ops.gdn.decode_(q, k, v, g, beta, state, scale)` -> o: one token
  ([B, H, K], ...), the state [B, Hv, K, V] updated in place.
- `torch.ops.gdn.prefill_packed(q, k, v, g, beta, initial_state,
  cu_seqlens, scale)` -> (o, final_states): packed sequences ([1, total,
  ...], int32 offsets [N + 1] on the device).
- `torch.ops.gdn.decode_pooled_(q, k, v, g, beta, pool, state_indices,
  scale)` -> o: one token per entry from and into the slots of a pool
  [S, Hv, K, V], updated in place (-1: zeros read, nothing written).

CUDA tensors run the kernels of the registered gdn.cuda libraries: one per
configuration (H, Hv, K, V, element type, scale), compiled on a build
machine with `gdn-compile --target=cuda` (scripts/build_gpu_artifacts.py).
CPU tensors run gdn.delta_rule / gdn.delta_rule_step (float32 or float16).

`chunk_gated_delta_rule` and `fused_recurrent_gated_delta_rule` take the
arguments engines pass to fla's functions of those names (layout [B, T,
heads, dim], `scale=None` for K^-0.5, `initial_state`, `output_final_state`,
`cu_seqlens`, `use_qk_l2norm_in_kernel`, and the decode's
`ssm_state_indices` / `inplace_final_state` of vLLM's copy). What the CUDA
kernels do not take yet is done around them, and said here:

- `use_qk_l2norm_in_kernel`: q and k are normalised by torch ops before
  the kernel (x / sqrt(sum x^2 + 1e-6), fla's l2norm), not inside it;
- `cu_seqlens` on CUDA: one call of the chunked scan over the packed
  sequences (`torch.ops.gdn.prefill_packed`, no host synchronization,
  capturable) where the configuration's packed form is registered
  (serving_manifest.json); otherwise one kernel call per sequence, which
  reads the offsets on the host (refused during CUDA-graph capture). On
  the CPU the packed sequences run in one compiled call;
- `ssm_state_indices` on CUDA: where the configuration's pool decode is
  registered (pool_manifest.json) and the pool is updated in place
  (`inplace_final_state=True`, the default), one call of the pool kernel
  (`torch.ops.gdn.decode_pooled_`), which reads and writes the slots in
  place and skips -1 (capturable); the final state returned is then the
  pool, as vLLM's. Otherwise the slots are gathered into a batch, the
  decode kernel updates it, and it is copied back (index_select,
  index_copy_: no host synchronisation); slots of -1 (empty entries) are
  found by a host check outside capture, and inside a CUDA graph every
  index must name a slot.
"""

import os
import sys

import numpy as np

__all__ = ["register", "registered", "chunk_gated_delta_rule",
           "fused_recurrent_gated_delta_rule"]

_torch = sys.modules.get("torch")
if _torch is None:
    import importlib
    _torch = importlib.import_module("torch")
torch = _torch

# (H, Hv, K, V, element type name, scale as float32) -> gdn.cuda.CudaKernels
_KERNELS = {}
_TYPE_NAMES = {torch.float32: "f32", torch.bfloat16: "bf16",
               torch.float16: "f16"}


def _key(heads, value_heads, key_dim, value_dim, element_type, scale):
    return (heads, value_heads, key_dim, value_dim, element_type,
            float(np.float32(scale)))


def register(kernels):
    """Makes CUDA kernels available to the ops: a gdn.cuda.CudaKernels, or
    a folder with the manifest.json of gdn.cuda.load_artifacts (every
    configuration in it; variants of one configuration: the first wins).
    Returns the number of configurations registered."""
    from . import cuda
    if isinstance(kernels, (str, os.PathLike)):
        entries = list(cuda.load_artifacts(os.fspath(kernels)).values())
    else:
        entries = [kernels]
    added = 0
    for entry in entries:
        c = entry.config
        if c.get("beta_element_type", "f32") != "f32":
            continue
        key = _key(c["heads"], c["value_heads"], c["key_dim"],
                   c["value_dim"], c["element_type"], c["scale"])
        if key not in _KERNELS:
            _KERNELS[key] = entry
            added += 1
    return added


def registered():
    """The registered configurations: (H, Hv, K, V, element type, scale)."""
    return sorted(_KERNELS)


def _kernels_for(q, v, scale):
    key = _key(q.shape[-2], v.shape[-2], q.shape[-1], v.shape[-1],
               _TYPE_NAMES.get(q.dtype, str(q.dtype)), scale)
    kernels = _KERNELS.get(key)
    if kernels is None:
        raise RuntimeError(
            f"gdn.torch: no CUDA kernels registered for (H, Hv, K, V, dtype, "
            f"scale) = {key}; compile that configuration with gdn-compile "
            f"--target=cuda and gdn.torch.register() it (registered: "
            f"{registered() or 'none'})")
    return kernels


def _cpu_array(name, x):
    if x.dtype not in (torch.float32, torch.float16):
        raise TypeError(f"gdn.torch on the CPU takes float32 or float16 "
                        f"{name}, got {x.dtype}")
    return x


# ----------------------------------------------------------------------------
# Custom ops
# ----------------------------------------------------------------------------

@torch.library.custom_op("gdn::prefill", mutates_args=())
def prefill(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
            g: torch.Tensor, beta: torch.Tensor,
            initial_state: torch.Tensor | None,
            scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    if q.is_cuda:
        return _kernels_for(q, v, scale).delta_rule(
            q, k, v, g, beta, initial_state=initial_state, scale=scale)
    from .compiled import delta_rule
    o, state = delta_rule(_cpu_array("q", q), _cpu_array("k", k),
                          _cpu_array("v", v), g, beta,
                          initial_state=initial_state, scale=scale)
    return o, state


@prefill.register_fake
def _(q, k, v, g, beta, initial_state, scale):
    b, _, hv, vd = v.shape
    return (torch.empty_like(v),
            v.new_empty((b, hv, q.shape[-1], vd), dtype=torch.float32))


@torch.library.custom_op("gdn::prefill_packed", mutates_args=())
def prefill_packed(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   g: torch.Tensor, beta: torch.Tensor,
                   initial_state: torch.Tensor | None,
                   cu_seqlens: torch.Tensor,
                   scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    return _kernels_for(q, v, scale).delta_rule(
        q, k, v, g, beta, initial_state=initial_state, scale=scale,
        cu_seqlens=cu_seqlens.to(torch.int32))


@prefill_packed.register_fake
def _(q, k, v, g, beta, initial_state, cu_seqlens, scale):
    _, _, hv, vd = v.shape
    return (torch.empty_like(v),
            v.new_empty((max(cu_seqlens.shape[0] - 1, 0), hv, q.shape[-1],
                         vd), dtype=torch.float32))


def _has_form(q, v, scale, form):
    """Whether the configuration's library of `form` is registered."""
    key = _key(q.shape[-2], v.shape[-2], q.shape[-1], v.shape[-1],
               _TYPE_NAMES.get(q.dtype, str(q.dtype)), scale)
    kernels = _KERNELS.get(key)
    return kernels is not None and form in kernels.serving_paths


def _packed_kernels(q, v, scale):
    """Whether the configuration's packed prefill is registered."""
    return _has_form(q, v, scale, "packed")


@torch.library.custom_op("gdn::decode_", mutates_args=("state",))
def decode_(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
            g: torch.Tensor, beta: torch.Tensor, state: torch.Tensor,
            scale: float) -> torch.Tensor:
    if q.is_cuda:
        o, _ = _kernels_for(q, v, scale).delta_rule_step(
            q, k, v, g, beta, state, scale=scale, inplace=True)
        return o
    from .compiled import delta_rule_step
    o, _ = delta_rule_step(_cpu_array("q", q), _cpu_array("k", k),
                           _cpu_array("v", v), g, beta, state, scale=scale,
                           inplace=True)
    return o


@decode_.register_fake
def _(q, k, v, g, beta, state, scale):
    return torch.empty_like(v)


@torch.library.custom_op("gdn::decode_pooled_", mutates_args=("pool",))
def decode_pooled_(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   g: torch.Tensor, beta: torch.Tensor, pool: torch.Tensor,
                   state_indices: torch.Tensor,
                   scale: float) -> torch.Tensor:
    o, _ = _kernels_for(q, v, scale).delta_rule_step(
        q, k, v, g, beta, pool, scale=scale,
        state_indices=state_indices.to(torch.int32))
    return o


@decode_pooled_.register_fake
def _(q, k, v, g, beta, pool, state_indices, scale):
    return torch.empty_like(v)


# ----------------------------------------------------------------------------
# fla's signatures
# ----------------------------------------------------------------------------

def _l2norm(x):
    x32 = x.float()
    return (x32 * torch.rsqrt((x32 * x32).sum(-1, keepdim=True) + 1e-6)).to(
        x.dtype)


def _common(q, k, g, beta, scale, use_qk_l2norm_in_kernel, kwargs):
    if kwargs.get("head_first"):
        raise ValueError("gdn.torch takes the [B, T, heads, dim] layout "
                         "(head_first=False)")
    unknown = set(kwargs) - {"head_first"}
    if unknown:
        raise TypeError(f"gdn.torch: unsupported arguments "
                        f"{sorted(unknown)}")
    if scale is None:
        scale = q.shape[-1] ** -0.5
    if use_qk_l2norm_in_kernel:
        q, k = _l2norm(q), _l2norm(k)
    return q, k, g.float(), beta.float(), float(scale)


def _offsets_on_host(cu_seqlens):
    if cu_seqlens.is_cuda and torch.cuda.is_current_stream_capturing():
        raise RuntimeError(
            "gdn.torch: cu_seqlens on CUDA without this configuration's "
            "packed prefill registered runs one kernel call per sequence "
            "and reads the offsets on the host, which a CUDA graph cannot "
            "capture; register a folder whose serving_manifest.json has "
            "the packed form (scripts/build_gpu_artifacts.py)")
    return [int(x) for x in cu_seqlens.tolist()]


def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None,
                           output_final_state=False, cu_seqlens=None,
                           use_qk_l2norm_in_kernel=False, **kwargs):
    """fla's chunk_gated_delta_rule: returns (o, final_state or None)."""
    q, k, g, beta, scale = _common(q, k, g, beta, scale,
                                   use_qk_l2norm_in_kernel, kwargs)
    if cu_seqlens is None:
        o, state = torch.ops.gdn.prefill(q, k, v, g, beta, initial_state,
                                         scale)
        return o, (state if output_final_state else None)
    if q.shape[0] != 1:
        raise ValueError(f"with cu_seqlens the sequences are packed into one "
                         f"row: q must have shape [1, total, H, K], got "
                         f"{list(q.shape)}")
    if not q.is_cuda:
        from .compiled import delta_rule
        o, state = delta_rule(_cpu_array("q", q), _cpu_array("k", k),
                              _cpu_array("v", v), g, beta,
                              initial_state=initial_state, scale=scale,
                              cu_seqlens=cu_seqlens)
        return o, (state if output_final_state else None)
    if _packed_kernels(q, v, scale):
        o, state = torch.ops.gdn.prefill_packed(q, k, v, g, beta,
                                                initial_state, cu_seqlens,
                                                scale)
        return o, (state if output_final_state else None)
    offsets = _offsets_on_host(cu_seqlens)
    outputs, states = [], []
    for n in range(len(offsets) - 1):
        part = slice(offsets[n], offsets[n + 1])
        start = None if initial_state is None else initial_state[n:n + 1]
        o, state = torch.ops.gdn.prefill(
            q[:, part], k[:, part], v[:, part], g[:, part], beta[:, part],
            start, scale)
        outputs.append(o)
        states.append(state)
    o = torch.cat(outputs, dim=1) if outputs else torch.empty_like(v)
    if not output_final_state:
        return o, None
    shape = (0, v.shape[2], q.shape[-1], v.shape[-1])
    return o, (torch.cat(states) if states
               else v.new_empty(shape, dtype=torch.float32))


def fused_recurrent_gated_delta_rule(q, k, v, g, beta, scale=None,
                                     initial_state=None,
                                     output_final_state=False,
                                     cu_seqlens=None, ssm_state_indices=None,
                                     num_accepted_tokens=None,
                                     use_qk_l2norm_in_kernel=False,
                                     inplace_final_state=True, **kwargs):
    """fla's fused_recurrent_gated_delta_rule for decode, in the argument
    order of vLLM's copy (q, k, v, g, beta, ...; fla's newest puts gk and
    gv before beta: pass g and beta by keyword to be safe): one token per
    sequence ([B, 1, ...], or packed [1, N, ...] with cu_seqlens of one
    token each). With ssm_state_indices, initial_state is the pool of
    states, updated in place (inplace_final_state=True); returns (o,
    final_state or None)."""
    if num_accepted_tokens is not None:
        raise NotImplementedError("gdn.torch: num_accepted_tokens (several "
                                  "draft tokens per sequence) is not "
                                  "supported here; gdn.cuda's "
                                  "delta_rule_verify (the verify "
                                  "libraries) runs draft tokens and returns "
                                  "the state after each")
    q, k, g, beta, scale = _common(q, k, g, beta, scale,
                                   use_qk_l2norm_in_kernel, kwargs)
    if cu_seqlens is not None:
        if q.shape[0] != 1:
            raise ValueError("with cu_seqlens q must be [1, total, H, K]")
        if cu_seqlens.shape[0] - 1 != q.shape[1]:
            raise NotImplementedError(
                "gdn.torch: fused_recurrent_gated_delta_rule decodes one "
                "token per sequence; use chunk_gated_delta_rule for longer "
                "sequences")
        # One token per sequence: the packed row is a batch of tokens.
        tokens = [x.transpose(0, 1) for x in (q, k, v, g, beta)]
    else:
        if q.shape[1] != 1:
            raise NotImplementedError(
                f"gdn.torch: fused_recurrent_gated_delta_rule decodes one "
                f"token per sequence, got T = {q.shape[1]}; use "
                f"chunk_gated_delta_rule for longer sequences")
        tokens = [q, k, v, g, beta]
    qs, ks, vs, gs, betas = [x[:, 0].contiguous() for x in tokens]
    batch = qs.shape[0]
    state_shape = (batch, vs.shape[1], qs.shape[-1], vs.shape[-1])

    if ssm_state_indices is None:
        if initial_state is None:
            state = vs.new_zeros(state_shape, dtype=torch.float32)
        elif inplace_final_state:
            state = initial_state
        else:
            state = initial_state.clone()
        o = torch.ops.gdn.decode_(qs, ks, vs, gs, betas, state, scale)
    elif (inplace_final_state and qs.is_cuda
          and _has_form(qs, vs, scale, "step_pooled")):
        # The pool kernel reads and writes the slots in place and skips
        # -1: no gather, no copy back, no host check.
        pool = initial_state
        o = torch.ops.gdn.decode_pooled_(
            qs, ks, vs, gs, betas, pool,
            ssm_state_indices.reshape(-1).to(torch.int32).contiguous(),
            scale)
        state = pool
    else:
        pool = initial_state
        indices = ssm_state_indices.reshape(-1).long()
        empty = indices < 0
        if (not (pool.is_cuda and torch.cuda.is_current_stream_capturing())
                and bool(empty.any())):
            valid = ~empty
            state = pool.new_zeros(state_shape)
            state[valid] = pool.index_select(0, indices[valid])
            o = torch.ops.gdn.decode_(qs, ks, vs, gs, betas, state, scale)
            if inplace_final_state:
                pool.index_copy_(0, indices[valid], state[valid])
        else:
            state = pool.index_select(0, indices)
            o = torch.ops.gdn.decode_(qs, ks, vs, gs, betas, state, scale)
            if inplace_final_state:
                pool.index_copy_(0, indices, state)
    o = o.unsqueeze(1)
    if cu_seqlens is not None:
        o = o.transpose(0, 1)
    return o, (state if output_final_state else None)
