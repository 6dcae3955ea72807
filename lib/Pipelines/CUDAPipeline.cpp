//===- CUDAPipeline.cpp - gdn-lower-to-cuda -------------------------------===//

#include "gdn/ABI/Passes.h"
#include "gdn/Codegen/GPU/Passes.h"
#include "gdn/Conversion/Passes.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"
#include "gdn/Pipelines/Pipelines.h"

#include "ResultsToOutParams.h"

#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;
using namespace mlir::gdn;

static ConvertGdnToGPUPassOptions
gpuOptionsOf(const CUDAPipelineOptions &options) {
  ConvertGdnToGPUPassOptions gpuOptions;
  gpuOptions.blockColumns = options.blockColumns;
  gpuOptions.keySplits = options.keySplits;
  gpuOptions.splitAttentionOperands = options.splitActivations;
  gpuOptions.attentionVectorRows = options.attentionVectorRows;
  return gpuOptions;
}

static GdnChooseScanStrategyPassOptions
strategyOptionsOf(const CUDAPipelineOptions &options) {
  GdnChooseScanStrategyPassOptions strategy;
  strategy.chunkedPrefill = options.chunkedPrefill;
  strategy.f32MinTokens =
      options.bf16ScanInputs ? options.bf16ScanMinTokens : 0;
  strategy.valueTile = options.valueTile;
  strategy.scanWarps = options.scanWarps;
  strategy.multiprocessors = options.multiprocessors;
  strategy.contextSegments = options.contextSegments;
  return strategy;
}

static GdnSharedMemoryOccupancyPassOptions
occupancyOptionsOf(const CUDAPipelineOptions &options) {
  GdnSharedMemoryOccupancyPassOptions occupancyOptions;
  occupancyOptions.sharedMemoryPerMultiprocessor =
      options.sharedMemoryPerMultiprocessor;
  occupancyOptions.reservedPerBlock = options.reservedPerBlock;
  occupancyOptions.maxBlocks = options.maxBlocks;
  return occupancyOptions;
}

/// The architecture number of `chip` if it is one CUDA 13's ptxas compiles
/// for: sm_75 and newer, 'a' and 'f' naming the architecture- and
/// family-specific variants (sm_90a for wgmma).
static std::optional<unsigned> chipVersion(StringRef chip) {
  static const llvm::Regex chipPattern("^sm_([0-9]+)[af]?$");
  SmallVector<StringRef> parts;
  unsigned version = 0;
  if (!chipPattern.match(chip, &parts) || parts[1].getAsInteger(10, version) ||
      version < 75)
    return std::nullopt;
  return version;
}

/// Those of the chips LLVM's NVPTX backend knows (it writes the PTX), in
/// architecture order (sm_75 ... sm_90, sm_90a, ... sm_100, sm_100a); empty
/// where the backend is not linked in.
static const SmallVector<std::string> &nvptxChips() {
  static const SmallVector<std::string> chips = [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTargetMC();
    llvm::Triple triple("nvptx64-nvidia-cuda");
    std::string lookupError;
    SmallVector<std::string> names;
    std::unique_ptr<llvm::MCSubtargetInfo> info;
    if (const llvm::Target *target =
            llvm::TargetRegistry::lookupTarget(triple, lookupError))
      info.reset(target->createMCSubtargetInfo(triple, "", ""));
    if (info)
      for (const llvm::SubtargetSubTypeKV &kv :
           info->getAllProcessorDescriptions())
        if (chipVersion(kv.Key))
          names.push_back(kv.Key);
    llvm::sort(names, [](const std::string &a, const std::string &b) {
      return std::make_pair(*chipVersion(a), a) <
             std::make_pair(*chipVersion(b), b);
    });
    return names;
  }();
  return chips;
}

