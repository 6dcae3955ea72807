"""gdn: a compiler for gated delta-rule linear attention.

The package, one module per responsibility:

- gdn.reference: the float64 reference of every op (delta rule, Gated
  DeltaNet layer, MLA, RMSNorm, SwiGLU MLP and the element-wise functions
  they use), the one oracle that the tests and the model reference share;
- gdn.inputs: input generators for tests;
- gdn.mlir: MLIR text (the one tensor-type formatter, float literals,
  element-type rounding) and the test programs run with mlir-runner;
- gdn.cache: finding gdn-compile, and the one cache of the libraries it
  builds, keyed by source, options and compiler;
- gdn.compiled: the compiled ops for numpy arrays (gdn.delta_rule,
  gdn.delta_rule_step), which take torch CPU tensors too (gdn.interop);
- gdn.compiled_serving: their packed-sequence, state-pool and raw-gate
  forms, and gdn.delta_rule_verify (draft tokens with the state after
  each);
- gdn.layers: the design document's Gated DeltaNet layer
  (gdn.GatedDeltaNetLayer, gdn.init_gated_deltanet,
  gdn.gated_deltanet_reference);
- gdn.model: the hybrid GDN + MLA model description, its weights and the
  float64 reference model (gdn.model.ModelReference);
- gdn.compiled_model: the compiled model (gdn.CompiledModel: prefill and
  cached decode);
- gdn.safetensors: the safetensors format;
- gdn.report: the cost report of a model description (cache bytes and
  token-mixing FLOPs over context lengths; a plot with matplotlib);
- gdn.tokenizer: the byte-level BPE tokenizer of Qwen models
  (gdn.Tokenizer, over libgdn-tokenizer.so);
- gdn.cuda: prebuilt CUDA kernels on torch tensors (import gdn.cuda; not
  loaded by `import gdn`).

gdn.Model is a deprecated alias of gdn.CompiledModel.
"""

import warnings

# The project's version (CMakeLists.txt, project(gdn VERSION ...)); a test
# keeps the two equal.
__version__ = "0.6.0"

__all__ = ["CompiledModel", "Tokenizer", "delta_rule", "delta_rule_step",
           "delta_rule_verify",
           "GatedDeltaNetLayer", "gated_deltanet_reference",
           "init_gated_deltanet", "inputs", "reference", "model",
           "safetensors", "report", "__version__"]

from . import inputs, reference  # noqa: F401
from . import model, report, safetensors  # noqa: F401
from .compiled_model import CompiledModel  # noqa: F401
from .compiled import delta_rule, delta_rule_step  # noqa: F401
from .compiled_serving import delta_rule_verify  # noqa: F401
from .tokenizer import Tokenizer  # noqa: F401
from .layers import (  # noqa: F401
    GatedDeltaNetLayer, gated_deltanet_reference, init_gated_deltanet)


def __getattr__(name):
    # gdn.Model read as the module gdn.model; kept for one release.
    if name == "Model":
        warnings.warn("gdn.Model is deprecated: use gdn.CompiledModel "
                      "(gdn.model is the float64 reference model)",
                      DeprecationWarning, stacklevel=2)
        return CompiledModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
