//===- Pipelines.h - gdn named pass pipelines -------------------*- C++ -*-===//
//
// The pipelines shared by gdn-opt (by name) and gdn-compile (by builder).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_PIPELINES_PIPELINES_H
#define GDN_PIPELINES_PIPELINES_H

#include "gdn/Codegen/CPU/Passes.h"
#include "gdn/Codegen/GPU/Passes.h"
#include "gdn/Conversion/Passes.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"

#include "mlir/Pass/PassOptions.h"

#include "llvm/ADT/STLExtras.h"

#include "llvm/Support/Error.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::gdn {

/// Options that follow from what is emitted (a shared library's C ABI, an
/// executable's managed buffers): gdn-compile sets them itself.
inline constexpr const char *kResultsAsOutParamsOption =
    "results-as-out-params";
inline constexpr const char *kCInterfacesOption = "c-interfaces";
inline constexpr const char *kManagedHostBuffersOption = "managed-host-buffers";

/// How gdn.delta_rule is computed.
enum class DeltaRuleForm {
  /// Token by token, literally as the op semantics state it.
  Recurrent,
  /// Chunkwise parallel (gdn-chunk-delta-rule).
  Chunked,
};

/// Pipeline options that a tool can list, to offer each one as a flag of its
/// own (gdn-compile): the pipeline's struct stays the one declaration of an
/// option's name, type, default and help.
template <typename Derived>
class ListablePipelineOptions : public PassPipelineOptions<Derived> {
public:
  /// The options, in name order.
  std::vector<const llvm::cl::Option *> listOptions() const {
    std::vector<const llvm::cl::Option *> result;
    for (const auto &entry : this->OptionsMap)
      result.push_back(entry.second);
    llvm::sort(result,
               [](const llvm::cl::Option *a, const llvm::cl::Option *b) {
                 return a->ArgStr < b->ArgStr;
               });
    return result;
  }
};

