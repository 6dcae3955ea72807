"""gdn: a compiler for gated delta-rule linear attention.

The package holds the float64 references (gdn.reference), input generators
for tests (gdn.inputs), helpers that emit and run MLIR (gdn.mlir) and the
compiled ops for numpy arrays (gdn.delta_rule, gdn.delta_rule_step, from
gdn.compiled) and the design document's Gated DeltaNet layer
(gdn.GatedDeltaNetLayer, gdn.init_gated_deltanet,
gdn.gated_deltanet_reference, from gdn.layers), the hybrid GDN + MLA model
description, weights and float64 reference (gdn.model), the compiled model
(gdn.Model, from gdn.compiled_model: prefill and cached decode) and the
safetensors format (gdn.safetensors).
"""

from . import inputs, reference  # noqa: F401
from . import model, safetensors  # noqa: F401
from .compiled_model import Model  # noqa: F401
from .compiled import delta_rule, delta_rule_step  # noqa: F401
from .layers import (  # noqa: F401
    GatedDeltaNetLayer, gated_deltanet_reference, init_gated_deltanet)
