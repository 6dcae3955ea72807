//===- CPUPipeline.cpp - gdn-lower-to-cpu ---------------------------------===//

#include "gdn/ABI/Passes.h"
#include "gdn/Codegen/CPU/Passes.h"
#include "gdn/Conversion/Passes.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"
#include "gdn/Pipelines/Pipelines.h"

#include "ResultsToOutParams.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
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

static GdnChunkDeltaRulePassOptions
chunkOptionsOf(const CPUPipelineOptions &options) {
  GdnChunkDeltaRulePassOptions chunkOptions;
  chunkOptions.chunkSize = options.chunkSize;
  chunkOptions.recurrentBelow = options.recurrentBelow;
  return chunkOptions;
}

static GdnCPUTileProjectionsPassOptions
tileOptionsOf(const CPUPipelineOptions &options) {
  GdnCPUTileProjectionsPassOptions tileOptions;
  tileOptions.rowBlock = options.projectionRowBlock;
  tileOptions.rowTile = options.projectionRowTile;
  tileOptions.columnTile = options.matmulTileN;
  tileOptions.rowDotParallelMin = options.projectionRowDotParallelMin;
  return tileOptions;
}

static GdnCPUVectorizePassOptions
vectorizeOptionsOf(const CPUPipelineOptions &options) {
  GdnCPUVectorizePassOptions vectorizeOptions;
  vectorizeOptions.matmulTileM = options.matmulTileM;
  vectorizeOptions.matmulTileN = options.matmulTileN;
  return vectorizeOptions;
}

llvm::Error
mlir::gdn::verifyCPUPipelineOptions(const CPUPipelineOptions &options) {
  if (llvm::Error error = checkChunkDeltaRuleOptions(chunkOptionsOf(options)))
    return error;
  if (llvm::Error error =
          checkCPUTileProjectionsOptions(tileOptionsOf(options)))
    return llvm::createStringError("projection-" +
                                   llvm::toString(std::move(error)));
  if (llvm::Error error = checkCPUVectorizeOptions(vectorizeOptionsOf(options)))
    return error;
  if (options.mlaKeySplit < 0 || options.mlaKeySplit > 1024)
    return llvm::createStringError(
        "mla-key-split must be 0 (off) or 1..1024, but got " +
        llvm::Twine(options.mlaKeySplit));
  if (options.attentionBlock < 0 || options.attentionBlock > 1024)
    return llvm::createStringError(
        "attention-block must be 0 (off) or 1..1024, but got " +
        llvm::Twine(options.attentionBlock));
  if (options.numThreads < 0)
    return llvm::createStringError(
        "num-threads must be 0 (the OpenMP runtime's default) or positive, "
        "but got " +
        llvm::Twine(options.numThreads));
  return llvm::Error::success();
}