/// Options of the gdn-lower-to-cpu pipeline. Defaults of options that a pass
/// also has are the pass's (Passes.td).
struct CPUPipelineOptions : public ListablePipelineOptions<CPUPipelineOptions> {
  Option<DeltaRuleForm> deltaRuleForm{
      *this, "delta-rule-form",
      llvm::cl::desc("How gdn.delta_rule is computed: chunked or recurrent"),
      llvm::cl::init(DeltaRuleForm::Chunked),
      llvm::cl::values(
          clEnumValN(DeltaRuleForm::Recurrent, "recurrent",
                     "token-by-token recurrence (reference)"),
          clEnumValN(DeltaRuleForm::Chunked, "chunked",
                     "chunkwise-parallel form (gdn-chunk-delta-rule)"))};
  Option<int64_t> chunkSize{
      *this, "chunk-size",
      llvm::cl::desc("Tokens per chunk of the chunked form"),
      llvm::cl::init(GdnChunkDeltaRulePassOptions().chunkSize)};
  Option<int64_t> recurrentBelow{
      *this, "recurrent-below",
      llvm::cl::desc("Prefills shorter than this many tokens run the "
                     "vectorized token recurrence instead of chunks (chosen "
                     "at run time; 0: always chunks). The default is the "
                     "measured crossover on 2-core AVX-512 machines "
                     "(docs/performance.md)"),
      llvm::cl::init(64)};
  Option<int64_t> projectionRowBlock{
      *this, "projection-row-block",
      llvm::cl::desc("Rows (tokens of all sequences) per parallel task of "
                     "the projections (gdn-cpu-tile-projections row-block)"),
      llvm::cl::init(GdnCPUTileProjectionsPassOptions().rowBlock)};
  Option<int64_t> projectionRowTile{
      *this, "projection-row-tile",
      llvm::cl::desc("Rows per static matmul tile of the projections "
                     "(gdn-cpu-tile-projections row-tile)"),
      llvm::cl::init(GdnCPUTileProjectionsPassOptions().rowTile)};
  Option<int64_t> projectionRowDotParallelMin{
      *this, "projection-row-dot-parallel-min",
      llvm::cl::desc("Weights of at least this many elements spread a "
                     "decode step's row dots over the threads; smaller ones "
                     "run them on one (gdn-cpu-tile-projections "
                     "row-dot-parallel-min)"),
      llvm::cl::init(GdnCPUTileProjectionsPassOptions().rowDotParallelMin)};
  Option<int64_t> matmulTileM{
      *this, "matmul-tile-m",
      llvm::cl::desc("Rows of the register tile of the chunk matmuls"),
      llvm::cl::init(GdnCPUVectorizePassOptions().matmulTileM)};
  Option<int64_t> matmulTileN{
      *this, "matmul-tile-n",
      llvm::cl::desc("Columns of the register tile of the chunk matmuls (a "
                     "multiple of 16)"),
      llvm::cl::init(GdnCPUVectorizePassOptions().matmulTileN)};
  Option<int64_t> numThreads{
      *this, "num-threads",
      llvm::cl::desc("Threads of the OpenMP parallel regions over batch x "
                     "heads (0: the OpenMP runtime's default, "
                     "OMP_NUM_THREADS)"),
      llvm::cl::init(0)};
  Option<bool> mlaAbsorbedDecode{
      *this, "mla-absorbed-decode",
      llvm::cl::desc("Attention of gdn.mla ops that continue a cache in the "
                     "absorbed form (gdn-absorb-mla-decode): scores against "
                     "the cached latents, not keys expanded from them"),
      llvm::cl::init(true)};
  Option<int64_t> mlaKeySplit{
      *this, "mla-key-split",
      llvm::cl::desc("Keys per partial sum of the absorbed MLA attention's "
                     "attended latents (gdn-absorb-mla-decode key-split); "
                     "0: one sum over all keys"),
      llvm::cl::init(0)};
  Option<int64_t> attentionBlock{
      *this, "attention-block",
      llvm::cl::desc("Causal attention of gdn.mla (expanded form) and "
                     "gdn.gated_attention in blocks of this many queries "
                     "and keys with an online softmax (gdn-block-attention), "
                     "1..1024; 0 materializes the whole score matrix"),
      llvm::cl::init(64)};
  Option<bool> flushDenormals{
      *this, "flush-denormals",
      llvm::cl::desc("Run public functions with x86 FTZ/DAZ set (subnormal "
                     "operands are otherwise several times slower)"),
      llvm::cl::init(true)};
  Option<bool> resultsAsOutParams{
      *this, kResultsAsOutParamsOption,
      llvm::cl::desc("Turn function results into caller-allocated trailing "
                     "memref arguments (the C ABI of gdn-compile's shared "
                     "libraries); dynamically shaped results then cannot be "
                     "returned to callers inside the module"),
      llvm::cl::init(false)};
  Option<bool> cInterfaces{
      *this, kCInterfacesOption,
      llvm::cl::desc("Export every public function through the C interface "
                     "(_mlir_ciface_<name>, docs/c-abi.md) and the packed "
                     "interface of model runtimes (_gdn_packed_<name>): "
                     "what gdn-compile's shared libraries export"),
      llvm::cl::init(false)};
};

