"""Run prebuilt CUDA kernels of gdn on torch CUDA tensors.

The kernels come from `gdn-compile --target=cuda --emit=shared` on the build
machine (scripts/build-gpu-artifacts.sh); this module only needs the shared
libraries, ctypes and torch, so it runs on a GPU machine without MLIR. The
libraries export the C ABI of docs/c-abi.md with device pointers: every
buffer, inputs and outputs, lives on the GPU. Inputs are torch CUDA tensors
of the configuration's types, or numpy arrays, which are copied to the GPU
in those types (q, k and v rounded to bf16 or f16) and give numpy results.
"""

import ctypes
import json
import os

import numpy as np

from . import compiled as compiled_module
from . import compiled_serving
from .compiled import descriptor_type
from .compiled_serving import MAX_DRAFT_TOKENS

PREFILL_SYMBOL = "_mlir_ciface_gdn_delta_rule"
STEP_SYMBOL = "_mlir_ciface_gdn_delta_rule_step"
SERVING_SYMBOL = "_mlir_ciface_gdn_serving"
MANIFEST = "manifest.json"
# The serving forms, one library per configuration and form: "packed",
# "pooled", "packed_pooled", with "_checkpoints_N" for checkpoints every N
# tokens, "verify" and "verify_pooled" (the gdn.compiled_serving modules
# compiled for CUDA).
SERVING_MANIFEST = "serving_manifest.json"
# The decode step from a pool of states (form "step_pooled").
POOL_MANIFEST = "pool_manifest.json"
# What identifies a configuration across the two manifests.
CONFIG_KEYS = ("heads", "value_heads", "key_dim", "value_dim",
               "element_type", "beta_element_type", "scale")
# Tokens per chunk of the CUDA chunked scan (convert-gdn-to-gpu).
CHUNK_SIZE = 64
# torch dtypes of the configuration's element type names.
TORCH_TYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


def _torch():
    import torch  # imported lazily: the rest of gdn does not need torch
    return torch


def tensor_descriptor(tensor):
    """A memref descriptor of a contiguous torch tensor (device pointer)."""
    if not tensor.is_contiguous():
        raise ValueError(f"tensor of shape {tuple(tensor.shape)} must be "
                         "contiguous")
    rank = tensor.dim()
    desc = descriptor_type(rank)()
    desc.allocated = desc.aligned = tensor.data_ptr()
    desc.offset = 0
    for i in range(rank):
        desc.sizes[i] = tensor.shape[i]
        desc.strides[i] = tensor.stride(i)
    return desc


