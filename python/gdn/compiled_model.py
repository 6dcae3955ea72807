"""A hybrid model compiled by gdn-compile (model.json or a Hugging Face
checkpoint folder -> shared library), run on numpy arrays:
`CompiledModel(path)` with `prefill`, `extend` and `decode`, the compiled
counterpart of `gdn.model.ModelReference`.
(`Model` is a deprecated alias of `CompiledModel`: it read as the module
gdn.model.)

It drives the library through its C API (include/gdn/Runtime/gdn_model.h,
docs/model-description.md): the library loads and validates the weights,
keeps the caches (per GDN layer the conv and delta-rule states, per MLA
layer the latents and RoPE keys so far) and runs the compiled
`gdn_forward_step`.
"""

import ctypes
import json
import os
import warnings

import numpy as np

from . import cache, model

__all__ = ["CompiledModel", "compile_model", "cached_library",
           "checkpoint_config"]

COMPILE_OPTIONS = ("--emit=shared",)


def compile_model(config_path, library_path, weights_path=None,
                  compiler=None, compile_options=None):
    """Runs gdn-compile (`compiler`, else gdn.cache.find_compiler()) on a
    model description, validating the weights too; RuntimeError with its
    diagnostics on failure. compile_options: pipeline options by keyword
    (gdn.cache.pipeline_options)."""
    compiler = compiler or cache.find_compiler()
    command = [compiler, os.fspath(config_path), *COMPILE_OPTIONS,
               *cache.compile_flags(compile_options, compiler),
               "-o", os.fspath(library_path)]
    if weights_path is not None:
        command.append(f"--weights={os.fspath(weights_path)}")
    cache.run_compiler(command)


def _bf16_matrices(weights_path):
    """Names of the BF16 matrices of a weights file, index or checkpoint
    folder: gdn-compile keeps them bf16 in the step, so they are part of
    what the library is compiled from. Unreadable files give an empty list
    (gdn-compile reports them)."""
    path = os.fspath(weights_path)
    if os.path.isdir(path):
        index = os.path.join(path, "model.safetensors.index.json")
        path = index if os.path.isfile(index) else \
            os.path.join(path, "model.safetensors")
    files = [path]
    try:
        if path.endswith(".json"):
            with open(path, encoding="utf-8") as f:
                shards = set(json.load(f)["weight_map"].values())
            files = [os.path.join(os.path.dirname(path), s)
                     for s in sorted(shards)]
        names = []
        for file in files:
            with open(file, "rb") as f:
                length = int.from_bytes(f.read(8), "little")
                header = json.loads(f.read(length))
            names += [name for name, entry in header.items()
                      if name != "__metadata__" and
                      entry.get("dtype") == "BF16" and
                      len(entry.get("shape", ())) == 2]
        return sorted(names)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


def cached_library(config, config_path, weights_path=None,
                   compile_options=None):
    """The compiled library of a validated description, from gdn.cache or
    compiled into it. The code depends on the description and on which
    weight matrices are bf16, so their canonical JSON stands for the source
    in the cache key."""
    flags = list(COMPILE_OPTIONS) + cache.compile_flags(compile_options)
    if weights_path is None:
        weights_path = config_path if checkpoint_config(config_path) \
            else model.default_weights_path(config_path)
    source = json.dumps({"config": config,
                         "bf16": _bf16_matrices(weights_path)},
                        sort_keys=True)
    return cache.cached_library(
        source, flags,
        build=lambda compiler, out: compile_model(
            config_path, out, weights_path, compiler, compile_options))


def checkpoint_config(path):
    """The config.json of the Hugging Face checkpoint at `path` (its folder,
    or the config.json itself) as a dict, or None when `path` is not one
    (gdn's own model description has no "model_type")."""
    path = os.fspath(path)
    config_file = os.path.join(path, "config.json") \
        if os.path.isdir(path) else path
    if not os.path.isfile(config_file):
        if os.path.isdir(path):
            raise ValueError(f"{path}: a folder without config.json")
        return None
    with open(config_file, encoding="utf-8") as f:
        try:
            config = json.load(f)
        except json.JSONDecodeError:
            return None  # load_config reports it
    return config if isinstance(config, dict) and "model_type" in config \
        else None


