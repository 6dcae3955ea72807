//===- UnpackSequences.cpp - the serving forms as dense delta-rule ops ----===//
//
// The pass and its pattern set: the serving forms of the delta-rule ops
// (packed sequences, pools of states, raw gates, bf16 states, checkpoints,
// draft tokens to verify) become the dense ops the chunked and per-head
// lowerings take, with loops around them (one file per form).
//
//===----------------------------------------------------------------------===//

#include "ServingForms.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"
#include "gdn/Dialect/Gdn/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNUNPACKSEQUENCESPASS
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
struct GdnUnpackSequencesPass
    : gdn::impl::GdnUnpackSequencesPassBase<GdnUnpackSequencesPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGdnUnpackSequencesPatterns(patterns);
    // A packed op with a pool takes two rewrites: the gather and scatter
    // leave a packed op with per-sequence states for the sequence loop.
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mlir::gdn::populateGdnUnpackSequencesPatterns(
    RewritePatternSet &patterns) {
  serving::populatePoolPatterns(patterns);
  serving::populatePackedPatterns(patterns);
  serving::populateElementwisePatterns(patterns);
  serving::populateVerifyPatterns(patterns);
}
