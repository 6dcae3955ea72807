//===- GdnToGPU.h - gdn delta-rule ops to GPU kernels -----------*- C++ -*-===//

#ifndef GDN_CONVERSION_GDNTOGPU_GDNTOGPU_H
#define GDN_CONVERSION_GDNTOGPU_GDNTOGPU_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::gdn {

/// Adds patterns that rewrite gdn.delta_rule and gdn.delta_rule_step into
/// gpu.launch kernels of the column recurrence: one thread per state column
/// (value channel) of a head, holding that column in registers across all
/// tokens. `blockColumns` columns share a block (and one head); each column's
/// K rows are split over `keySplits` threads.
void populateGdnToGPURecurrencePatterns(RewritePatternSet &patterns,
                                        int64_t blockColumns,
                                        int64_t keySplits);

/// Adds the pattern that rewrites gdn.delta_rule with bf16 or f16 q, k, v
/// into the chunked scan on tensor cores (mma.sync): one block per batch x
/// value head x `valueTile` state columns (`warps` warps, 4 or 8), chunks of
/// 64 tokens in order; when the batch leaves some of the `multiprocessors`
/// without a block, a launch with narrower tiles is chosen at run time. Its
/// benefit is higher than the recurrence's, which keeps f32 prefill and the
/// decode step.
void populateGdnToGPUChunkedScanPatterns(RewritePatternSet &patterns,
                                         int64_t valueTile, int64_t warps,
                                         int64_t multiprocessors);

} // namespace mlir::gdn

#endif // GDN_CONVERSION_GDNTOGPU_GDNTOGPU_H