class CompiledModel:
    """The compiled model of `config_path` (a model description, or a
    Hugging Face checkpoint folder: docs/huggingface.md) with the weights
    beside it (or `weights_path`), caching one batch of equal-length
    sequences. The
    library is `library_path`, or compiled on first use and cached, with
    the pipeline options `compile_options` by keyword
    (gdn.cache.pipeline_options). With check_numerics=True every call scans
    the new caches and the logits and raises FloatingPointError naming the
    first layer, cache, sequence and position holding a NaN or Inf (the
    caches then stay as before the call). On a GPU, decode steps replay one
    CUDA graph per batch size (`decode_graphs=False` launches every kernel
    from the host instead; `decode_graph_counts` tells how steps ran)."""

    def __init__(self, config_path, weights_path=None, library_path=None,
                 compile_options=None, check_numerics=False,
                 decode_graphs=True):
        checkpoint = checkpoint_config(config_path)
        if checkpoint is not None:
            # gdn-compile validates the checkpoint; the folder holds the
            # weights (one file or shards).
            self.config = checkpoint
            folder = os.fspath(config_path)
            if not os.path.isdir(folder):
                folder = os.path.dirname(folder) or "."
            config_path = folder
            if weights_path is None:
                weights_path = folder
        else:
            self.config = model.load_config(config_path)
            self.kinds = model.layer_kinds(self.config)
            if weights_path is None:
                weights_path = model.default_weights_path(config_path)
        if library_path is None:
            library_path = cached_library(self.config, config_path,
                                          weights_path, compile_options)
        self._library_path = os.fspath(library_path)
        self._api = _load_api(library_path)
        self._handle = self._api.gdn_model_load(
            os.fsencode(os.fspath(weights_path)))
        if not self._handle:
            raise ValueError(self._error())
        if check_numerics:
            self._api.gdn_model_set_check_numerics(self._handle, 1)
        if not decode_graphs:
            self._api.gdn_model_set_decode_graphs(self._handle, 0)
        self.vocab_size = self._api.gdn_model_vocab_size(self._handle)

    def __del__(self):
        if getattr(self, "_handle", None):
            self._api.gdn_model_free(self._handle)
            self._handle = None

    def _error(self):
        return self._api.gdn_model_last_error().decode("utf-8", "replace")

    @property
    def device(self):
        """Where the library runs: "CPU", or the GPU of a CUDA build."""
        return self._api.gdn_model_device().decode("utf-8", "replace")

    @property
    def position(self):
        """Tokens per sequence so far."""
        return self._api.gdn_model_position(self._handle)

    @property
    def decode_graph_counts(self):
        """(graphs recorded, replays, kernel nodes updated by replays) of
        the one-token steps so far; zeros on a CPU."""
        counts = [ctypes.c_int64() for _ in range(3)]
        self._api.gdn_model_decode_graph_counts(
            self._handle, *[ctypes.byref(c) for c in counts])
        return tuple(c.value for c in counts)

    @property
    def batch(self):
        """The number of sequences (0 before the first prefill)."""
        return self._api.gdn_model_batch(self._handle)

    def _logits(self, last_only):
        batch, tokens = ctypes.c_int64(), ctypes.c_int64(1)
        if last_only:
            pointer = self._api.gdn_model_last_logits(self._handle,
                                                      ctypes.byref(batch))
        else:
            pointer = self._api.gdn_model_logits(self._handle,
                                                 ctypes.byref(batch),
                                                 ctypes.byref(tokens))
        if not pointer:
            raise RuntimeError(self._error())
        shape = (batch.value, tokens.value, self.vocab_size)
        if last_only:
            shape = (batch.value, self.vocab_size)
        return np.ctypeslib.as_array(pointer, shape=shape).copy()

    def _call(self, function, ids, *sizes, last_only=False):
        # The step computes the logits of the last positions alone when
        # that is all the caller reads.
        self._api.gdn_model_set_last_logits_only(self._handle, int(last_only))
        pointer = ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
        if function(self._handle, pointer, *sizes) != 0:
            message = self._error()
            if message.startswith("numerics:"):
                raise FloatingPointError(message)
            raise ValueError(message)
        return self._logits(last_only)

    @staticmethod
    def _ids(token_ids, rank):
        ids = np.ascontiguousarray(token_ids, dtype=np.int64)
        if ids.ndim != rank or ids.size == 0:
            raise ValueError(f"token_ids must be a non-empty "
                             f"{'[B, T]' if rank == 2 else '[B]'} array, "
                             f"got shape {ids.shape}")
        return ids

    def prefill(self, token_ids, last_only=False):
        """Logits [B, T, vocab] (float32) of new sequences token_ids [B, T];
        the caches then hold them. With last_only=True, the logits [B, vocab]
        of each sequence's last position alone: the LM head runs for those
        positions only (and on a GPU they are the only ones copied to the
        host)."""
        ids = self._ids(token_ids, 2)
        return self._call(self._api.gdn_model_prefill, ids, *ids.shape,
                          last_only=last_only)

    def decode(self, token_ids):
        """Logits [B, vocab] (float32) of the next token of each sequence,
        token_ids [B], continuing from the caches."""
        ids = self._ids(token_ids, 1)
        if self.batch and ids.shape[0] != self.batch:
            raise ValueError(f"token_ids: expected {self.batch} tokens (the "
                             f"batch of the sequences), got {ids.shape[0]}")
        return self._call(self._api.gdn_model_decode, ids, last_only=True)

    def extend(self, token_ids, last_only=False):
        """Logits [B, T, vocab] of T more tokens token_ids [B, T] of each
        sequence (a prompt prefilled in chunks); last_only as in prefill."""
        ids = self._ids(token_ids, 2)
        return self._call(self._api.gdn_model_extend, ids, *ids.shape,
                          last_only=last_only)

    def cache_nbytes(self):
        """{"gdn": bytes, "mla": bytes} of one sequence's caches: the
        fixed-size GDN states, and the caches that grow with the tokens
        (MLA latents and RoPE keys, or attention keys and values)."""
        gdn, mla = ctypes.c_int64(), ctypes.c_int64()
        self._api.gdn_model_cache_bytes(self._handle, ctypes.byref(gdn),
                                        ctypes.byref(mla))
        return {"gdn": gdn.value, "mla": mla.value}


