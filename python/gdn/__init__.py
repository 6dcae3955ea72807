"""gdn: a compiler for gated delta-rule linear attention.

The package holds the float64 references (gdn.reference), input generators
for tests (gdn.inputs) and helpers that emit and run MLIR (gdn.mlir).
"""

from . import inputs, reference  # noqa: F401