void mlir::gdn::buildGdnToLinalgPipeline(OpPassManager &pm,
                                         const CPUPipelineOptions &options) {
  // Layer ops become core ops and linalg first; attention that continues a
  // cache in the absorbed form.
  if (options.mlaAbsorbedDecode) {
    GdnAbsorbMlaDecodePassOptions absorbOptions;
    absorbOptions.keySplit = options.mlaKeySplit;
    pm.addNestedPass<func::FuncOp>(createGdnAbsorbMlaDecodePass(absorbOptions));
  }
  // Prefill attention in blocks, without the T x T scores.
  GdnBlockAttentionPassOptions blockOptions;
  blockOptions.blockSize = options.attentionBlock;
  pm.addNestedPass<func::FuncOp>(createGdnBlockAttentionPass(blockOptions));
  pm.addNestedPass<func::FuncOp>(createGdnDecomposeLayersPass());
  // Packed sequences and state pools around dense delta-rule ops.
  pm.addNestedPass<func::FuncOp>(createGdnUnpackSequencesPass());
  // Projections in static row tiles, for gdn-cpu-vectorize's FMA schedule.
  pm.addNestedPass<func::FuncOp>(
      createGdnCPUTileProjectionsPass(tileOptionsOf(options)));
  if (options.deltaRuleForm == DeltaRuleForm::Chunked) {
    pm.addNestedPass<func::FuncOp>(
        createGdnChunkDeltaRulePass(chunkOptionsOf(options)));
    // Decode steps as one task per head, vectorized later.
    pm.addNestedPass<func::FuncOp>(createGdnParallelizeDeltaRuleStepPass());
  }
  // Whatever is left takes the reference recurrence.
  pm.addNestedPass<func::FuncOp>(createConvertGdnToRecurrencePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

/// Leftover n-D transfers are unrolled: left as loops, their scratch
/// allocas would grow the stack in every iteration.
static VectorTransferToSCFOptions vectorToSCFOptions() {
  VectorTransferToSCFOptions options;
  options.enableFullUnroll();
  return options;
}

void mlir::gdn::buildGdnLinalgToLLVMCPUPipeline(
    OpPassManager &pm, const CPUPipelineOptions &options) {
  if (options.cInterfaces)
    pm.addPass(createGdnExportCInterfacesPass());
  // Whole-module bufferization so that function arguments and results become
  // memrefs with the identity layout, the form the C ABI wrappers expect.
  // Callers keep their inputs: results never reuse argument buffers.
  pm.addNestedPass<func::FuncOp>(createGdnReadOnlyArgumentsPass());
  // Outputs computed into fresh tiles and then inserted into a larger tensor
  // are computed in place instead (no copy per chunk).
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferizeOptions;
  bufferizeOptions.bufferizeFunctionBoundaries = true;
  bufferizeOptions.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferizeOptions));
  // A model's layer functions write into buffers their caller passes and
  // return them; those results are dropped, so that only public functions
  // return buffers. Loops that update an argument in place (a pool of
  // states) yield its buffer; the canonicalizer folds their results to the
  // argument itself, the form this pass and gdn-results-to-out-params
  // recognise.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  // On request, results become caller-allocated out-parameters: the C ABI then
  // has no ownership transfer, and the kernels write o and the final state
  // directly into the caller's buffers (no copy, also for dynamic shapes).
  if (options.resultsAsOutParams) {
    addResultsToOutParams(pm);
  }
  // Temporaries are freed again.
  bufferization::buildBufferDeallocationPipeline(pm);
  // Chunk scratch is allocated once per task, not once per chunk.
  pm.addNestedPass<func::FuncOp>(createGdnHoistLoopBuffersPass());

  // Register tiles and vectors for the ops whose shapes allow them; the
  // rest become scalar loops.
  pm.addNestedPass<func::FuncOp>(
      createGdnCPUVectorizePass(vectorizeOptionsOf(options)));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // Tasks over batch x heads run as OpenMP parallel loops.
  pm.addPass(createForallToParallelLoopPass());
  ConvertSCFToOpenMPPassOptions openMPOptions;
  openMPOptions.numThreads = options.numThreads;
  pm.addPass(createConvertSCFToOpenMPPass(openMPOptions));
  pm.addPass(createCanonicalizerPass());

  if (options.flushDenormals)
    pm.addNestedPass<func::FuncOp>(createGdnFlushDenormalsPass());
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
  pm.addPass(createConvertVectorToSCFPass(vectorToSCFOptions()));
  pm.addPass(createSCFToControlFlowPass());
  // Contractions were lowered to outer products by gdn-cpu-vectorize; any
  // left would otherwise get the slow "dot" strategy.
  ConvertVectorToLLVMPassOptions vectorOptions;
  vectorOptions.vectorContractLowering =
      vector::VectorContractLowering::OuterProduct;
  // A vector's sum as a tree of adds: in order, each of a 256-lane dot
  // product's adds would wait for the one before. This holds for every
  // vector.reduction of the pipeline (the projections' row dots too), so
  // their float sums are associated differently from the loops'.
  vectorOptions.reassociateFPReductions = true;
  pm.addPass(createConvertVectorToLLVMPass(vectorOptions));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  // Vectorization leaves ub.poison as the padding of transfers.
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // Model runtimes call the step through one array of descriptors.
  if (options.cInterfaces)
    pm.addPass(createGdnPackedCInterfacePass());
}

void mlir::gdn::buildGdnToCPUPipeline(OpPassManager &pm,
                                      const CPUPipelineOptions &options) {
  buildGdnToLinalgPipeline(pm, options);
  buildGdnLinalgToLLVMCPUPipeline(pm, options);
}