/// Options of the gdn-lower-to-cuda pipeline.
struct CUDAPipelineOptions
    : public ListablePipelineOptions<CUDAPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("GPU architecture of the cubin"),
                           llvm::cl::init("sm_90a")};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features (sm_90a needs PTX 8.0 or newer)"),
      llvm::cl::init("+ptx80")};
  Option<std::string> binaryFormat{
      *this, "binary-format",
      llvm::cl::desc("fatbin (needs ptxas from CUDA_ROOT or PATH), bin, or "
                     "isa (PTX text, no ptxas: for inspection and tests)"),
      llvm::cl::init("fatbin")};
  Option<int64_t> blockColumns{
      *this, "block-columns",
      llvm::cl::desc("State columns (threads) per block of the recurrence "
                     "kernels"),
      llvm::cl::init(ConvertGdnToGPUPassOptions().blockColumns)};
  Option<int64_t> keySplits{
      *this, "key-splits",
      llvm::cl::desc("Threads sharing one state column's K rows"),
      llvm::cl::init(ConvertGdnToGPUPassOptions().keySplits)};
  Option<bool> chunkedPrefill{
      *this, "chunked-prefill",
      llvm::cl::desc("bf16/f16 prefill as the chunked scan on tensor cores "
                     "(false: the recurrence)"),
      llvm::cl::init(GdnChooseScanStrategyPassOptions().chunkedPrefill)};
  Option<bool> bf16ScanInputs{
      *this, "bf16-scan-inputs",
      llvm::cl::desc("Delta rules of f32 q, k, v take the chunked scan on "
                     "bf16 copies where a call has at least "
                     "bf16-scan-min-tokens tokens, the recurrence below "
                     "(gdn-choose-scan-strategy's f32-min-tokens): bf16's "
                     "rounding of the GDN cores, up to 6e-2 of the "
                     "logits measured (docs/Lowering.md)"),
      llvm::cl::init(false)};
  Option<int64_t> bf16ScanMinTokens{
      *this, "bf16-scan-min-tokens",
      llvm::cl::desc("The fewest tokens of a call that bf16-scan-inputs "
                     "moves to bf16"),
      llvm::cl::init(64)};
  Option<int64_t> valueTile{
      *this, "value-tile",
      llvm::cl::desc("State columns per block of the chunked scan"),
      llvm::cl::init(GdnChooseScanStrategyPassOptions().valueTile)};
  Option<int64_t> scanWarps{
      *this, "scan-warps",
      llvm::cl::desc("Warps per block of the chunked scan (4 or 8)"),
      llvm::cl::init(GdnChooseScanStrategyPassOptions().scanWarps)};
  Option<int64_t> multiprocessors{
      *this, "multiprocessors",
      llvm::cl::desc("Streaming multiprocessors of the target GPU (132: "
                     "H100/H200 SXM), for the chunked scan's tiling"),
      llvm::cl::init(GdnChooseScanStrategyPassOptions().multiprocessors)};
  Option<int64_t> contextSegments{
      *this, "context-segments",
      llvm::cl::desc("Segments of a sequence the chunked scan runs side by "
                     "side where a batch leaves multiprocessors idle (0, "
                     "the default: chosen from the shapes; 1: none)"),
      llvm::cl::init(GdnChooseScanStrategyPassOptions().contextSegments)};
  Option<int64_t> sharedMemoryPerMultiprocessor{
      *this, "shared-memory-per-multiprocessor",
      llvm::cl::desc("Workgroup memory of one multiprocessor in bytes, for "
                     "the occupancy hints given to ptxas"),
      llvm::cl::init(
          GdnSharedMemoryOccupancyPassOptions().sharedMemoryPerMultiprocessor)};
  Option<int64_t> reservedPerBlock{
      *this, "reserved-per-block",
      llvm::cl::desc("Workgroup memory the driver reserves per block in "
                     "bytes"),
      llvm::cl::init(GdnSharedMemoryOccupancyPassOptions().reservedPerBlock)};
  Option<int64_t> maxBlocks{
      *this, "max-blocks",
      llvm::cl::desc("Largest blocks-per-multiprocessor count the occupancy "
                     "hints ask for"),
      llvm::cl::init(GdnSharedMemoryOccupancyPassOptions().maxBlocks)};
  Option<bool> mlaAbsorbedDecode{
      *this, "mla-absorbed-decode",
      llvm::cl::desc("Attention of gdn.mla ops that continue a cache in the "
                     "absorbed form (gdn-absorb-mla-decode): scores against "
                     "the cached latents, not keys expanded from them"),
      llvm::cl::init(true)};
  Option<int64_t> mlaKeySplit{
      *this, "mla-key-split",
      llvm::cl::desc("Keys per partial sum of the absorbed MLA attention's "
                     "attended latents (gdn-absorb-mla-decode key-split), "
                     "so that threads read neighbouring latent channels; "
                     "0: one sum over all keys, a warp per output"),
      llvm::cl::init(32)};
  Option<int64_t> attentionBlock{
      *this, "attention-block",
      llvm::cl::desc("Prompts of at least this many tokens run gdn.mla's "
                     "attention in the expanded form as one tensor-core "
                     "kernel with an online softmax (gdn-block-attention "
                     "tensor-core-only); fewer, and decode, in the absorbed "
                     "form. 0 keeps the absorbed form for every call"),
      llvm::cl::init(64)};
  Option<bool> tensorCoreProjections{
      *this, "tensor-core-projections",
      llvm::cl::desc("Projections and MLA attention scores as mma.sync "
                     "kernels (gdn-gpu-tensor-core-projections) for the rows "
                     "that fill blocks of 128"),
      llvm::cl::init(true)};
  Option<bool> forwardCopies{
      *this, "forward-copies",
      llvm::cl::desc("Element-wise ops write into caches and read slices in "
                     "place instead of through a temporary and a copy "
                     "(gdn-gpu-forward-copies): fewer kernels per step"),
      llvm::cl::init(true)};
  Option<bool> mergeLaunches{
      *this, "merge-launches",
      llvm::cl::desc("Kernels that do not depend on each other run side by "
                     "side in one launch (gdn-gpu-merge-launches): fewer "
                     "launches per step"),
      llvm::cl::init(false)};
  Option<bool> tensorCoreF32Weights{
      *this, "tensor-core-f32-weights",
      llvm::cl::desc("Tensor-core projections for f32 weights too (their "
                     "bf16 split loses more than the activations' alone)"),
      llvm::cl::init(GdnGPUTensorCoreProjectionsPassOptions().f32Weights)};
  Option<bool> splitActivations{
      *this, "split-activations",
      llvm::cl::desc("Tensor-core kernels split each f32 operand into two "
                     "bf16 terms (about 1e-5 from f32) instead of rounding "
                     "it to bf16 (about 4e-3)"),
      llvm::cl::init(
          GdnGPUTensorCoreProjectionsPassOptions().splitActivations)};
  Option<int64_t> elementwiseThreads{
      *this, "elementwise-threads",
      llvm::cl::desc("Threads per block of the kernels made from linalg ops "
                     "(projections, norms, gates, attention, copies): one "
                     "thread per output element"),
      llvm::cl::init(GdnGPUMapParallelLoopsPassOptions().blockThreads)};
  Option<int64_t> projectionRowGroup{
      *this, "projection-row-group",
      llvm::cl::desc("Rows (decode sequences, prompt tokens past the "
                     "tensor-core blocks) that one warp of a projection sums, "
                     "reading each weight once for them (1..16; 1: a warp "
                     "per output, the default)"),
      llvm::cl::init(GdnGPUMapParallelLoopsPassOptions().rowGroup)};
  Option<int64_t> projectionSmallRowBlocks{
      *this, "projection-small-row-blocks",
      llvm::cl::desc("From this many rows past the 128-row tensor-core "
                     "blocks on (a decode batch), projections run those rows "
                     "on tensor cores too, in blocks of 64 "
                     "(gdn-gpu-tensor-core-projections small-row-blocks); 0: "
                     "a warp per output for them"),
      llvm::cl::init(
          GdnGPUTensorCoreProjectionsPassOptions().smallRowBlocks)};
  Option<int64_t> projectionSmallRowMinOutputs{
      *this, "projection-small-row-min-outputs",
      llvm::cl::desc("Projections of fewer outputs keep a warp per output "
                     "where projection-small-row-blocks applies (an LM head "
                     "over a vocabulary takes the tensor cores, a 768-wide "
                     "projection does not)"),
      llvm::cl::init(
          GdnGPUTensorCoreProjectionsPassOptions().smallRowMinOutputs)};
  Option<bool> attentionVectorRows{
      *this, "attention-vector-rows",
      llvm::cl::desc("Prompts' fused attention stages its q, k and v rows "
                     "by 16-byte loads where the head dimension is a "
                     "multiple of 8 (convert-gdn-to-gpu "
                     "attention-vector-rows)"),
      llvm::cl::init(ConvertGdnToGPUPassOptions().attentionVectorRows)};
  Option<int64_t> projectionTileStages{
      *this, "projection-tile-stages",
      llvm::cl::desc("Tiles in flight in workgroup memory for the "
                     "projections' whole tensor-core blocks (2 to 4, copied "
                     "by cp.async; gdn-gpu-tensor-core-projections "
                     "tile-stages); 0: fragments loaded from global memory"),
      llvm::cl::init(GdnGPUTensorCoreProjectionsPassOptions().tileStages)};
  Option<bool> projectionSplitOnce{
      *this, "projection-split-once",
      llvm::cl::desc("Staged projection tiles turn x into bf16 terms once "
                     "per block in workgroup memory "
                     "(gdn-gpu-tensor-core-projections split-once)"),
      llvm::cl::init(GdnGPUTensorCoreProjectionsPassOptions().splitOnce)};
  Option<bool> managedHostBuffers{
      *this, kManagedHostBuffersOption,
      llvm::cl::desc("Host buffers in managed memory, reachable by kernels "
                     "(for executables whose @main makes and prints "
                     "tensors)"),
      llvm::cl::init(false)};
  Option<bool> cInterfaces{
      *this, kCInterfacesOption,
      llvm::cl::desc("Export every public function through the C interface "
                     "(_mlir_ciface_<name>, docs/c-abi.md), as gdn-compile's "
                     "shared libraries do"),
      llvm::cl::init(false)};
};