llvm::Error
mlir::gdn::verifyCUDAPipelineOptions(const CUDAPipelineOptions &options) {
  const SmallVector<std::string> &known = nvptxChips();
  bool valid = chipVersion(options.chip).has_value() &&
               (known.empty() || llvm::is_contained(known, options.chip));
  if (!valid)
    return llvm::createStringError(
        "chip: '" + options.chip +
        "' is not a GPU architecture CUDA 13 compiles for; " +
        (known.empty() ? std::string("expected sm_<NN> with NN >= 75, "
                                     "optionally with an 'a' or 'f' suffix "
                                     "(for example sm_90a, sm_100a)")
                       : "valid names: " + llvm::join(known, ", ")));
  static const llvm::Regex featuresPattern("^(\\+ptx[0-9]+)?$");
  if (!featuresPattern.match(options.features))
    return llvm::createStringError("features: '" + options.features +
                                   "' is not a PTX version such as +ptx80");
  if (!llvm::is_contained({"fatbin", "bin", "isa"},
                          StringRef(options.binaryFormat)))
    return llvm::createStringError("binary-format: '" + options.binaryFormat +
                                   "' is not one of fatbin, bin, isa");
  if (options.mlaKeySplit < 0 || options.mlaKeySplit > 1024)
    return llvm::createStringError(
        "mla-key-split: expected 0 (off) or 1..1024 keys, got " +
        llvm::Twine(options.mlaKeySplit));
  if (options.attentionBlock < 0 || options.attentionBlock > 1024)
    return llvm::createStringError(
        "attention-block: expected 0 (off) or 1..1024 tokens, got " +
        llvm::Twine(options.attentionBlock));
  if (options.projectionSmallRowBlocks < 0)
    return llvm::createStringError(
        "projection-small-row-blocks: expected 0 (off) or a row count, got " +
        llvm::Twine(options.projectionSmallRowBlocks));
  if (options.projectionSmallRowMinOutputs < 0)
    return llvm::createStringError(
        "projection-small-row-min-outputs: expected 0 or more outputs, got " +
        llvm::Twine(options.projectionSmallRowMinOutputs));
  if (options.projectionTileStages != 0 &&
      (options.projectionTileStages < 2 || options.projectionTileStages > 4))
    return llvm::createStringError(
        "projection-tile-stages: expected 0 (off) or 2..4 tiles, got " +
        llvm::Twine(options.projectionTileStages));
  if (options.bf16ScanMinTokens < 1)
    return llvm::createStringError(
        "bf16-scan-min-tokens: expected at least 1 token, got " +
        llvm::Twine(options.bf16ScanMinTokens));
  if (llvm::Error error = checkGdnToGPUOptions(gpuOptionsOf(options)))
    return error;
  if (llvm::Error error = checkScanStrategyOptions(strategyOptionsOf(options)))
    return error;
  GdnGPUMapParallelLoopsPassOptions threads, rows;
  threads.blockThreads = options.elementwiseThreads;
  rows.rowGroup = options.projectionRowGroup;
  if (llvm::Error error = checkMapParallelLoopsOptions(threads))
    return llvm::createStringError("elementwise-threads: " +
                                   llvm::toString(std::move(error)));
  if (llvm::Error error = checkMapParallelLoopsOptions(rows))
    return llvm::createStringError("projection-row-group: " +
                                   llvm::toString(std::move(error)));
  return checkSharedMemoryOccupancyOptions(occupancyOptionsOf(options));
}

void mlir::gdn::buildGdnToGPUPipeline(OpPassManager &pm,
                                      const CUDAPipelineOptions &options) {
  // Layer ops become the delta rule and linalg, as for the CPU; attention
  // that continues a cache in the absorbed form.
  if (options.mlaAbsorbedDecode) {
    GdnAbsorbMlaDecodePassOptions absorbOptions;
    absorbOptions.keySplit = options.mlaKeySplit;
    pm.addNestedPass<func::FuncOp>(createGdnAbsorbMlaDecodePass(absorbOptions));
  }
  // Prompts' MLA attention as one fused kernel (gdn.causal_attention, kept
  // for convert-gdn-to-gpu) where its heads fit it.
  GdnBlockAttentionPassOptions blockOptions;
  blockOptions.blockSize = options.attentionBlock;
  blockOptions.tensorCoreOnly = true;
  pm.addNestedPass<func::FuncOp>(createGdnBlockAttentionPass(blockOptions));
  GdnDecomposeLayersPassOptions decomposeOptions;
  decomposeOptions.keepTensorCoreAttention = true;
  pm.addNestedPass<func::FuncOp>(
      createGdnDecomposeLayersPass(decomposeOptions));
  // Every decision of the chunked scan, as an attribute the lowering reads.
  pm.addNestedPass<func::FuncOp>(
      createGdnChooseScanStrategyPass(strategyOptionsOf(options)));
  pm.addNestedPass<func::FuncOp>(
      createConvertGdnToGPUPass(gpuOptionsOf(options)));
  // Outline the kernels before canonicalization: inside the isolated
  // gpu.func, constants (the unrolled state indices) stay in the kernel
  // instead of being hoisted into the host function and passed as 100+
  // kernel parameters, which ptxas must keep in registers (and spills).
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // With the workgroup memory sizes now constant: registers must not cost
  // the chunked scan the second block per multiprocessor.
  pm.addPass(createGdnSharedMemoryOccupancyPass(occupancyOptionsOf(options)));
}

