//===- PoolStates.cpp - pools of states, gathered and scattered -----------===//
//
// gdn.delta_rule and gdn.delta_rule_step with state_indices: the
// sequences' states gathered from their slots, the op on them, and the
// final states scattered into their write slots of the pool itself.
//
//===----------------------------------------------------------------------===//

#include "ServingForms.h"
#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::serving;

namespace {
/// gdn.delta_rule with a pool: gather, the op on per-sequence states (still
/// packed, if it was), scatter.
struct UnpackPrefillPool : OpRewritePattern<DeltaRuleOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleOp op,
                                PatternRewriter &rewriter) const override {
    Value readIndices = op.getStateIndices();
    if (!readIndices)
      return rewriter.notifyMatchFailure(op, "no state pool");
    Location loc = op.getLoc();
    Value pool = op.getInitialState();
    Value writeIndices =
        op.getWriteIndices() ? op.getWriteIndices() : readIndices;
    PrefillParts parts = PrefillParts::of(op);
    parts.initial = gatherStates(rewriter, loc, pool, readIndices);
    parts.readIndices = parts.writeIndices = Value();
    parts.stateType = perSequenceStates(pool, readIndices);
    DeltaRuleOp core = parts.build(rewriter, loc);
    SmallVector<Value> results = resultsOf(core);
    results[1] = scatterStates(rewriter, loc, core.getFinalState(), pool,
                               writeIndices);
    rewriter.replaceOp(
        op, castToTypes(rewriter, loc, results, op->getResultTypes()));
    return success();
  }
};

/// gdn.delta_rule_step with a pool: gather, the dense step, scatter.
struct UnpackStepPool : OpRewritePattern<DeltaRuleStepOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleStepOp op,
                                PatternRewriter &rewriter) const override {
    Value readIndices = op.getStateIndices();
    if (!readIndices)
      return rewriter.notifyMatchFailure(op, "no state pool");
    Location loc = op.getLoc();
    Value pool = op.getState();
    Value writeIndices =
        op.getWriteIndices() ? op.getWriteIndices() : readIndices;
    Value initial = gatherStates(rewriter, loc, pool, readIndices);
    auto core = DeltaRuleStepOp::create(
        rewriter, loc, TypeRange{op.getO().getType(), initial.getType()},
        op.getQ(), op.getK(), op.getV(), op.getG(), op.getBeta(), initial,
        /*state_indices=*/Value(), /*write_indices=*/Value(), op.getALog(),
        op.getDtBias(), op.getScaleAttr());
    Value updated =
        scatterStates(rewriter, loc, core.getNewState(), pool, writeIndices);
    rewriter.replaceOp(op, castToTypes(rewriter, loc, {core.getO(), updated},
                                       op->getResultTypes()));
    return success();
  }
};
} // namespace

void serving::populatePoolPatterns(RewritePatternSet &patterns) {
  patterns.add<UnpackPrefillPool, UnpackStepPool>(patterns.getContext());
}