def _load_api(library_path):
    """The library with the prototypes of gdn_model.h."""
    api = ctypes.CDLL(os.fspath(library_path))
    handle, i64 = ctypes.c_void_p, ctypes.c_int64
    ids = ctypes.POINTER(ctypes.c_int64)
    prototypes = {
        "gdn_model_load": (handle, [ctypes.c_char_p]),
        "gdn_model_free": (None, [handle]),
        "gdn_model_last_error": (ctypes.c_char_p, []),
        "gdn_model_device": (ctypes.c_char_p, []),
        "gdn_model_prefill": (ctypes.c_int, [handle, ids, i64, i64]),
        "gdn_model_extend": (ctypes.c_int, [handle, ids, i64, i64]),
        "gdn_model_decode": (ctypes.c_int, [handle, ids]),
        "gdn_model_logits": (ctypes.POINTER(ctypes.c_float),
                             [handle, ctypes.POINTER(i64),
                              ctypes.POINTER(i64)]),
        "gdn_model_last_logits": (ctypes.POINTER(ctypes.c_float),
                                  [handle, ctypes.POINTER(i64)]),
        "gdn_model_set_check_numerics": (ctypes.c_int, [handle,
                                                        ctypes.c_int]),
        "gdn_model_set_last_logits_only": (ctypes.c_int, [handle,
                                                          ctypes.c_int]),
        "gdn_model_set_decode_graphs": (ctypes.c_int, [handle,
                                                       ctypes.c_int]),
        "gdn_model_decode_graph_counts": (ctypes.c_int, [
            handle, ctypes.POINTER(i64), ctypes.POINTER(i64),
            ctypes.POINTER(i64)]),
        "gdn_model_position": (i64, [handle]),
        "gdn_model_vocab_size": (i64, [handle]),
        "gdn_model_batch": (i64, [handle]),
        "gdn_model_cache_bytes": (i64, [handle, ctypes.POINTER(i64),
                                        ctypes.POINTER(i64)]),
    }
    for name, (restype, argtypes) in prototypes.items():
        function = getattr(api, name)
        function.restype = restype
        function.argtypes = argtypes
    return api


def __getattr__(name):
    if name == "Model":
        warnings.warn("gdn.compiled_model.Model is deprecated: use "
                      "CompiledModel (gdn.model is the float64 reference "
                      "model)", DeprecationWarning, stacklevel=2)
        return CompiledModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