void mlir::gdn::buildGdnGPUToLLVMPipeline(OpPassManager &pm,
                                          const CUDAPipelineOptions &options) {
  if (options.cInterfaces)
    pm.addPass(createGdnExportCInterfacesPass());
  // The host function's arguments are device buffers that stay unmodified,
  // and its results become caller-allocated device buffers: an allocation
  // left in host code would be host memory, which kernels cannot use.
  pm.addNestedPass<func::FuncOp>(createGdnReadOnlyArgumentsPass());
  // Independent kernels need buffers of their own to run side by side.
  if (options.mergeLaunches)
    pm.addNestedPass<func::FuncOp>(createGdnGPUSeparateTemporariesPass());
  bufferization::OneShotBufferizePassOptions bufferizeOptions;
  bufferizeOptions.bufferizeFunctionBoundaries = true;
  bufferizeOptions.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferizeOptions));
  // A model step's growing caches are written in place: the results that
  // are those arguments go (as on the CPU).
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  if (!options.managedHostBuffers)
    addResultsToOutParams(pm);
  // The accumulators' fills and the copies of filled buffers go into the
  // reductions that overwrite them.
  pm.addNestedPass<func::FuncOp>(createGdnGPUFoldFillsPass());
  // Element-wise ops write into caches and read slices where they are,
  // instead of through temporaries and copies.
  if (options.forwardCopies)
    pm.addNestedPass<func::FuncOp>(createGdnGPUForwardCopiesPass());
  // Prefill's projections on tensor cores; what they leave over, and
  // decode's, stays linalg for the next pass.
  if (options.tensorCoreProjections) {
    GdnGPUTensorCoreProjectionsPassOptions projectionOptions;
    projectionOptions.splitActivations = options.splitActivations;
    projectionOptions.f32Weights = options.tensorCoreF32Weights;
    projectionOptions.smallRowBlocks = options.projectionSmallRowBlocks;
    projectionOptions.smallRowMinOutputs =
        options.projectionSmallRowMinOutputs;
    projectionOptions.tileStages = options.projectionTileStages;
    projectionOptions.splitOnce = options.projectionSplitOnce;
    pm.addNestedPass<func::FuncOp>(
        createGdnGPUTensorCoreProjectionsPass(projectionOptions));
  }
  // What host code computes besides the delta-rule kernels (linalg ops,
  // copies) becomes kernels too.
  GdnGPUMapParallelLoopsPassOptions loopOptions;
  loopOptions.blockThreads = options.elementwiseThreads;
  loopOptions.rowGroup = options.projectionRowGroup;
  pm.addNestedPass<func::FuncOp>(createGdnGPUMapParallelLoopsPass(loopOptions));
  pm.addPass(createConvertParallelLoopToGpuPass());
  // Kernels that do not depend on each other share a launch; their grid
  // and block sizes folded to constants first, to compare.
  if (options.mergeLaunches) {
    pm.addPass(createCanonicalizerPass());
    pm.addNestedPass<func::FuncOp>(createGdnGPUMergeLaunchesPass());
  }
  if (options.managedHostBuffers) {
    // An executable's buffers, results included, are managed memory that
    // both sides reach; results stay results, so @main can call functions
    // whose result shapes are dynamic.
    pm.addNestedPass<func::FuncOp>(createGdnManagedHostBuffersPass());
  } else {
    // Everything is on the device; host code only launches kernels, and
    // frees each temporary after its last launch. Launches, allocations
    // and frees then run in the order of one stream, with one wait at the
    // end instead of one per launch.
    pm.addNestedPass<func::FuncOp>(createGdnGPUDeviceBuffersPass());
    pm.addPass(createGpuKernelOutliningPass());
    pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  }
  pm.addPass(createCanonicalizerPass());

  // Kernel outlining, NVVM, the cubin by ptxas, and host code calling the
  // mgpu* runtime (runtime/CUDA).
  gpu::GPUToNVVMPipelineOptions nvvmOptions;
  nvvmOptions.cubinChip = options.chip;
  nvvmOptions.cubinFeatures = options.features;
  nvvmOptions.cubinFormat = options.binaryFormat;
  nvvmOptions.optLevel = 3;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvmOptions);
  // Model runtimes call the step through one array of descriptors.
  if (options.cInterfaces)
    pm.addPass(createGdnPackedCInterfacePass());
}

void mlir::gdn::buildGdnToCUDAPipeline(OpPassManager &pm,
                                       const CUDAPipelineOptions &options) {
  buildGdnToGPUPipeline(pm, options);
  buildGdnGPUToLLVMPipeline(pm, options);
}
