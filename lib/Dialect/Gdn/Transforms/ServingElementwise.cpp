//===- ServingElementwise.cpp - raw gates and bf16 states -----------------===//
//
// Forms that change operands element-wise around the dense op: raw gates
// (g and beta computed from a, b, A_log and dt_bias) and bf16 states
// (widened before the op, rounded after it).
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
/// Raw gates: g and beta computed element-wise, then the op without them.
struct ComputePrefillGates : OpRewritePattern<DeltaRuleOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getALog())
      return rewriter.notifyMatchFailure(op, "no raw gates");
    PrefillParts parts = PrefillParts::of(op);
    std::tie(parts.g, parts.beta) =
        computeGates(rewriter, op.getLoc(), op.getG(), op.getBeta(),
                     op.getALog(), op.getDtBias());
    parts.aLog = parts.dtBias = Value();
    DeltaRuleOp core = parts.build(rewriter, op.getLoc());
    rewriter.replaceOp(op, resultsOf(core));
    return success();
  }
};

struct ComputeStepGates : OpRewritePattern<DeltaRuleStepOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleStepOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getALog())
      return rewriter.notifyMatchFailure(op, "no raw gates");
    auto [g, beta] = computeGates(rewriter, op.getLoc(), op.getG(),
                                  op.getBeta(), op.getALog(), op.getDtBias());
    rewriter.replaceOpWithNewOp<DeltaRuleStepOp>(
        op, op->getResultTypes(), op.getQ(), op.getK(), op.getV(), g, beta,
        op.getState(), op.getStateIndices(), op.getWriteIndices(),
        /*a_log=*/Value(), /*dt_bias=*/Value(), op.getScaleAttr());
    return success();
  }
};

/// A bf16 state is storage: the prefill runs on f32 states widened from it
/// and its final states are rounded back (a pool is gathered first).
struct WidenPrefillState : OpRewritePattern<DeltaRuleOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleOp op,
                                PatternRewriter &rewriter) const override {
    Type stateType = op.getFinalState().getType();
    if (!storedInBF16(stateType) || op.getStateIndices())
      return rewriter.notifyMatchFailure(op, "f32 states, or a pool first");
    Location loc = op.getLoc();
    PrefillParts parts = PrefillParts::of(op);
    if (parts.initial)
      parts.initial =
          convertTensor(rewriter, loc, parts.initial, rewriter.getF32Type());
    parts.stateType = inF32(stateType);
    if (parts.checkpointsType)
      parts.checkpointsType = inF32(parts.checkpointsType);
    DeltaRuleOp core = parts.build(rewriter, loc);
    SmallVector<Value> results = resultsOf(core);
    for (Value &result : llvm::drop_begin(results))
      result = convertTensor(rewriter, loc, result, rewriter.getBF16Type());
    rewriter.replaceOp(
        op, castToTypes(rewriter, loc, results, op->getResultTypes()));
    return success();
  }
};

struct WidenStepState : OpRewritePattern<DeltaRuleStepOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleStepOp op,
                                PatternRewriter &rewriter) const override {
    Type stateType = op.getNewState().getType();
    if (!storedInBF16(stateType) || op.getStateIndices())
      return rewriter.notifyMatchFailure(op, "f32 states, or a pool first");
    Location loc = op.getLoc();
    Value state =
        convertTensor(rewriter, loc, op.getState(), rewriter.getF32Type());
    auto core = DeltaRuleStepOp::create(
        rewriter, loc, TypeRange{op.getO().getType(), inF32(stateType)},
        op.getQ(), op.getK(), op.getV(), op.getG(), op.getBeta(), state,
        /*state_indices=*/Value(), /*write_indices=*/Value(), op.getALog(),
        op.getDtBias(), op.getScaleAttr());
    Value rounded = convertTensor(rewriter, loc, core.getNewState(),
                                  rewriter.getBF16Type());
    rewriter.replaceOp(op, castToTypes(rewriter, loc, {core.getO(), rounded},
                                       op->getResultTypes()));
    return success();
  }
};
} // namespace

void serving::populateElementwisePatterns(RewritePatternSet &patterns) {
  patterns.add<ComputePrefillGates, ComputeStepGates, WidenPrefillState,
               WidenStepState>(patterns.getContext());
}
