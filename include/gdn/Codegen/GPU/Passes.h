//===- Passes.h - Codegen/GPU passes ----------------------------*- C++ -*-===//
//
// GPU code generation: occupancy hints for ptxas, managed memory for the
// host buffers of CUDA executables, projections on tensor cores, host
// linalg ops as grid-mapped loops, device memory for the temporaries of
// host code.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_CODEGEN_GPU_PASSES_H
#define GDN_CODEGEN_GPU_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

#include "llvm/Support/Error.h"

namespace mlir::gdn {

#define GEN_PASS_DECL
#include "gdn/Codegen/GPU/Passes.h.inc"

/// The option bounds of gdn-shared-memory-occupancy.
llvm::Error checkSharedMemoryOccupancyOptions(
    const GdnSharedMemoryOccupancyPassOptions &options);

/// The option bounds of gdn-gpu-map-parallel-loops.
llvm::Error
checkMapParallelLoopsOptions(const GdnGPUMapParallelLoopsPassOptions &options);

#define GEN_PASS_REGISTRATION
#include "gdn/Codegen/GPU/Passes.h.inc"

} // namespace mlir::gdn

#endif // GDN_CODEGEN_GPU_PASSES_H