/// Checks the CPU pipeline's options against the bounds of the passes they
/// configure, so that a bad value is refused before any work; the message
/// starts with the option's name.
llvm::Error verifyCPUPipelineOptions(const CPUPipelineOptions &options);

/// Checks what the CUDA pipeline's passes would otherwise reject late or not
/// at all (the chip, PTX features and binary format) and the bounds of the
/// passes the options configure: the message starts with the option's name
/// and gives the accepted values.
llvm::Error verifyCUDAPipelineOptions(const CUDAPipelineOptions &options);

/// Lowers a module of func.func ops containing gdn ops on tensors to GPU
/// kernels embedded as gpu.binary and host code in the LLVM dialect, whose
/// results are caller-allocated device buffers (docs/c-abi.md):
/// buildGdnToGPUPipeline, then buildGdnGPUToLLVMPipeline.
void buildGdnToCUDAPipeline(OpPassManager &pm,
                            const CUDAPipelineOptions &options);

/// First stage: gdn ops to gpu.launch kernels on buffers.
void buildGdnToGPUPipeline(OpPassManager &pm,
                           const CUDAPipelineOptions &options);

/// Second stage: bufferization with results as out-parameters, kernel
/// outlining, NVVM, the GPU binary, and LLVM host code.
void buildGdnGPUToLLVMPipeline(OpPassManager &pm,
                               const CUDAPipelineOptions &options);

/// Lowers a module of func.func ops containing gdn ops on tensors to the LLVM
/// dialect for the host CPU: buildGdnToLinalgPipeline, then
/// buildGdnLinalgToLLVMCPUPipeline.
void buildGdnToCPUPipeline(OpPassManager &pm,
                           const CPUPipelineOptions &options);

/// First stage: gdn ops to linalg/scf/tensor on tensors (the chunked or the
/// recurrent form of gdn.delta_rule, the recurrence step for decode).
void buildGdnToLinalgPipeline(OpPassManager &pm,
                              const CPUPipelineOptions &options);

/// Second stage: linalg on tensors to the LLVM dialect for the CPU
/// (bufferization with results as out-parameters, loops, OpenMP, LLVM).
void buildGdnLinalgToLLVMCPUPipeline(OpPassManager &pm,
                                     const CPUPipelineOptions &options);

/// Registers the named pipelines with the global pass-pipeline registry.
void registerGdnPipelines();

} // namespace mlir::gdn

#endif // GDN_PIPELINES_PIPELINES_H
