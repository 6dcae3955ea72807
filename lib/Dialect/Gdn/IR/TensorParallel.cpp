//===- TensorParallel.cpp - #gdn.tensor_parallel --------------------------===//
//
// The verifier of a layer op's tensor-parallel plan (GdnAttrs.td).
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnOps.h"

using namespace mlir;
using namespace mlir::gdn;

LogicalResult
TensorParallelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           int64_t ranks, TensorSplit split, int64_t local,
                           int64_t localKeyHeads, Collective collective) {
  if (ranks < 1)
    return emitError() << "ranks must be >= 1, got " << ranks;
  if (localKeyHeads < 0)
    return emitError() << "local_key_heads must be >= 0, got "
                       << localKeyHeads;
  if (split == TensorSplit::replicated) {
    if (collective != Collective::none)
      return emitError() << "a replicated op exchanges nothing, but "
                            "collective = "
                         << stringifyCollective(collective);
    return success();
  }
  if (local < 1)
    return emitError() << "local must be >= 1 for split = "
                       << stringifyTensorSplit(split) << ", got " << local;
  Collective expected = split == TensorSplit::vocabulary
                            ? Collective::all_gather
                            : Collective::all_reduce;
  if (collective != expected)
    return emitError() << "split = " << stringifyTensorSplit(split)
                       << " is followed by collective = "
                       << stringifyCollective(expected) << ", got "
                       << stringifyCollective(collective);
  return success();
}
