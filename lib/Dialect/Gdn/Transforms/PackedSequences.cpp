//===- PackedSequences.cpp - packed sequences and checkpoints -------------===//
//
// gdn.delta_rule with cu_seqlens: a loop over the sequences, each a dense
// op on its slice of the tokens; with checkpoint_every, segments of N
// tokens whose final states are the checkpoints.
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
/// gdn.delta_rule with cu_seqlens and per-sequence f32 states: a loop over
/// the sequences, each a dense op on its slice of the tokens (with its own
/// checkpoints, inserted after the earlier sequences').
struct UnpackPackedSequences : OpRewritePattern<DeltaRuleOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleOp op,
                                PatternRewriter &rewriter) const override {
    Value offsets = op.getCuSeqlens();
    if (!offsets || op.getStateIndices() ||
        storedInBF16(op.getFinalState().getType()))
      return rewriter.notifyMatchFailure(
          op, "not packed, or a pool to gather or bf16 states to widen first");
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Type f32 = b.getF32Type();
    auto stateType = op.getFinalState().getType();
    Type oElement = op.getO().getType().getElementType();
    Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);

    // N = max(entries - 1, 0): an empty offsets tensor has no sequence.
    Value entries = tensor::DimOp::create(b, loc, offsets, 0);
    Value count = arith::MaxSIOp::create(
        b, loc, arith::SubIOp::create(b, loc, entries, one), zero);
    Value total = tensor::DimOp::create(b, loc, op.getV(), 1);
    // The final states start as the initial ones (zeros without them), so
    // that a sequence the loop does not reach keeps its state.
    Value finals = op.getInitialState();
    if (finals) {
      Value rows = tensor::DimOp::create(b, loc, finals, 0);
      count = arith::MinSIOp::create(b, loc, count, rows);
    } else {
      SmallVector<OpFoldResult> stateSizes = {count};
      for (int64_t d = 1; d < 4; ++d)
        stateSizes.push_back(b.getIndexAttr(stateType.getDimSize(d)));
      finals = createZeros(b, loc, stateSizes, f32);
    }
    Value out = createZeros(b, loc, tensor::getMixedSizes(b, loc, op.getV()),
                            oElement);
    SmallVector<Value> carriedInit = {out, finals};
    Value checkpoints = op.getCheckpoints();
    if (checkpoints) {
      // [R, Hv, K, V]: R = floor(total / N) rows suffice for any lengths.
      auto type = cast<RankedTensorType>(checkpoints.getType());
      SmallVector<OpFoldResult> sizes = {
          ShapedType::isDynamic(type.getDimSize(0))
              ? OpFoldResult(arith::DivUIOp::create(
                    b, loc, total,
                    indexConstant(b, loc, *op.getCheckpointEvery())))
              : OpFoldResult(b.getIndexAttr(type.getDimSize(0)))};
      for (int64_t d = 1; d < 4; ++d)
        sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
      carriedInit.push_back(createZeros(b, loc, sizes, f32));
      carriedInit.push_back(zero);
    }

    auto loop = scf::ForOp::create(
        b, loc, zero, count, one, carriedInit,
        [&](OpBuilder &lb, Location ll, Value n, ValueRange carried) {
          // [start, end) within [0, total], end >= start.
          Value next = arith::AddIOp::create(lb, ll, n, one);
          Value start = arith::MinSIOp::create(
              lb, ll,
              arith::MaxSIOp::create(lb, ll, readIndex(lb, ll, offsets, n),
                                     zero),
              total);
          Value end = arith::MinSIOp::create(
              lb, ll,
              arith::MaxSIOp::create(lb, ll, readIndex(lb, ll, offsets, next),
                                     start),
              total);
          Value length = arith::SubIOp::create(lb, ll, end, start);
          auto slice = [&](Value packed) -> Value {
            auto type = cast<RankedTensorType>(packed.getType());
            TokenRange r = tokenRange(lb, type, start, length);
            return tensor::ExtractSliceOp::create(lb, ll, sequenceType(packed),
                                                  packed, r.offsets, r.sizes,
                                                  r.strides);
          };
          auto rowType = RankedTensorType::get(
              {1, stateType.getDimSize(1), stateType.getDimSize(2),
               stateType.getDimSize(3)},
              f32);
          PrefillParts parts = PrefillParts::of(op);
          parts.q = slice(op.getQ());
          parts.k = slice(op.getK());
          parts.v = slice(op.getV());
          parts.g = slice(op.getG());
          parts.beta = slice(op.getBeta());
          parts.cuSeqlens = Value();
          parts.oType = sequenceType(op.getV(), oElement);
          parts.stateType = rowType;
          parts.initial = Value();
          if (Value states = op.getInitialState()) {
            StateRow r = stateRow(lb, rowType, n);
            parts.initial = tensor::ExtractSliceOp::create(
                lb, ll, rowType, states, r.offsets, r.sizes, r.strides);
          }
          if (checkpoints)
            parts.checkpointsType = RankedTensorType::get(
                {1, ShapedType::kDynamic, stateType.getDimSize(1),
                 stateType.getDimSize(2), stateType.getDimSize(3)},
                f32);
          DeltaRuleOp core = parts.build(lb, ll);
          TokenRange o = tokenRange(
              lb, cast<RankedTensorType>(carried[0].getType()), start, length);
          SmallVector<Value> yielded = {tensor::InsertSliceOp::create(
              lb, ll, core.getO(), carried[0], o.offsets, o.sizes,
              o.strides)};
          StateRow s = stateRow(lb, rowType, n);
          yielded.push_back(tensor::InsertSliceOp::create(
              lb, ll, core.getFinalState(), carried[1], s.offsets, s.sizes,
              s.strides));
          if (checkpoints) {
            yielded.push_back(insertRows(lb, ll, core.getCheckpoints(),
                                         carried[2], carried[3]));
            yielded.push_back(arith::AddIOp::create(
                lb, ll, carried[3],
                tensor::DimOp::create(lb, ll, core.getCheckpoints(), 1)));
          }
          scf::YieldOp::create(lb, ll, yielded);
        });
    SmallVector<Value> results(loop.getResults().take_front(
        checkpoints ? 3 : 2));
    rewriter.replaceOp(
        op, castToTypes(rewriter, loc, results, op->getResultTypes()));
    return success();
  }
};

