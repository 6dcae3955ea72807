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

} // namespace mlir::gdn

#endif // GDN_CONVERSION_GDNTOGPU_GDNTOGPU_H
