//===- CUDAPipeline.cpp - gdn-lower-to-cuda -------------------------------===//

#include "gdn/Conversion/Passes.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"
#include "gdn/Pipelines/Pipelines.h"

#include "ResultsToOutParams.h"

#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::gdn;

void mlir::gdn::buildGdnToGPUPipeline(OpPassManager &pm,
                                      const CUDAPipelineOptions &options) {
  ConvertGdnToGPUPassOptions gpuOptions;
  gpuOptions.blockColumns = options.blockColumns;
  gpuOptions.keySplits = options.keySplits;
  gpuOptions.chunkedPrefill = options.chunkedPrefill;
  gpuOptions.valueTile = options.valueTile;
  gpuOptions.scanWarps = options.scanWarps;
  gpuOptions.multiprocessors = options.multiprocessors;
  pm.addNestedPass<func::FuncOp>(createConvertGdnToGPUPass(gpuOptions));
  // Outline the kernels before canonicalization: inside the isolated
  // gpu.func, constants (the unrolled state indices) stay in the kernel
  // instead of being hoisted into the host function and passed as 100+
  // kernel parameters, which ptxas must keep in registers (and spills).
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // With the workgroup memory sizes now constant: registers must not cost
  // the chunked scan the second block per multiprocessor.
  pm.addPass(createGdnSharedMemoryOccupancyPass());
}

void mlir::gdn::buildGdnGPUToLLVMPipeline(OpPassManager &pm,
                                          const CUDAPipelineOptions &options) {
  // The host function's arguments are device buffers that stay unmodified,
  // and its results become caller-allocated device buffers: an allocation
  // left in host code would be host memory, which kernels cannot use.
  pm.addNestedPass<func::FuncOp>(createGdnReadOnlyArgumentsPass());
  bufferization::OneShotBufferizePassOptions bufferizeOptions;
  bufferizeOptions.bufferizeFunctionBoundaries = true;
  bufferizeOptions.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferizeOptions));
  if (options.managedHostBuffers) {
    // An executable's buffers, results included, are managed memory that
    // both sides reach; results stay results, so @main can call functions
    // whose result shapes are dynamic.
    pm.addNestedPass<func::FuncOp>(createGdnManagedHostBuffersPass());
  } else {
    addResultsToOutParams(pm);
  }
  pm.addPass(createCanonicalizerPass());

  // Kernel outlining, NVVM, the cubin by ptxas, and host code calling the
  // mgpu* runtime (lib/Runtime).
  gpu::GPUToNVVMPipelineOptions nvvmOptions;
  nvvmOptions.cubinChip = options.chip;
  nvvmOptions.cubinFeatures = options.features;
  nvvmOptions.cubinFormat = options.binaryFormat;
  nvvmOptions.optLevel = 3;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvmOptions);
}

void mlir::gdn::buildGdnToCUDAPipeline(OpPassManager &pm,
                                       const CUDAPipelineOptions &options) {
  buildGdnToGPUPipeline(pm, options);
  buildGdnGPUToLLVMPipeline(pm, options);
}
