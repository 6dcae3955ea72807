//===- VerifyTokens.cpp - draft tokens as decode steps --------------------===//
//
// gdn.delta_rule_verify: T draft tokens as T gdn.delta_rule_step ops, the
// output and the state of each inserted at its token.
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
/// gdn.delta_rule_verify as T decode steps: the state (gathered from the
/// pool, widened from bf16) goes through the draft tokens one step at a
/// time, and every step's output and state are inserted at its token.
struct UnrollVerify : OpRewritePattern<DeltaRuleVerifyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleVerifyOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Type f32 = b.getF32Type();
    Value state = op.getState();
    if (Value indices = op.getStateIndices())
      state = gatherStates(b, loc, state, indices);
    state = convertTensor(b, loc, state, f32);
    Value g = op.getG(), beta = op.getBeta();
    if (op.getALog())
      std::tie(g, beta) =
          computeGates(b, loc, g, beta, op.getALog(), op.getDtBias());
    auto statesType = op.getStates().getType();
    Value out = createEmptyLike(b, loc, op.getV(),
                                op.getO().getType().getElementType());
    SmallVector<OpFoldResult> statesSizes =
        tensor::getMixedSizes(b, loc, op.getV());
    statesSizes.pop_back();
    statesSizes.pop_back();
    for (int64_t d = 2; d < 5; ++d)
      statesSizes.push_back(b.getIndexAttr(statesType.getDimSize(d)));
    Value states = createEmpty(b, loc, statesSizes, f32);
    Value tokens = tensor::DimOp::create(b, loc, op.getV(), 1);
    auto loop = scf::ForOp::create(
        b, loc, indexConstant(b, loc, 0), tokens, indexConstant(b, loc, 1),
        ValueRange{state, out, states},
        [&](OpBuilder &lb, Location ll, Value t, ValueRange carried) {
          auto step = DeltaRuleStepOp::create(
              lb, ll,
              TypeRange{tokenOf(lb, ll, out, t).getType(),
                        carried[0].getType()},
              tokenOf(lb, ll, op.getQ(), t), tokenOf(lb, ll, op.getK(), t),
              tokenOf(lb, ll, op.getV(), t), tokenOf(lb, ll, g, t),
              tokenOf(lb, ll, beta, t), carried[0],
              /*state_indices=*/Value(), /*write_indices=*/Value(),
              /*a_log=*/Value(), /*dt_bias=*/Value(), op.getScaleAttr());
          Value outAll = insertToken(lb, ll, step.getO(), carried[1], t);
          Value statesAll =
              insertToken(lb, ll, step.getNewState(), carried[2], t);
          // The next token's state goes back into the carried buffer, so
          // that the loop bufferizes in place.
          Value next = linalg::CopyOp::create(lb, ll, step.getNewState(),
                                              carried[0])
                           .getResult(0);
          scf::YieldOp::create(lb, ll, ValueRange{next, outAll, statesAll});
        });
    Value result = convertTensor(b, loc, loop.getResult(2),
                                 statesType.getElementType());
    rewriter.replaceOp(op, castToTypes(rewriter, loc,
                                       {loop.getResult(1), result},
                                       op->getResultTypes()));
    return success();
  }
};
} // namespace

void serving::populateVerifyPatterns(RewritePatternSet &patterns) {
  patterns.add<UnrollVerify>(patterns.getContext());
}
