"""Run prebuilt CUDA kernels of gdn on torch CUDA tensors.

The kernels come from `gdn-compile --target=cuda --emit=shared` on the build
machine (scripts/build-gpu-artifacts.sh); this module only needs the shared
libraries, ctypes and torch, so it runs on a GPU machine without MLIR. The
libraries export the C ABI of docs/c-abi.md with device pointers: every
buffer, inputs and outputs, lives on the GPU.
"""

import ctypes
import json
import os

from .compiled import descriptor_type

PREFILL_SYMBOL = "_mlir_ciface_gdn_delta_rule"
STEP_SYMBOL = "_mlir_ciface_gdn_delta_rule_step"
MANIFEST = "manifest.json"


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

    def _check(self, tensors):
        for name, t in tensors.items():
            if not t.is_cuda:
                raise ValueError(f"{name} must be a CUDA tensor")

    def _call(self, symbol, tensors):
        if any(n == 0 for n in tensors[0].shape[:1]):
            return  # nothing to run: a grid of zero blocks cannot launch
        # On torch's current stream, in order with the work that made the
        # inputs and without waiting, so that calls can be captured in a
        # CUDA graph.
        descriptors = [tensor_descriptor(t) for t in tensors]
        stream = _torch().cuda.current_stream().cuda_stream
        self.library.gdnCudaUseStream(ctypes.c_void_p(stream))
        try:
            getattr(self.library, symbol)(
                *[ctypes.addressof(d) for d in descriptors])
        finally:
            self.library.gdnCudaOwnStreams()

    def delta_rule(self, q, k, v, g, beta, initial_state):
        """Prefill: returns (o, final_state) as new CUDA tensors."""
        torch = _torch()
        self._check(dict(q=q, k=k, v=v, g=g, beta=beta,
                         initial_state=initial_state))
        b, t, hv, vd = v.shape
        o = torch.empty_like(v)
        state = torch.empty((b, hv, q.shape[-1], vd), dtype=torch.float32,
                            device=v.device)
        self._call(PREFILL_SYMBOL, (q, k, v, g, beta, initial_state, o, state))
        return o, state

    def delta_rule_step(self, q, k, v, g, beta, state, inplace=False):
        """One decode token; with inplace=True the new state overwrites
        `state` (the kernel reads a state column before writing it)."""
        torch = _torch()
        self._check(dict(q=q, k=k, v=v, g=g, beta=beta, state=state))
        o = torch.empty_like(v)
        new_state = state if inplace else torch.empty_like(state)
        self._call(STEP_SYMBOL, (q, k, v, g, beta, state, o, new_state))
        return o, new_state

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
    return {name: CudaKernels(os.path.join(folder, entry["library"]),
                              entry["config"])
            for name, entry in manifest.items()}
