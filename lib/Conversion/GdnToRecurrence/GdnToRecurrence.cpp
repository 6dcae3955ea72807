//===- GdnToRecurrence.cpp - gdn to the token-by-token recurrence ---------===//
//
// The reference lowering: every token applies decay, read, write and output
// to the f32 state exactly as the op semantics state them.
//
//===----------------------------------------------------------------------===//

#include "gdn/Conversion/GdnToRecurrence/GdnToRecurrence.h"
#include "gdn/Conversion/Passes.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_CONVERTGDNTORECURRENCEPASS
#include "gdn/Conversion/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
using utils::IteratorType;

/// Converts `x` to f32 and, when `group` > 1, repeats each entry of the head
/// dimension `headDim` `group` times (value head j reads head j / group).
Value toF32ValueHeads(OpBuilder &b, Location loc, Value x, int64_t headDim,
                      int64_t group) {
  auto type = cast<RankedTensorType>(x.getType());
  Type f32 = b.getF32Type();
  if (type.getElementType() == f32 && group == 1)
    return x;
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
  sizes[headDim] = b.getIndexAttr(type.getDimSize(headDim) * group);
  Value out = createEmpty(b, loc, sizes, f32);
  SmallVector<AffineExpr> inputExprs;
  for (int64_t d = 0; d < rank; ++d) {
    AffineExpr e = b.getAffineDimExpr(d);
    inputExprs.push_back(d == headDim && group > 1 ? e.floorDiv(group) : e);
  }
  AffineMap inputMap = AffineMap::get(rank, 0, inputExprs, b.getContext());
  return buildElementwise(b, loc, x, out, inputMap,
                          [&](OpBuilder &nb, Location nl, ValueRange args) {
                            return convertFloat(nb, nl, args[0], f32);
                          });
}

/// Operands of one recurrence step, all f32, with value heads expanded:
/// state [B, Hv, K, V], q and k [B, Hv, K], v [B, Hv, V], g and beta [B, Hv].
struct StepInputs {
  Value state, q, k, v, g, beta;
};

/// Builds one token of the gated delta rule on f32 tensors and returns the
/// f32 output [B, Hv, V] and the new state.
std::pair<Value, Value> buildRecurrenceStep(OpBuilder &b, Location loc,
                                            const StepInputs &in,
                                            float scale) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  // Dimensions: (b, h, v, k) for the two reads, (b, h, k, v) for the write.
  AffineExpr d0, d1, d2, d3;
  bindDims(ctx, d0, d1, d2, d3);
  auto map = [&](ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(4, 0, exprs, ctx);
  };
  SmallVector<IteratorType> readIterators = {
      IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
      IteratorType::reduction};
  SmallVector<IteratorType> writeIterators(4, IteratorType::parallel);

  // v_hat[b, h, v] = sum_k exp(g[b, h]) * S[b, h, k, v] * k[b, h, k].
  Value vHatInit = createZeros(b, loc, tensor::getMixedSizes(b, loc, in.v), f32);
  Value vHat =
      linalg::GenericOp::create(
          b, loc, vHatInit.getType(), ValueRange{in.state, in.k, in.g},
          ValueRange{vHatInit},
          ArrayRef<AffineMap>{map({d0, d1, d3, d2}), map({d0, d1, d3}),
                              map({d0, d1}), map({d0, d1, d2})},
          readIterators,
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value decay = math::ExpOp::create(nb, nl, args[2]);
            Value decayed = arith::MulFOp::create(nb, nl, decay, args[0]);
            Value term = arith::MulFOp::create(nb, nl, decayed, args[1]);
            Value sum = arith::AddFOp::create(nb, nl, args[3], term);
            linalg::YieldOp::create(nb, nl, sum);
          })
          .getResult(0);

  // S[b, h, k, v] = exp(g) * S + beta * k[k] * (v[v] - v_hat[v]), in place.
  Value newState =
      linalg::GenericOp::create(
          b, loc, in.state.getType(),
          ValueRange{in.k, in.v, vHat, in.g, in.beta}, ValueRange{in.state},
          ArrayRef<AffineMap>{map({d0, d1, d2}), map({d0, d1, d3}),
                              map({d0, d1, d3}), map({d0, d1}), map({d0, d1}),
                              map({d0, d1, d2, d3})},
          writeIterators,
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value decay = math::ExpOp::create(nb, nl, args[3]);
            Value decayed = arith::MulFOp::create(nb, nl, decay, args[5]);
            Value error = arith::SubFOp::create(nb, nl, args[1], args[2]);
            Value scaledKey = arith::MulFOp::create(nb, nl, args[4], args[0]);
            Value update = arith::MulFOp::create(nb, nl, scaledKey, error);
            Value next = arith::AddFOp::create(nb, nl, decayed, update);
            linalg::YieldOp::create(nb, nl, next);
          })
          .getResult(0);

  // o[b, h, v] = scale * sum_k S[b, h, k, v] * q[b, h, k].
  Value scaleValue =
      arith::ConstantOp::create(b, loc, b.getF32FloatAttr(scale));
  Value outInit = createZeros(b, loc, tensor::getMixedSizes(b, loc, in.v), f32);
  Value out =
      linalg::GenericOp::create(
          b, loc, outInit.getType(), ValueRange{newState, in.q},
          ValueRange{outInit},
          ArrayRef<AffineMap>{map({d0, d1, d3, d2}), map({d0, d1, d3}),
                              map({d0, d1, d2})},
          readIterators,
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value scaledQuery =
                arith::MulFOp::create(nb, nl, args[1], scaleValue);
            Value term = arith::MulFOp::create(nb, nl, args[0], scaledQuery);
            Value sum = arith::AddFOp::create(nb, nl, args[2], term);
            linalg::YieldOp::create(nb, nl, sum);
          })
          .getResult(0);
  return {out, newState};
}

