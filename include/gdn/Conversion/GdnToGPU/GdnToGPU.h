//===- GdnToGPU.h - gdn delta-rule ops to GPU kernels -----------*- C++ -*-===//

#ifndef GDN_CONVERSION_GDNTOGPU_GDNTOGPU_H
#define GDN_CONVERSION_GDNTOGPU_GDNTOGPU_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gdn {

class DeltaRuleOp;
class ScanStrategyAttr;

/// Adds patterns that rewrite gdn.delta_rule and gdn.delta_rule_step into
/// gpu.launch kernels of the column recurrence: one thread per state column
/// (value channel) of a head, holding that column in registers across all
/// tokens. `blockColumns` columns share a block (and one head); each column's
/// K rows are split over `keySplits` threads.
void populateGdnToGPURecurrencePatterns(RewritePatternSet &patterns,
                                        int64_t blockColumns,
                                        int64_t keySplits);

/// Adds the pattern that rewrites gdn.delta_rule with a `strategy` into the
/// chunked scan on tensor cores (mma.sync), laid out as the strategy says:
/// one block per batch x value head x value tile, chunks of 64 tokens in
/// order, the narrow tile's launch chosen at run time where the strategy
/// has one. Its benefit is higher than the recurrence's, which keeps the
/// ops without a strategy (f32 prefill, the decode step). A strategy with
/// `recurrence_below` also builds the recurrence (of `blockColumns` and
/// `keySplits`) for the calls of fewer tokens.
void populateGdnToGPUChunkedScanPatterns(RewritePatternSet &patterns,
                                         int64_t blockColumns,
                                         int64_t keySplits);

/// Adds the pattern that rewrites gdn.causal_attention whose heads fit
/// (CausalAttentionOp::fitsTensorCoreKernel) into one tensor-core kernel
/// with an online softmax (AttentionToGPU.cpp); with `splitOperands`, each
/// f32 operand is two bf16 terms; with `vectorRows`, rows whose head
/// dimension is a multiple of 8 are staged by 16-byte loads.
void populateGdnToGPUAttentionPatterns(RewritePatternSet &patterns,
                                       bool splitOperands,
                                       bool vectorRows = false);

/// The column recurrence of `op` as one launch that writes o into `om` and
/// the final state into `sm`.
gpu::LaunchOp buildDeltaRuleRecurrence(OpBuilder &b, DeltaRuleOp op, Value om,
                                       Value sm, int64_t blockColumns,
                                       int64_t keySplits);

/// The strategy gdn-choose-scan-strategy gives `op` (its docs say how), or
/// null where the chunked scan cannot take it; f32 q, k and v only with
/// `f32MinTokens` > 0 (the strategy's recurrence_below), and not with
/// packed sequences or a pool (which the recurrence kernel does not take).
/// `contextSegments`: 0 (the default) chooses them from the shapes, N >= 1
/// asks for N where the op allows segments (1: none).
ScanStrategyAttr chooseScanStrategy(DeltaRuleOp op, int64_t valueTile,
                                    int64_t warps, int64_t multiprocessors,
                                    int64_t f32MinTokens = 0,
                                    int64_t contextSegments = 0);

/// Whether the scan's kernels can be built for `op` as its strategy says
/// (workgroup memory, where the state lives); emits the error at `op`.
LogicalResult checkScanStrategyBuildable(DeltaRuleOp op);

} // namespace mlir::gdn

#endif // GDN_CONVERSION_GDNTOGPU_GDNTOGPU_H
