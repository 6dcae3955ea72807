"""A hybrid model compiled by gdn-compile (model.json -> shared library),
run on numpy arrays: `Model(config_path)` with `prefill` and `decode`, the
compiled counterpart of `gdn.model.ModelReference`.

The library exports (docs/model-description.md):

- `gdn_model_prefill(ids, weights...) -> logits`, a sequence from scratch;
- `gdn_model_step(ids, caches..., weights...) -> (logits, caches...)`, which
  continues sequences from their caches: two per layer, the GDN conv state
  and delta-rule state, or the MLA latents and RoPE keys so far.

Both take memref descriptors (the `_mlir_ciface_` wrappers); results come
back through trailing out-parameters.
"""

import ctypes
import json
import os
import subprocess
import tempfile

import numpy as np

from . import compiled, model

__all__ = ["Model", "compile_model", "cached_library"]


def compile_model(config_path, library_path, weights_path=None):
    """Runs gdn-compile on a model description; RuntimeError with its
    diagnostics on failure."""
    command = [compiled.find_compiler(), os.fspath(config_path),
               "--emit=shared", "-o", os.fspath(library_path)]
    if weights_path is not None:
        command.append(f"--weights={os.fspath(weights_path)}")
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"gdn-compile {os.fspath(config_path)} failed:\n"
                           f"{result.stderr}")


def cached_library(config, config_path, weights_path=None):
    """The compiled library of a validated description, from the cache
    (gdn.compiled.cache_dir) or compiled into it. The code depends only on
    the description, so the key is its canonical JSON and the compiler."""
    source = json.dumps(config, sort_keys=True)
    compiler = compiled.find_compiler()
    path = compiled.options_library_path(source, compiler, ["model"],
                                         compiled.cache_dir())
    if not os.path.isfile(path):
        fd, tmp = tempfile.mkstemp(suffix=".so.tmp", dir=os.path.dirname(path))
        os.close(fd)
        try:
            compile_model(config_path, tmp, weights_path)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return path


class Model:
    """The compiled model of `config_path` with the weights beside it (or
    `weights_path`), caching one batch of equal-length sequences. The
    library is `library_path`, or compiled on first use and cached."""

    def __init__(self, config_path, weights_path=None, library_path=None):
        self.config, weights = model.load_model(config_path, weights_path)
        self.kinds = model.layer_kinds(self.config)
        self._weights = [np.ascontiguousarray(weights[n], dtype=np.float32)
                         for n in sorted(weights)]
        if library_path is None:
            library_path = cached_library(self.config, config_path,
                                          weights_path)
        self._library = ctypes.CDLL(os.fspath(library_path))
        self._step = self._library._mlir_ciface_gdn_model_step
        self._step.restype = None
        # ids, the caches in and out, the logits, the weights.
        self._step.argtypes = [ctypes.c_void_p] * (
            2 + 4 * len(self.kinds) + len(self._weights))
        # The weights do not move: their descriptors are built once.
        self._weight_descriptors = [compiled.descriptor(w)
                                    for w in self._weights]
        self.reset()

    def reset(self):
        """Forgets the sequences."""
        self.caches = None
        self.position = 0

    def _empty_caches(self, batch):
        caches = []
        for kind in self.kinds:
            if kind == "gdn":
                g = self.config["gdn"]
                d_out = g["num_heads"] * g["head_dim"]
                caches.append(np.zeros((batch, g["conv_size"] - 1, 3 * d_out),
                                       np.float32))
                caches.append(np.zeros((batch, g["num_heads"], g["head_dim"],
                                        g["head_dim"]), np.float32))
            else:
                m = self.config["mla"]
                caches.append(np.zeros((batch, 0, m["kv_lora_rank"]),
                                       np.float32))
                caches.append(np.zeros((batch, 0, m["qk_rope_head_dim"]),
                                       np.float32))
        return caches

    def _check_ids(self, ids):
        vocab = self.config["vocab_size"]
        if ids.size and (ids.min() < 0 or ids.max() >= vocab):
            bad = ids[(ids < 0) | (ids >= vocab)][0]
            raise ValueError(f"token id {int(bad)} outside the vocabulary "
                             f"0..{vocab - 1}")
        limit = self.config["max_context"]
        if self.position + ids.shape[1] > limit:
            raise ValueError(f"max_context: {self.position + ids.shape[1]} "
                             f"tokens exceed the model's {limit}")

    def _continue_batch(self, batch, what):
        """Empty caches for `batch` sequences if there are none; otherwise
        checks that `batch` is theirs."""
        if self.caches is None:
            self.caches = self._empty_caches(batch)
        elif batch != self.caches[0].shape[0]:
            raise ValueError(f"token_ids: expected {self.caches[0].shape[0]} "
                             f"{what} (the batch of the caches), got {batch}")

    def _run(self, ids):
        batch, tokens = ids.shape
        self._check_ids(ids)
        outputs = [np.empty((batch, tokens, self.config["vocab_size"]),
                            np.float32)]
        for i, cache in enumerate(self.caches):
            shape = list(cache.shape)
            if self.kinds[i // 2] == "mla":     # the new tokens are appended
                shape[1] += tokens
            outputs.append(np.empty(shape, np.float32))
        descriptors = (
            [compiled.descriptor(a) for a in [ids] + self.caches]
            + self._weight_descriptors
            + [compiled.descriptor(a) for a in outputs])
        self._step(*[ctypes.addressof(d) for d in descriptors])
        self.caches = outputs[1:]
        self.position += tokens
        return outputs[0]

    def prefill(self, token_ids):
        """Logits [B, T, vocab] (float32) of new sequences token_ids [B, T];
        the caches then hold them."""
        ids = np.ascontiguousarray(token_ids, dtype=np.int64)
        if ids.ndim != 2 or ids.size == 0:
            raise ValueError(f"token_ids must be a non-empty [B, T] array, "
                             f"got shape {ids.shape}")
        self.reset()
        self.caches = self._empty_caches(ids.shape[0])
        return self._run(ids)

    def decode(self, token_ids):
        """Logits [B, vocab] (float32) of the next token of each sequence,
        token_ids [B], continuing from the caches."""
        ids = np.ascontiguousarray(token_ids, dtype=np.int64)
        if ids.ndim != 1 or ids.size == 0:
            raise ValueError(f"token_ids must be a non-empty [B] array, got "
                             f"shape {ids.shape}")
        self._continue_batch(ids.shape[0], "tokens")
        return self._run(ids[:, None])[:, 0]

    def extend(self, token_ids):
        """Logits [B, T, vocab] of T more tokens token_ids [B, T] of each
        sequence (a prompt prefilled in chunks)."""
        ids = np.ascontiguousarray(token_ids, dtype=np.int64)
        if ids.ndim != 2 or ids.size == 0:
            raise ValueError(f"token_ids must be a non-empty [B, T] array, "
                             f"got shape {ids.shape}")
        self._continue_batch(ids.shape[0], "sequences")
        return self._run(ids)

    def cache_nbytes(self):
        """{"gdn": bytes, "mla": bytes} of one sequence's caches."""
        result = {"gdn": 0, "mla": 0}
        for i, cache in enumerate(self.caches or ()):
            result[self.kinds[i // 2]] += cache.nbytes // cache.shape[0]
        return result
