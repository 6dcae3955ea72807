//===- Passes.h - Codegen/CPU passes ----------------------------*- C++ -*-===//
//
// CPU code generation: the transform schedule and vectorization of the chunk
// matmuls, FTZ/DAZ, scratch buffers hoisted out of sequential loops.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_CODEGEN_CPU_PASSES_H
#define GDN_CODEGEN_CPU_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

#include "llvm/Support/Error.h"

namespace mlir::gdn {

#define GEN_PASS_DECL
#include "gdn/Codegen/CPU/Passes.h.inc"

/// The option bounds of gdn-cpu-tile-projections.
llvm::Error
checkCPUTileProjectionsOptions(const GdnCPUTileProjectionsPassOptions &options);

/// The option bounds of gdn-cpu-vectorize (the register tile).
llvm::Error checkCPUVectorizeOptions(const GdnCPUVectorizePassOptions &options);

#define GEN_PASS_REGISTRATION
#include "gdn/Codegen/CPU/Passes.h.inc"

} // namespace mlir::gdn

#endif // GDN_CODEGEN_CPU_PASSES_H
