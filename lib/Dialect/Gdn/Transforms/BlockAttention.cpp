//===- BlockAttention.cpp - blocked causal attention for layer ops --------===//
//
// Marks the attention of gdn.mla and gdn.gated_attention for the blocked
// decomposition (BlockedAttention.cpp).
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNBLOCKATTENTIONPASS
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
struct GdnBlockAttentionPass
    : gdn::impl::GdnBlockAttentionPassBase<GdnBlockAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    if (blockSize < 0 || blockSize > 1024) {
      getOperation().emitError()
          << "gdn-block-attention: block-size must be 0 (off) or 1..1024, "
             "but got "
          << static_cast<int64_t>(blockSize);
      return signalPassFailure();
    }
    if (blockSize == 0)
      return;
    Builder builder(&getContext());
    IntegerAttr block = builder.getI64IntegerAttr(blockSize);
    getOperation().walk([&](Operation *op) {
      if (auto mla = dyn_cast<MlaOp>(op)) {
        int64_t qkDim = static_cast<int64_t>(mla.getQkNopeHeadDim() +
                                             mla.getQkRopeHeadDim());
        if (!tensorCoreOnly ||
            CausalAttentionOp::fitsTensorCoreKernel(
                qkDim, static_cast<int64_t>(mla.getVHeadDim())))
          mla.setAttentionBlockAttr(block);
      } else if (auto attention = dyn_cast<GatedAttentionOp>(op)) {
        if (!tensorCoreOnly)
          attention.setAttentionBlockAttr(block);
      }
    });
  }
};
} // namespace