/// gdn.delta_rule with checkpoints on dense [B, T] tokens: the tokens in
/// segments of N, each a dense op from the state the last one left, whose
/// final state is the segment's checkpoint; then the tokens after the last
/// whole segment.
struct SegmentCheckpoints : OpRewritePattern<DeltaRuleOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getCheckpoints() || op.getCuSeqlens() || op.getStateIndices() ||
        storedInBF16(op.getFinalState().getType()))
      return rewriter.notifyMatchFailure(
          op, "no checkpoints, or other forms to unpack first");
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Type f32 = b.getF32Type();
    int64_t every = *op.getCheckpointEvery();
    auto stateType = op.getFinalState().getType();
    Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
    Value step = indexConstant(b, loc, every);
    Value v = op.getV();
    Value tokens = tensor::DimOp::create(b, loc, v, 1);
    Value segments = arith::DivUIOp::create(b, loc, tokens, step);
    Value whole = arith::MulIOp::create(b, loc, segments, step);

    Value state = op.getInitialState();
    if (!state) {
      SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, v, 0)};
      for (int64_t d = 1; d < 4; ++d)
        sizes.push_back(b.getIndexAttr(stateType.getDimSize(d)));
      state = createZeros(b, loc, sizes, f32);
    } else {
      // A copy to carry: the segments update it in place.
      state = linalg::CopyOp::create(
                  b, loc, state,
                  createEmptyLike(b, loc, state, f32))
                  .getResult(0);
    }
    Value out =
        createEmptyLike(b, loc, v, op.getO().getType().getElementType());
    SmallVector<OpFoldResult> checkpointSizes = {
        tensor::getMixedSize(b, loc, v, 0), segments};
    for (int64_t d = 1; d < 4; ++d)
      checkpointSizes.push_back(b.getIndexAttr(stateType.getDimSize(d)));
    Value checkpoints = createEmpty(b, loc, checkpointSizes, f32);

    // One dense op on tokens [start, start + length) from `from`.
    auto segment = [&](OpBuilder &sb, Location sl, Value start,
                       OpFoldResult length, Value from) {
      PrefillParts parts = PrefillParts::of(op);
      auto slice = [&](Value x) -> Value {
        TokenRange r = batchTokenRange(sb, sl, x, start, length);
        auto type = cast<RankedTensorType>(x.getType());
        SmallVector<int64_t> shape(type.getShape());
        shape[1] = ShapedType::kDynamic;
        if (auto size = getConstantIntValue(length))
          shape[1] = *size;
        return tensor::ExtractSliceOp::create(
            sb, sl, RankedTensorType::get(shape, type.getElementType()), x,
            r.offsets, r.sizes, r.strides);
      };
      parts.q = slice(op.getQ());
      parts.k = slice(op.getK());
      parts.v = slice(v);
      parts.g = slice(op.getG());
      parts.beta = slice(op.getBeta());
      parts.initial = from;
      auto vType = cast<RankedTensorType>(parts.v.getType());
      parts.oType = RankedTensorType::get(
          vType.getShape(), op.getO().getType().getElementType());
      parts.stateType = from.getType();
      parts.checkpointsType = Type();
      return parts.build(sb, sl);
    };

    auto loop = scf::ForOp::create(
        b, loc, zero, segments, one, ValueRange{state, out, checkpoints},
        [&](OpBuilder &lb, Location ll, Value c, ValueRange carried) {
          Value start = arith::MulIOp::create(lb, ll, c, step);
          DeltaRuleOp core =
              segment(lb, ll, start, lb.getIndexAttr(every), carried[0]);
          TokenRange o =
              batchTokenRange(lb, ll, carried[1], start,
                              lb.getIndexAttr(every));
          Value outAll = tensor::InsertSliceOp::create(
              lb, ll, core.getO(), carried[1], o.offsets, o.sizes, o.strides);
          Value checkpointAll =
              insertToken(lb, ll, core.getFinalState(), carried[2], c);
          Value next = linalg::CopyOp::create(lb, ll, core.getFinalState(),
                                              carried[0])
                           .getResult(0);
          scf::YieldOp::create(lb, ll, ValueRange{next, outAll, checkpointAll});
        });
    Value rest = arith::SubIOp::create(b, loc, tokens, whole);
    DeltaRuleOp last = segment(b, loc, whole, rest, loop.getResult(0));
    TokenRange o = batchTokenRange(b, loc, loop.getResult(1), whole, rest);
    Value outAll = tensor::InsertSliceOp::create(
        b, loc, last.getO(), loop.getResult(1), o.offsets, o.sizes, o.strides);
    rewriter.replaceOp(
        op, castToTypes(rewriter, loc,
                        {outAll, last.getFinalState(), loop.getResult(2)},
                        op->getResultTypes()));
    return success();
  }
};
} // namespace

void serving::populatePackedPatterns(RewritePatternSet &patterns) {
  patterns.add<UnpackPackedSequences, SegmentCheckpoints>(
      patterns.getContext());
}
