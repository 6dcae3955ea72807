//===- KeyPartSums.h - attended latents in parts of the keys -*- C++ -*-===//
//
// The absorbed attention's attended latents are sums over the cached keys
// of each key's latent row weighted by every head's probability. With the
// heads' sums in registers, one pass over the cache reads each row once,
// but on one thread, which is bound by what one core reads from memory.
// Split into a few parts of the keys, each a task with its own sums, the
// parts read the cache side by side; their sums are added at the end.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_CODEGEN_CPU_KEYPARTSUMS_H
#define GDN_LIB_CODEGEN_CPU_KEYPARTSUMS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gdn {

/// Whether `op` is a bufferized attended-latents generic that the key-part
/// form takes: loops (b, t, n, s, r), out[b, t, n, r] += p[b, n, t, s] *
/// rows[b, s, r], with static heads n and channels r whose sums fit in
/// `maxLanes` f32 lanes, r a multiple of 16, dynamic keys s, unit-stride
/// rows in every operand.
bool isKeyPartSums(linalg::GenericOp op, int64_t maxLanes);

/// Replaces `op` (isKeyPartSums) by an scf.forall over (parts of the keys,
/// b, t), each part's sums in registers written to a scratch buffer, and
/// loops that add the parts into the output.
LogicalResult lowerSumsInKeyParts(RewriterBase &rewriter,
                                  linalg::GenericOp op);

} // namespace mlir::gdn

#endif // GDN_LIB_CODEGEN_CPU_KEYPARTSUMS_H
