"""gdn: a compiler for gated delta-rule linear attention.

The package holds the float64 references (gdn.reference), input generators
for tests (gdn.inputs), helpers that emit and run MLIR (gdn.mlir) and the
compiled ops for numpy arrays (gdn.delta_rule, gdn.delta_rule_step, from
gdn.compiled).
"""

from . import inputs, reference  # noqa: F401
from .compiled import delta_rule, delta_rule_step  # noqa: F401
