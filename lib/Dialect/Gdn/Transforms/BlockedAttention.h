//===- BlockedAttention.h - causal attention in blocks ----------*- C++ -*-===//
//
// Causal softmax attention computed block by block with an online softmax
// (running maximum and sum per query, the output rescaled as they grow), so
// that no T x S score matrix is ever materialized and key blocks past a
// query block's last position are never visited.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_DIALECT_GDN_TRANSFORMS_BLOCKEDATTENTION_H
#define GDN_LIB_DIALECT_GDN_TRANSFORMS_BLOCKEDATTENTION_H

#include "mlir/IR/Builders.h"

namespace mlir::gdn {

/// softmax_causal(scale q k^T) v for queries q [B, T, n, d] at positions
/// offset .. offset + T - 1 against keys k [B, S, nk, d] and values v [B, S,
/// nk, e] at positions 0 .. S - 1 (query head h reads key/value head
/// h / (n / nk); query t sees keys s <= t + offset). One scf.forall task per
/// (sequence, head, block of `block` queries), each a loop over the key
/// blocks it can see. Returns [B, T, n, e] (f32).
Value buildBlockedCausalAttention(OpBuilder &b, Location loc, Value q, Value k,
                                  Value v, float scale, Value offset,
                                  int64_t block);

} // namespace mlir::gdn

#endif // GDN_LIB_DIALECT_GDN_TRANSFORMS_BLOCKEDATTENTION_H
