//===- ParallelizeDeltaRuleStep.cpp - decode step as per-head tasks -------===//

#include "HeadStep.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"
#include "gdn/Dialect/Gdn/Transforms/Transforms.h"
#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNPARALLELIZEDELTARULESTEPPASS
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
struct ParallelizeDeltaRuleStep : OpRewritePattern<DeltaRuleStepOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleStepOp op,
                                PatternRewriter &rewriter) const override {
    if (op.hasServingOperands())
      return rewriter.notifyMatchFailure(
          op, "a state pool: gdn-unpack-sequences first");
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    auto oType = op.getO().getType();
    auto stateType = op.getNewState().getType();
    int64_t valueHeads = oType.getDimSize(1);
    int64_t valueDim = oType.getDimSize(2);
    int64_t keyDim = stateType.getDimSize(2);
    Type outElementType = oType.getElementType();

    OpFoldResult batchSize = tensor::getMixedSize(rewriter, loc, op.getV(), 0);
    Value oInit = createEmptyLike(rewriter, loc, op.getV(), outElementType);
    // A state that only this step reads (the states gathered from a pool)
    // is updated in its own buffer: a fresh one would be one more state's
    // worth of memory written, and of pages faulted in, per step.
    Value stateOperand = op.getState();
    bool updateInPlace =
        stateOperand.getDefiningOp() && stateOperand.hasOneUse() &&
        cast<RankedTensorType>(stateOperand.getType()).getElementType() == f32;
    Value stateInit = updateInPlace
                          ? stateOperand
                          : createEmptyLike(rewriter, loc, stateOperand, f32);
    auto forall = scf::ForallOp::create(
        rewriter, loc,
        ArrayRef<OpFoldResult>{batchSize, rewriter.getIndexAttr(valueHeads)},
        ValueRange{oInit, stateInit}, std::nullopt);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(forall.getTerminator());
    OpBuilder &b = rewriter;
    Value batch = forall.getInductionVar(0);
    Value head = forall.getInductionVar(1);
    Value group = arith::ConstantIndexOp::create(b, loc, op.getGroupSize());
    Value keyHead = arith::DivUIOp::create(b, loc, head, group);
    OpFoldResult zero = b.getIndexAttr(0);
    OpFoldResult one = b.getIndexAttr(1);

    // One head's vector of a [B, heads, D] operand, in f32.
    auto headVector = [&](Value x, Value xHead) {
      auto type = cast<RankedTensorType>(x.getType());
      int64_t dim = type.getDimSize(2);
      Value slice = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({dim}, type.getElementType()), x,
          ArrayRef<OpFoldResult>{batch, xHead, zero},
          ArrayRef<OpFoldResult>{one, one, b.getIndexAttr(dim)},
          ArrayRef<OpFoldResult>{one, one, one});
      return convertTensor(b, loc, slice, f32);
    };
    auto headScalar = [&](Value x) {
      Value scalar =
          tensor::ExtractOp::create(b, loc, x, ValueRange{batch, head});
      return convertFloat(b, loc, scalar, f32);
    };
    Value q = headVector(op.getQ(), keyHead);
    Value k = headVector(op.getK(), keyHead);
    Value v = headVector(op.getV(), head);
    Value g = headScalar(op.getG());
    Value beta = headScalar(op.getBeta());

    SmallVector<OpFoldResult> stateOffsets = {batch, head, zero, zero};
    SmallVector<OpFoldResult> stateSizes = {one, one, b.getIndexAttr(keyDim),
                                            b.getIndexAttr(valueDim)};
    SmallVector<OpFoldResult> unit4(4, one);
    auto headStateType = RankedTensorType::get({keyDim, valueDim}, f32);
    Value stateOut = tensor::ExtractSliceOp::create(
        b, loc, headStateType, forall.getRegionIterArgs()[1], stateOffsets,
        stateSizes, unit4);
    Value state = updateInPlace
                      ? stateOut
                      : tensor::ExtractSliceOp::create(b, loc, headStateType,
                                                       stateOperand,
                                                       stateOffsets, stateSizes,
                                                       unit4)
                            .getResult();

    auto [read, newState] =
        buildHeadStep(b, loc, state, stateOut, HeadStepInputs{q, k, v, g, beta},
                      op.getScale().convertToFloat());
    SmallVector<OpFoldResult> oOffsets = {batch, head, zero};
    SmallVector<OpFoldResult> oSizes = {one, one, b.getIndexAttr(valueDim)};
    SmallVector<OpFoldResult> unit3(3, one);
    Value oSlice = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({valueDim}, outElementType),
        forall.getRegionIterArgs()[0], oOffsets, oSizes, unit3);
    Value out =
        buildElementwise(b, loc, read, oSlice, b.getMultiDimIdentityMap(1),
                         [&](OpBuilder &nb, Location nl, ValueRange args) {
                           return convertFloat(nb, nl, args[0], outElementType);
                         });

    rewriter.setInsertionPointToEnd(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(
        b, loc, out, forall.getRegionIterArgs()[0], oOffsets, oSizes, unit3);
    tensor::ParallelInsertSliceOp::create(b, loc, newState,
                                          forall.getRegionIterArgs()[1],
                                          stateOffsets, stateSizes, unit4);
    rewriter.setInsertionPointAfter(forall);
    rewriter.replaceOp(op, castToTypes(rewriter, loc, forall.getResults(),
                                       op->getResultTypes()));
    return success();
  }
};

struct GdnParallelizeDeltaRuleStepPass
    : gdn::impl::GdnParallelizeDeltaRuleStepPassBase<
          GdnParallelizeDeltaRuleStepPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGdnParallelizeDeltaRuleStepPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace

void mlir::gdn::populateGdnParallelizeDeltaRuleStepPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ParallelizeDeltaRuleStep>(patterns.getContext());
}
