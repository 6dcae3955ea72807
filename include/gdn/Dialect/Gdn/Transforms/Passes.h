//===- Passes.h - gdn dialect transformation passes -------------*- C++ -*-===//

#ifndef GDN_DIALECT_GDN_TRANSFORMS_PASSES_H
#define GDN_DIALECT_GDN_TRANSFORMS_PASSES_H

#include "gdn/Dialect/Gdn/Transforms/Transforms.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

#include "llvm/Support/Error.h"

namespace mlir::gdn {

#define GEN_PASS_DECL
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"

/// The option bounds of gdn-chunk-delta-rule, shared by the pass and the
/// pipelines that set them; the message names the option.
llvm::Error checkChunkDeltaRuleOptions(
    const GdnChunkDeltaRulePassOptions &options);

#define GEN_PASS_REGISTRATION
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"

} // namespace mlir::gdn

#endif // GDN_DIALECT_GDN_TRANSFORMS_PASSES_H
