//===- Passes.td - gdn conversion passes -------------------*- tablegen -*-===//

#ifndef GDN_CONVERSION_PASSES_TD
#define GDN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertGdnToRecurrencePass
    : Pass<"convert-gdn-to-recurrence", "func::FuncOp"> {
  let summary = "Lower gdn delta-rule ops to the token-by-token recurrence";
  let description = [{
    Rewrites `gdn.delta_rule` into an `scf.for` loop over tokens whose body
    applies one step of the gated delta rule to the f32 state of every batch
    entry and value head with `linalg.generic` ops, and `gdn.delta_rule_step`
    into that body alone. The result uses only upstream dialects (scf, linalg,
    tensor, arith, math) and follows the op semantics literally: decay, read
    under the key, write the correction, read with the query.

    This is the reference lowering. It is the correctness oracle inside IR and
    the simplest executable path; it is not tuned for speed (the chunked form
    is the fast path).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

#endif // GDN_CONVERSION_PASSES_TD
