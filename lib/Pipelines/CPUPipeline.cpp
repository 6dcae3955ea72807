//===- CPUPipeline.cpp - gdn-lower-to-cpu ---------------------------------===//

#include "gdn/Conversion/Passes.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"
#include "gdn/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::gdn;

void mlir::gdn::buildGdnBufferizedToLLVMPipeline(OpPassManager &pm) {
  // Copies made by the deallocation pipeline (bufferization.clone).
  pm.addPass(createConvertBufferizationToMemRefPass());
  // Subviews become explicit offset arithmetic (affine.apply) before
  // memref-to-llvm.
  pm.addPass(memref::createExpandStridedMetadataPass());
  // That arithmetic, and the floordiv maps of grouped value heads, are
  // affine.apply ops.
  pm.addPass(createLowerAffinePass());
  // bf16 conversions become integer bit manipulation: the JIT and plain
  // links then need no soft-float helpers from a compiler runtime.
  arith::ArithExpandOpsPassOptions expandOptions;
  expandOptions.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expandOptions));
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::gdn::buildGdnToCPUPipeline(OpPassManager &pm,
                                      const CPUPipelineOptions &options) {
  if (options.deltaRuleForm == DeltaRuleForm::Chunked) {
    GdnChunkDeltaRulePassOptions chunkOptions;
    chunkOptions.chunkSize = options.chunkSize;
    pm.addNestedPass<func::FuncOp>(createGdnChunkDeltaRulePass(chunkOptions));
  }
  // Decode steps, and prefills left in the recurrent form.
  pm.addNestedPass<func::FuncOp>(createConvertGdnToRecurrencePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // Whole-module bufferization so that function arguments and results become
  // memrefs with the identity layout, the form the C ABI wrappers expect.
  bufferization::OneShotBufferizePassOptions bufferizeOptions;
  bufferizeOptions.bufferizeFunctionBoundaries = true;
  bufferizeOptions.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferizeOptions));
  // Temporaries allocated per token are freed again.
  bufferization::buildBufferDeallocationPipeline(pm);

  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createForallToForLoopPass());
  pm.addPass(createCanonicalizerPass());
  buildGdnBufferizedToLLVMPipeline(pm);
}

void mlir::gdn::registerGdnPipelines() {
  PassPipelineRegistration<CPUPipelineOptions>(
      "gdn-lower-to-cpu",
      "Lower gdn ops on tensors in func.func to the LLVM dialect for the CPU",
      buildGdnToCPUPipeline);
}
