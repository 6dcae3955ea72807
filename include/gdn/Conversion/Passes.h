//===- Passes.h - gdn conversion passes -------------------------*- C++ -*-===//

#ifndef GDN_CONVERSION_PASSES_H
#define GDN_CONVERSION_PASSES_H

#include "gdn/Conversion/GdnToGPU/GdnToGPU.h"
#include "gdn/Conversion/GdnToRecurrence/GdnToRecurrence.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

#include "llvm/Support/Error.h"

namespace mlir::gdn {

#define GEN_PASS_DECL
#include "gdn/Conversion/Passes.h.inc"

/// The option bounds of convert-gdn-to-gpu (block shapes of the kernels).
llvm::Error checkGdnToGPUOptions(const ConvertGdnToGPUPassOptions &options);

/// The option bounds of gdn-choose-scan-strategy.
llvm::Error
checkScanStrategyOptions(const GdnChooseScanStrategyPassOptions &options);

#define GEN_PASS_REGISTRATION
#include "gdn/Conversion/Passes.h.inc"

} // namespace mlir::gdn

#endif // GDN_CONVERSION_PASSES_H
