//===- KeyBlockScores.h - attention scores, 16 keys at a time -*- C++ -*-===//
//
// The absorbed attention's scores are dot products of each head's query
// latent with each cached latent. Taken one key and head at a time, every
// dot ends in a horizontal sum of its lanes, which costs more than its
// multiply-adds when the latent is short (64 channels, or the 16 of a
// RoPE key). In blocks of 16 keys the sums need no horizontal step: each
// 16 x 16 tile of cached latents is transposed in registers, and every
// head's scores for the 16 keys are one vector of FMAs, a channel at a
// time, with the query channel broadcast.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_CODEGEN_CPU_KEYBLOCKSCORES_H
#define GDN_LIB_CODEGEN_CPU_KEYBLOCKSCORES_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gdn {

/// Whether `op` is a bufferized scores generic that the key-block form
/// takes: loops (b, n, t, s, r), out[b, n, t, s] += q[b, t, n, r] *
/// keys[b, s, r], with a static number of heads n of at most 16 (their
/// scores stay in registers), a static latent r that is a multiple of 16,
/// dynamic keys s, and unit-stride rows in every operand.
bool isKeyBlockScores(linalg::GenericOp op);

/// Replaces `op` (isKeyBlockScores) by an scf.forall over (b, t, blocks of
/// 16 keys) of vector code, and a generic for the keys past the last whole
/// block, which it returns.
FailureOr<linalg::GenericOp> lowerScoresInKeyBlocks(RewriterBase &rewriter,
                                                    linalg::GenericOp op);

} // namespace mlir::gdn

#endif // GDN_LIB_CODEGEN_CPU_KEYBLOCKSCORES_H
