//===- HeadStep.h - one token of one head on a static state -----*- C++ -*-===//
//
// The per-head body shared by the decode-step tasks and the recurrent form
// of the prefill tasks.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_DIALECT_GDN_TRANSFORMS_HEADSTEP_H
#define GDN_LIB_DIALECT_GDN_TRANSFORMS_HEADSTEP_H

#include "mlir/IR/Builders.h"

namespace mlir::gdn {

/// Inputs of one token of one head, all f32: q and k [K], v [V], the log
/// gate g and beta as scalars.
struct HeadStepInputs {
  Value q, k, v, g, beta;
};

/// Emits S' = exp(g) S + k (beta (v - exp(g) S^T k))^T into `destination`
/// ([K, V] f32; it may be `state` itself, for an in-place update) and
/// returns {scale * S'^T q as an f32 [V] tensor, S'}.
std::pair<Value, Value> buildHeadStep(OpBuilder &b, Location loc, Value state,
                                      Value destination,
                                      const HeadStepInputs &in, float scale);

} // namespace mlir::gdn

#endif // GDN_LIB_DIALECT_GDN_TRANSFORMS_HEADSTEP_H
