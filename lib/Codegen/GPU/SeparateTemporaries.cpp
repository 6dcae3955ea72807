//===- SeparateTemporaries.cpp - one tensor.empty per writer --------------===//
//
// CSE leaves one `tensor.empty` for every temporary of a shape, and
// bufferization then writes all of them into one allocation where their
// lives do not overlap. On the CPU that saves memory; on the GPU it ties
// kernels that are otherwise independent (the q, k and v branches of a
// layer) into one order, and gdn-gpu-merge-launches cannot run them side
// by side. Each use gets its own `tensor.empty` here, so each writer its
// own buffer; device buffers are freed after their last kernel, so the
// peak memory is that of the temporaries live at once.
//
//===----------------------------------------------------------------------===//

#include "gdn/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNGPUSEPARATETEMPORARIESPASS
#include "gdn/Codegen/GPU/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
struct GdnGPUSeparateTemporariesPass
    : gdn::impl::GdnGPUSeparateTemporariesPassBase<
          GdnGPUSeparateTemporariesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<tensor::EmptyOp> shared;
    getOperation().walk([&](tensor::EmptyOp empty) {
      if (!empty->hasOneUse() && !empty->use_empty())
        shared.push_back(empty);
    });
    OpBuilder builder(&getContext());
    for (tensor::EmptyOp empty : shared) {
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : empty->getUses())
        uses.push_back(&use);
      // A copy goes before its user where that is in the same block, not
      // into a loop, where it would be a new buffer each iteration.
      for (OpOperand *use : uses) {
        Operation *user =
            empty->getBlock()->findAncestorOpInBlock(*use->getOwner());
        builder.setInsertionPoint(
            user == use->getOwner() ? user : empty.getOperation());
        use->set(builder.clone(*empty)->getResult(0));
      }
      empty->erase();
    }
  }
};
} // namespace
