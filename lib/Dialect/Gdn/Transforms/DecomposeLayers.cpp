//===- DecomposeLayers.cpp - layer ops to core ops and linalg -------------===//
//
// Replaces every op that implements linalg::AggregatedOpInterface (gdn's
// layer ops, LayerDecompositions.cpp; linalg.softmax, which the attention
// of gdn.mla produces) by its decomposition, until none is left.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"
#include "gdn/Dialect/Gdn/Transforms/Transforms.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNDECOMPOSELAYERSPASS
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// A gdn.causal_attention that the GPU's fused kernel takes.
bool keepsForTensorCores(Operation *op) {
  auto attention = dyn_cast<CausalAttentionOp>(op);
  if (!attention)
    return false;
  auto q = cast<RankedTensorType>(attention.getQ().getType());
  auto v = cast<RankedTensorType>(attention.getV().getType());
  return CausalAttentionOp::fitsTensorCoreKernel(q.getDimSize(3),
                                                 v.getDimSize(3));
}

struct GdnDecomposeLayersPass
    : gdn::impl::GdnDecomposeLayersPassBase<GdnDecomposeLayersPass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // Decompositions may produce ops that decompose further (gdn.mla's
    // linalg.softmax): rounds until a walk finds nothing.
    while (true) {
      SmallVector<linalg::AggregatedOpInterface> pending;
      getOperation().walk([&](linalg::AggregatedOpInterface op) {
        if (keepTensorCoreAttention && keepsForTensorCores(op))
          return;
        pending.push_back(op);
      });
      if (pending.empty())
        return;
      for (linalg::AggregatedOpInterface op : pending) {
        rewriter.setInsertionPoint(op);
        FailureOr<SmallVector<Value>> replacements =
            op.decomposeOperation(rewriter);
        if (failed(replacements)) {
          op->emitError("gdn-decompose-layers: the op did not decompose");
          return signalPassFailure();
        }
        rewriter.replaceOp(op, *replacements);
      }
    }
  }
};
} // namespace
