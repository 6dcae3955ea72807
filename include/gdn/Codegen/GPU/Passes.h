//===- Passes.h - Codegen/GPU passes ----------------------------*- C++ -*-===//
//
// GPU code generation: occupancy hints for ptxas, managed memory for the
// host buffers of CUDA executables, projections on tensor cores, fills
// folded into their readers, host linalg ops as grid-mapped loops, device
// memory for the temporaries of host code.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_CODEGEN_GPU_PASSES_H
#define GDN_CODEGEN_GPU_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

#include "llvm/Support/Error.h"

namespace mlir::gdn {

#define GEN_PASS_DECL
#include "gdn/Codegen/GPU/Passes.h.inc"

/// The option bounds of gdn-shared-memory-occupancy.
llvm::Error checkSharedMemoryOccupancyOptions(
    const GdnSharedMemoryOccupancyPassOptions &options);

/// The discardable attribute of gdn-gpu-fold-fills: the value that every
/// element of a reduction's output holds before the op (a fill folded into
/// it), so that the reduction can start from it without reading the
/// output.
constexpr llvm::StringLiteral kReductionInitAttrName = "gdn.reduction_init";

/// The final `combine(out, x)` of a reduction whose payload reads the
/// output `out` only there (a sum, maximum or minimum into its one output,
/// whose reduction loop is the only one); null otherwise.
Operation *finalCombinerOf(linalg::LinalgOp op);

/// The option bounds of gdn-gpu-map-parallel-loops.
llvm::Error
checkMapParallelLoopsOptions(const GdnGPUMapParallelLoopsPassOptions &options);

#define GEN_PASS_REGISTRATION
#include "gdn/Codegen/GPU/Passes.h.inc"

} // namespace mlir::gdn

#endif // GDN_CODEGEN_GPU_PASSES_H