class CudaKernels:
    """The prefill and decode kernels of one configuration (H, Hv, K, V,
    element types, scale), loaded from a shared library."""

    def __init__(self, path, config):
        self.path = path
        self.config = config
        self.library = ctypes.CDLL(os.path.abspath(path))
        for name in (PREFILL_SYMBOL, STEP_SYMBOL):
            function = getattr(self.library, name)
            function.restype = None
            function.argtypes = [ctypes.c_void_p] * 8
        self.library.gdnCudaTakeKernelMicroseconds.restype = ctypes.c_double
        self.library.gdnCudaTakeKernelMicroseconds.argtypes = [
            ctypes.POINTER(ctypes.c_int64)]
        self.library.gdnCudaSetKernelTiming.argtypes = [ctypes.c_int]
        self.library.gdnCudaUseStream.argtypes = [ctypes.c_void_p]
        self.library.gdnCudaOwnStreams.argtypes = []
        # form -> library path, and the libraries loaded so far.
        self.serving_paths, self._serving = {}, {}

    def _operands(self, operands, tokens, state_name, state_rows=None):
        """Checks the operands against the configuration and returns them as
        CUDA tensors, and whether any came as a numpy array. Shapes:
        q, k [B, (T,) H, K]; v [B, (T,) Hv, V]; g, beta [B, (T,) Hv]; the
        state [B, Hv, K, V] (`state_rows` rows instead of B if given)."""
        torch = _torch()
        cfg = self.config
        h, hv = cfg["heads"], cfg["value_heads"]
        kd, vd = cfg["key_dim"], cfg["value_dim"]
        element = getattr(torch, TORCH_TYPES[cfg["element_type"]])
        beta_type = getattr(torch, TORCH_TYPES[cfg.get("beta_element_type",
                                                       "f32")])
        q_shape = tuple(np.shape(operands["q"]))
        if len(q_shape) != (4 if tokens else 3):
            raise ValueError(f"q: expected shape [B, {'T, ' if tokens else ''}"
                             f"{h}, {kd}], got {list(q_shape)}")
        lead = q_shape[:2] if tokens else q_shape[:1]
        expected = {"q": (lead + (h, kd), element),
                    "k": (lead + (h, kd), element),
                    "v": (lead + (hv, vd), element),
                    "g": (lead + (hv,), torch.float32),
                    "beta": (lead + (hv,), beta_type)}
        rows = lead[0] if state_rows is None else state_rows
        expected[state_name] = ((rows, hv, kd, vd), torch.float32)
        from_numpy = False
        tensors = {}
        for name, x in operands.items():
            shape, dtype = expected[name]
            if isinstance(x, torch.Tensor):
                if not x.is_cuda:
                    raise TypeError(f"{name} must be a CUDA tensor or a "
                                    "numpy array")
                if x.dtype != dtype:
                    raise TypeError(f"{name}: expected dtype {dtype}, got "
                                    f"{x.dtype}")
                # Strided tensors are copied, as numpy arrays are.
                x = x.contiguous()
            else:
                array = np.asarray(x)
                if array.dtype.kind != "f":
                    raise TypeError(f"{name}: expected floating-point "
                                    f"values, got dtype {array.dtype}")
                x = torch.from_numpy(np.ascontiguousarray(
                    array, dtype=np.float32)).to("cuda", dtype)
                from_numpy = True
            if tuple(x.shape) != shape:
                raise ValueError(f"{name}: expected shape {list(shape)}, got "
                                 f"{list(x.shape)}")
            tensors[name] = x
        return tensors, from_numpy

    def _call(self, symbol, tensors, library=None):
        if any(n == 0 for n in tensors[0].shape[:1]):
            return  # nothing to run: a grid of zero blocks cannot launch
        library = library or self.library
        # On torch's current stream, in order with the work that made the
        # inputs and without waiting, so that calls can be captured in a
        # CUDA graph.
        descriptors = [tensor_descriptor(t) for t in tensors]
        stream = _torch().cuda.current_stream().cuda_stream
        library.gdnCudaUseStream(ctypes.c_void_p(stream))
        try:
            getattr(library, symbol)(
                *[ctypes.c_void_p(ctypes.addressof(d)) for d in descriptors])
        finally:
            library.gdnCudaOwnStreams()

    def _serving_library(self, form):
        library = self._serving.get(form)
        if library is None:
            path = self.serving_paths.get(form)
            if path is None:
                raise RuntimeError(
                    f"the {form.replace('_', ' ')} form of this "
                    f"configuration was not compiled (compiled forms: "
                    f"{sorted(self.serving_paths) or 'none'}); build it "
                    f"with scripts/build_gpu_artifacts.py "
                    f"(SERVING_PREFILL_HEADS, CHECKPOINT_VERIFY_FORMS) or "
                    f"gdn-compile --target=cuda "
                    f"on gdn.compiled_serving.module_source")
            library = ctypes.CDLL(os.path.abspath(path))
            getattr(library, SERVING_SYMBOL).restype = None
            library.gdnCudaUseStream.argtypes = [ctypes.c_void_p]
            library.gdnCudaOwnStreams.argtypes = []
            self._serving[form] = library
        return library

    @staticmethod
    def _indices(name, x, count=None):
        """int32 indices or offsets as a contiguous CUDA tensor."""
        torch = _torch()
        if not isinstance(x, torch.Tensor):
            array = np.asarray(x)
            if array.dtype.kind not in "iu":
                raise TypeError(f"{name}: expected integers, got dtype "
                                f"{array.dtype}")
            x = torch.from_numpy(array.astype(np.int32)).cuda()
        if not x.is_cuda or x.dtype != torch.int32:
            raise TypeError(f"{name}: expected an int32 CUDA tensor or a "
                            f"numpy array, got {x.dtype} on {x.device}")
        if x.dim() != 1 or (count is not None and x.shape[0] != count):
            expected = "[N]" if count is None else f"[{count}]"
            raise ValueError(f"{name}: expected shape {expected}, got "
                             f"{list(x.shape)}")
        return x.contiguous()

    def _gates(self, a_log, dt_bias):
        """A_log and dt_bias as float32 CUDA tensors [Hv], or None."""
        if a_log is None and dt_bias is None:
            return None
        if a_log is None or dt_bias is None:
            raise ValueError("a_log and dt_bias come together (raw gates)")
        torch = _torch()
        hv = self.config["value_heads"]
        tensors = []
        for name, x in (("a_log", a_log), ("dt_bias", dt_bias)):
            if not isinstance(x, torch.Tensor):
                x = torch.from_numpy(np.ascontiguousarray(x, np.float32))
            x = x.to("cuda", torch.float32).contiguous()
            if tuple(x.shape) != (hv,):
                raise ValueError(f"{name}: expected shape [{hv}], got "
                                 f"{list(x.shape)}")
            tensors.append(x)
        return tensors

    def _serving_prefill(self, x, cu_seqlens, state_indices, write_indices,
                         initial_state, checkpoint_every=None, gates=None):
        """delta_rule with packed sequences, a pool of states, raw gates
        and/or checkpoints."""
        torch = _torch()
        packed, pooled = cu_seqlens is not None, state_indices is not None
        form = "_".join(name for name, present in (("packed", packed),
                                                   ("pooled", pooled),
                                                   ("gated", gates))
                        if present)
        if checkpoint_every is not None:
            every = compiled_serving._check_checkpoint_every(
                checkpoint_every)
            if every % CHUNK_SIZE:
                raise ValueError(
                    f"checkpoint_every: on CUDA checkpoints come at the "
                    f"chunked scan's chunk boundaries, every multiple of "
                    f"{CHUNK_SIZE} tokens; got {checkpoint_every!r}")
            form = "_".join(filter(None, (form, f"checkpoints_{every}")))
        library = self._serving_library(form)
        if packed:
            cu = self._indices("cu_seqlens", cu_seqlens)
            if cu.shape[0] < 1:
                raise ValueError("cu_seqlens: expected [N + 1] offsets, got "
                                 "none")
            count = cu.shape[0] - 1
            if np.shape(x["q"])[0] != 1:
                raise ValueError(f"with cu_seqlens, q, k, v, g and beta are "
                                 f"packed: q must be [1, total, H, K], got "
                                 f"{list(np.shape(x['q']))}")
        else:
            count = np.shape(x["q"])[0]
        if pooled:
            if not isinstance(initial_state, torch.Tensor) or \
                    not initial_state.is_cuda or \
                    not initial_state.is_contiguous():
                raise TypeError("with state_indices, initial_state is the "
                                "pool [S, Hv, K, V], updated in place: a "
                                "contiguous float32 CUDA tensor")
            rows = initial_state.shape[0]
            read = self._indices("state_indices", state_indices, count)
            write = read if write_indices is None else self._indices(
                "write_indices", write_indices, count)
        else:
            if write_indices is not None:
                raise ValueError("write_indices needs state_indices (a pool)")
            rows = count
            if initial_state is None:
                initial_state = torch.zeros(
                    (count, self.config["value_heads"],
                     self.config["key_dim"], self.config["value_dim"]),
                    dtype=torch.float32, device="cuda")
        tensors, from_numpy = self._operands(
            dict(x, initial_state=initial_state), tokens=True,
            state_name="initial_state", state_rows=rows)
        q, k, v, g, beta = (tensors[n] for n in ("q", "k", "v", "g", "beta"))
        state = tensors["initial_state"]
        o = torch.empty_like(v)
        operands = [q, k, v, g, beta, state] + ([cu] if packed else [])
        if pooled:
            operands += [read, write] + (gates or []) + [o]
            final = state
        else:
            final = torch.empty_like(state)
            operands += (gates or []) + [o, final]
        results = [o, final]
        if checkpoint_every is not None:
            # [B, T / N, ...], or [total / N, ...] with the packed
            # sequences' checkpoints one after another.
            tokens = q.shape[1]
            rows = (tokens // every,) if packed else \
                (q.shape[0], tokens // every)
            checkpoints = torch.empty(rows + tuple(state.shape[1:]),
                                      dtype=state.dtype, device="cuda")
            operands.append(checkpoints)
            results.append(checkpoints)
        self._call(SERVING_SYMBOL, operands, library)
        if from_numpy:
            return (results[0].float().cpu().numpy(),
                    *[r.cpu().numpy() for r in results[1:]])
        return tuple(results)

    def _check_compiled(self, scale, chunk_size):
        """The arguments gdn.delta_rule takes on the CPU: here they must
        match what the library was compiled for (None: as compiled)."""
        compiled = float(np.float32(self.config["scale"]))
        if scale is not None and float(np.float32(
                compiled_module._check_scale(scale))) != compiled:
            raise ValueError(f"scale: this library was compiled for scale "
                             f"{compiled!r}, got {scale!r} (compile the "
                             f"configuration with that scale)")
        if chunk_size is not None and compiled_module._check_chunk_size(
                chunk_size) != CHUNK_SIZE:
            raise ValueError(f"chunk_size: the CUDA chunked scan uses chunks "
                             f"of {CHUNK_SIZE} tokens, got {chunk_size!r}")

    def _zero_state(self, q):
        """The initial state of None: zeros [B, Hv, K, V] beside q."""
        cfg = self.config
        shape = (np.shape(q)[0], cfg["value_heads"], cfg["key_dim"],
                 cfg["value_dim"])
        torch = _torch()
        if isinstance(q, torch.Tensor):
            return torch.zeros(shape, dtype=torch.float32, device=q.device)
        return np.zeros(shape, np.float32)

    def delta_rule(self, q, k, v, g, beta, initial_state=None, scale=None,
                   chunk_size=None, cu_seqlens=None, state_indices=None,
                   write_indices=None, checkpoint_every=None, a_log=None,
                   dt_bias=None):
        """Prefill, with the arguments of gdn.delta_rule: returns (o,
        final_state), new CUDA tensors (numpy arrays, o in float32, if any
        input was a numpy array). initial_state None: zeros; scale and
        chunk_size, if given, must be what the library was compiled for.

        With cu_seqlens (int32 [N + 1]), q, k, v, g and beta are packed
        ([1, total, ...]) and the states are [N, Hv, K, V]; with
        state_indices (int32 [N]), initial_state is the pool [S, Hv, K, V]
        (a CUDA tensor), updated in place at write_indices (default
        state_indices) and returned as the final state. These run the
        configuration's serving libraries (serving_manifest.json), with no
        host synchronization: the offsets and indices stay on the device.
        With checkpoint_every = N (a multiple of 64, the chunk), a third
        result holds the state after every N tokens of each sequence:
        [B, T // N, Hv, K, V], or [total // N, Hv, K, V] packed (the
        sequences' checkpoints one after another, zero rows after them).
        With a_log and dt_bias (float32 [Hv] each), g and beta are a
        Qwen-style layer's raw a and b, and the kernel computes g =
        -exp(a_log) * softplus(a + dt_bias) and beta = sigmoid(b).
        """
        torch = _torch()
        self._check_compiled(scale, chunk_size)
        gates = self._gates(a_log, dt_bias)
        if cu_seqlens is not None or state_indices is not None or \
                write_indices is not None or checkpoint_every is not None \
                or gates is not None:
            return self._serving_prefill(
                dict(q=q, k=k, v=v, g=g, beta=beta), cu_seqlens,
                state_indices, write_indices, initial_state, checkpoint_every,
                gates)
        if initial_state is None:
            initial_state = self._zero_state(q)
        x, from_numpy = self._operands(
            dict(q=q, k=k, v=v, g=g, beta=beta, initial_state=initial_state),
            tokens=True, state_name="initial_state")
        b, _, hv, vd = x["v"].shape
        o = torch.empty_like(x["v"])
        state = torch.empty((b, hv, x["q"].shape[-1], vd),
                            dtype=torch.float32, device=x["v"].device)
        # T = 0 runs too: the compiled prefill copies the initial state.
        self._call(PREFILL_SYMBOL, (x["q"], x["k"], x["v"], x["g"],
                                    x["beta"], x["initial_state"], o, state))
        if from_numpy:
            return o.float().cpu().numpy(), state.cpu().numpy()
        return o, state

    def delta_rule_step(self, q, k, v, g, beta, state, scale=None,
                        inplace=False, state_indices=None,
                        write_indices=None, a_log=None, dt_bias=None):
        """One decode token, with the arguments of gdn.delta_rule_step; with
        inplace=True the new state overwrites `state` (the kernel reads a
        state column before writing it), which must then be a CUDA tensor.

        With state_indices (int32 [B]), `state` is a pool [S, Hv, K, V] (a
        contiguous float32 CUDA tensor): entry b reads slot
        state_indices[b] and writes slot write_indices[b] (default
        state_indices[b]) in place; -1 (or any index outside [0, S)) reads
        zeros and writes nothing. Runs the configuration's pool library
        (pool_manifest.json) with no host synchronization; returns (o, the
        pool). With a_log and dt_bias, g and beta are raw a and b, as for
        delta_rule (the "step_gated" library)."""
        torch = _torch()
        self._check_compiled(scale, None)
        gates = self._gates(a_log, dt_bias)
        if state_indices is not None or write_indices is not None:
            if gates is not None:
                raise ValueError("gdn.cuda: raw gates with state_indices "
                                 "have no library yet; pass g and beta")
            return self._pool_step(dict(q=q, k=k, v=v, g=g, beta=beta),
                                   state, state_indices, write_indices)
        if gates is not None:
            return self._gated_step(dict(q=q, k=k, v=v, g=g, beta=beta),
                                    state, inplace, gates)
        if inplace and not isinstance(state, torch.Tensor):
            raise TypeError("inplace=True needs the state as a CUDA tensor")
        if inplace and not state.is_contiguous():
            raise ValueError("inplace=True writes the new state into state, "
                             "which must then be contiguous")
        x, from_numpy = self._operands(
            dict(q=q, k=k, v=v, g=g, beta=beta, state=state), tokens=False,
            state_name="state")
        o = torch.empty_like(x["v"])
        new_state = x["state"] if inplace else torch.empty_like(x["state"])
        self._call(STEP_SYMBOL, (x["q"], x["k"], x["v"], x["g"], x["beta"],
                                 x["state"], o, new_state))
        if from_numpy:
            return o.float().cpu().numpy(), new_state.cpu().numpy()
        return o, new_state

    def _gated_step(self, x, state, inplace, gates):
        torch = _torch()
        library = self._serving_library("step_gated")
        tensors, from_numpy = self._operands(dict(x, state=state),
                                             tokens=False, state_name="state")
        o = torch.empty_like(tensors["v"])
        new_state = tensors["state"] if inplace else \
            torch.empty_like(tensors["state"])
        self._call(SERVING_SYMBOL,
                   [tensors[n] for n in ("q", "k", "v", "g", "beta",
                                         "state")] + gates + [o, new_state],
                   library)
        if from_numpy:
            return o.float().cpu().numpy(), new_state.cpu().numpy()
        return o, new_state

    def _pool_step(self, x, pool, state_indices, write_indices):
        torch = _torch()
        if state_indices is None:
            raise ValueError("write_indices needs state_indices (a pool)")
        if not isinstance(pool, torch.Tensor) or not pool.is_cuda or \
                not pool.is_contiguous():
            raise TypeError("with state_indices, state is the pool [S, Hv, "
                            "K, V], updated in place: a contiguous float32 "
                            "CUDA tensor")
        library = self._serving_library("step_pooled")
        tensors, from_numpy = self._operands(
            dict(x, state=pool), tokens=False, state_name="state",
            state_rows=pool.shape[0])
        batch = tensors["q"].shape[0]
        read = self._indices("state_indices", state_indices, batch)
        write = read if write_indices is None else self._indices(
            "write_indices", write_indices, batch)
        o = torch.empty_like(tensors["v"])
        self._call(SERVING_SYMBOL,
                   [tensors[n] for n in ("q", "k", "v", "g", "beta")] +
                   [pool, read, write, o], library)
        if from_numpy:
            return o.float().cpu().numpy(), pool
        return o, pool

    def delta_rule_verify(self, q, k, v, g, beta, state, scale=None,
                          state_indices=None):
        """Speculative verify, with the arguments of
        gdn.delta_rule_verify: T <= 16 draft tokens ([B, T, ...]) from
        `state` [B, Hv, K, V], or from the pool's slots `state_indices`
        (int32 [B]; -1: zeros). Returns (o, states): states [B, T, Hv, K,
        V], the state after each token. The state or pool is only read."""
        torch = _torch()
        self._check_compiled(scale, None)
        tokens = np.shape(q)[1] if len(np.shape(q)) == 4 else None
        if tokens is not None and not 1 <= tokens <= MAX_DRAFT_TOKENS:
            raise ValueError(f"q: verify takes 1 to {MAX_DRAFT_TOKENS} draft "
                             f"tokens, got T = {tokens}")
        pooled = state_indices is not None
        library = self._serving_library("verify_pooled" if pooled
                                        else "verify")
        rows = None
        if pooled:
            if not isinstance(state, torch.Tensor) or not state.is_cuda:
                raise TypeError("with state_indices, state is the pool [S, "
                                "Hv, K, V]: a float32 CUDA tensor")
            rows = state.shape[0]
        x, from_numpy = self._operands(
            dict(q=q, k=k, v=v, g=g, beta=beta, state=state), tokens=True,
            state_name="state", state_rows=rows)
        batch = x["q"].shape[0]
        operands = [x[n] for n in ("q", "k", "v", "g", "beta", "state")]
        if pooled:
            operands.append(self._indices("state_indices", state_indices,
                                          batch))
        o = torch.empty_like(x["v"])
        states = torch.empty((batch, x["q"].shape[1]) +
                             tuple(x["state"].shape[1:]),
                             dtype=torch.float32, device="cuda")
        self._call(SERVING_SYMBOL, operands + [o, states], library)
        if from_numpy:
            return o.float().cpu().numpy(), states.cpu().numpy()
        return o, states

    def set_kernel_timing(self, enabled):
        self.library.gdnCudaSetKernelTiming(1 if enabled else 0)

    def take_kernel_microseconds(self):
        """(total kernel microseconds, launches) since the last call."""
        launches = ctypes.c_int64(0)
        total = self.library.gdnCudaTakeKernelMicroseconds(
            ctypes.byref(launches))
        return total, launches.value


def load_artifacts(folder):
    """Reads folder/manifest.json: {name: {"library": file, "config": {...}}}
    and returns {name: CudaKernels}."""
    with open(os.path.join(folder, MANIFEST)) as f:
        manifest = json.load(f)
    kernels = {name: CudaKernels(os.path.join(folder, entry["library"]),
                                 entry["config"])
               for name, entry in manifest.items()}

    def identity(config):
        return tuple(config.get(key, "f32" if key == "beta_element_type"
                                else None) for key in CONFIG_KEYS)

    # The serving forms of a configuration, from serving_manifest.json
    # where there is one, and its decode step from a pool (form
    # "step_pooled") from pool_manifest.json: attached to every library of
    # that configuration.
    for manifest_name in (SERVING_MANIFEST, POOL_MANIFEST):
        path = os.path.join(folder, manifest_name)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            entries = json.load(f).values()
        for entry in entries:
            form = entry["config"].get("form", "step_pooled")
            for kernel in kernels.values():
                if identity(kernel.config) == identity(entry["config"]):
                    kernel.serving_paths[form] = os.path.join(
                        folder, entry["library"])
    return kernels
