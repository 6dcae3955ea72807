//===- Pipelines.h - gdn named pass pipelines -------------------*- C++ -*-===//
//
// The pipelines shared by gdn-opt (by name) and gdn-compile (by builder).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_PIPELINES_PIPELINES_H
#define GDN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::gdn {

/// How gdn.delta_rule is computed.
enum class DeltaRuleForm {
  /// Token by token, literally as the op semantics state it.
  Recurrent,
  /// Chunkwise parallel (gdn-chunk-delta-rule).
  Chunked,
};

/// Options of the gdn-lower-to-cpu pipeline.
struct CPUPipelineOptions : public PassPipelineOptions<CPUPipelineOptions> {
  Option<DeltaRuleForm> deltaRuleForm{
      *this, "delta-rule-form",
      llvm::cl::desc("How gdn.delta_rule is computed"),
      llvm::cl::init(DeltaRuleForm::Recurrent),
      llvm::cl::values(
          clEnumValN(DeltaRuleForm::Recurrent, "recurrent",
                     "token-by-token recurrence (reference)"),
          clEnumValN(DeltaRuleForm::Chunked, "chunked",
                     "chunkwise-parallel form (gdn-chunk-delta-rule)"))};
  Option<int64_t> chunkSize{*this, "chunk-size",
                            llvm::cl::desc("Tokens per chunk of the chunked "
                                           "form"),
                            llvm::cl::init(64)};
};

/// Lowers a module of func.func ops containing gdn ops on tensors to the LLVM
/// dialect for the host CPU.
void buildGdnToCPUPipeline(OpPassManager &pm,
                           const CPUPipelineOptions &options);

/// Lowers bufferized code (memrefs, scf, arith, math, cf, func) to the LLVM
/// dialect. The last stage of every CPU pipeline.
void buildGdnBufferizedToLLVMPipeline(OpPassManager &pm);

/// Registers the named pipelines with the global pass-pipeline registry.
void registerGdnPipelines();

} // namespace mlir::gdn

#endif // GDN_PIPELINES_PIPELINES_H