/// Extracts token `t` of a [B, T, ...] tensor as a [B, ...] tensor.
Value extractToken(OpBuilder &b, Location loc, Value x, Value t) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  offsets[1] = t;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
  sizes[1] = b.getIndexAttr(1);
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  SmallVector<int64_t> shape(type.getShape());
  shape.erase(shape.begin() + 1);
  auto sliceType = RankedTensorType::get(shape, type.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, sliceType, x, offsets, sizes,
                                        strides);
}

/// Inserts a [B, ...] tensor as token `t` of the [B, T, ...] tensor `dest`.
Value insertToken(OpBuilder &b, Location loc, Value slice, Value dest,
                  Value t) {
  int64_t rank = cast<RankedTensorType>(dest.getType()).getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  offsets[1] = t;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, dest);
  sizes[1] = b.getIndexAttr(1);
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, slice, dest, offsets, sizes,
                                       strides);
}

struct DeltaRuleToRecurrence : OpConversionPattern<DeltaRuleOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(DeltaRuleOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    int64_t group = op.getGroupSize();
    Value q = toF32ValueHeads(rewriter, loc, adaptor.getQ(), 2, group);
    Value k = toF32ValueHeads(rewriter, loc, adaptor.getK(), 2, group);
    Value v = toF32ValueHeads(rewriter, loc, adaptor.getV(), 2, 1);
    Value beta = toF32ValueHeads(rewriter, loc, adaptor.getBeta(), 2, 1);
    Value g = adaptor.getG();

    Value state = adaptor.getInitialState();
    if (!state) {
      // [B, Hv, K, V]: B from v, the static sizes from the result type.
      auto stateType = op.getFinalState().getType();
      SmallVector<OpFoldResult> sizes = {
          tensor::getMixedSize(rewriter, loc, adaptor.getV(), 0)};
      for (int64_t d = 1; d < 4; ++d)
        sizes.push_back(rewriter.getIndexAttr(stateType.getDimSize(d)));
      state = createZeros(rewriter, loc, sizes, f32);
    }
    Type outElementType = op.getO().getType().getElementType();
    Value outInit =
        createEmptyLike(rewriter, loc, adaptor.getV(), outElementType);

    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value tokens = tensor::DimOp::create(rewriter, loc, adaptor.getV(), 1);
    float scale = op.getScale().convertToFloat();
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, tokens, one, ValueRange{state, outInit},
        [&](OpBuilder &b, Location l, Value t, ValueRange iterArgs) {
          StepInputs in{iterArgs[0],
                        extractToken(b, l, q, t),
                        extractToken(b, l, k, t),
                        extractToken(b, l, v, t),
                        extractToken(b, l, g, t),
                        extractToken(b, l, beta, t)};
          auto [out, newState] = buildRecurrenceStep(b, l, in, scale);
          Value outToken = convertTensor(b, l, out, outElementType);
          Value outAll = insertToken(b, l, outToken, iterArgs[1], t);
          scf::YieldOp::create(b, l, ValueRange{newState, outAll});
        });
    rewriter.replaceOp(op, castToTypes(rewriter, loc,
                                       {loop.getResult(1), loop.getResult(0)},
                                       op->getResultTypes()));
    return success();
  }
};

struct DeltaRuleStepToRecurrence : OpConversionPattern<DeltaRuleStepOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(DeltaRuleStepOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t group = op.getGroupSize();
    StepInputs in{adaptor.getState(),
                  toF32ValueHeads(rewriter, loc, adaptor.getQ(), 1, group),
                  toF32ValueHeads(rewriter, loc, adaptor.getK(), 1, group),
                  toF32ValueHeads(rewriter, loc, adaptor.getV(), 1, 1),
                  adaptor.getG(),
                  toF32ValueHeads(rewriter, loc, adaptor.getBeta(), 1, 1)};
    auto [out, newState] =
        buildRecurrenceStep(rewriter, loc, in, op.getScale().convertToFloat());
    Value outCast =
        convertTensor(rewriter, loc, out, op.getO().getType().getElementType());
    rewriter.replaceOp(op, castToTypes(rewriter, loc, {outCast, newState},
                                       op->getResultTypes()));
    return success();
  }
};

struct ConvertGdnToRecurrencePass
    : gdn::impl::ConvertGdnToRecurrencePassBase<ConvertGdnToRecurrencePass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // The recurrence is the dense ops' reference; the serving forms reach it
    // through gdn-unpack-sequences.
    WalkResult serving = getOperation()->walk([](Operation *op) {
      auto prefill = dyn_cast<DeltaRuleOp>(op);
      auto step = dyn_cast<DeltaRuleStepOp>(op);
      if ((prefill && prefill.hasServingOperands()) ||
          (step && step.hasServingOperands()) || isa<DeltaRuleVerifyOp>(op)) {
        op->emitOpError() << "with cu_seqlens, state_indices, raw gates, bf16 "
                             "states or draft tokens: run "
                             "gdn-unpack-sequences before the recurrence";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (serving.wasInterrupted())
      return signalPassFailure();
    ConversionTarget target(*ctx);
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, scf::SCFDialect,
                           tensor::TensorDialect>();
    target.addIllegalOp<DeltaRuleOp, DeltaRuleStepOp>();
    RewritePatternSet patterns(ctx);
    populateGdnToRecurrencePatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mlir::gdn::populateGdnToRecurrencePatterns(RewritePatternSet &patterns) {
  patterns.add<DeltaRuleToRecurrence, DeltaRuleStepToRecurrence>(
      patterns.getContext());
}
