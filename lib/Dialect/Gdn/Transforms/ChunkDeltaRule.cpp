//===- ChunkDeltaRule.cpp - gdn.delta_rule to its chunked form ------------===//
//
// Rewrites gdn.delta_rule into the chunkwise-parallel (WY / UT-transform)
// form: an scf.forall over batch x value heads; in each task a sequential
// pass over chunks whose per-chunk work is linalg on static f32 tiles.
// The float64 specification of the same algorithm is
// python/gdn/reference.py:delta_rule_chunked.
//
//===----------------------------------------------------------------------===//

#include "HeadStep.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"
#include "gdn/Dialect/Gdn/Transforms/Transforms.h"
#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNCHUNKDELTARULEPASS
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// Emits the per-chunk computation of one (batch entry, value head) task.
class ChunkEmitter {
public:
  ChunkEmitter(OpBuilder &b, Location loc, DeltaRuleOp op, int64_t chunkSize,
               Value batch, Value head, Value keyHead)
      : b(b), loc(loc), op(op), chunk(chunkSize), batch(batch), head(head),
        keyHead(keyHead), f32(b.getF32Type()) {
    keyDim = op.getQ().getType().getDimSize(3);
    valueDim = op.getV().getType().getDimSize(3);
  }

  /// Emits one chunk starting at token `start` with `length` valid rows
  /// (static `chunk` unless `partial`). Returns the new state [K, V] and
  /// `out` ([T, V], this task's output) with the chunk's rows written.
  std::pair<Value, Value> emit(Value state, Value out, Value start,
                               OpFoldResult length, bool partial);

private:
  AffineMap map2(ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(2, 0, exprs, b.getContext());
  }
  AffineMap rowMap() { return map2({b.getAffineDimExpr(0)}); }
  AffineMap colMap() { return map2({b.getAffineDimExpr(1)}); }
  AffineMap identity2() { return b.getMultiDimIdentityMap(2); }
  Value constF32(float value) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  }
  /// A fresh f32 scratch tile. bufferization.alloc_tensor rather than
  /// tensor.empty: identical empty tensors would be merged by CSE, and every
  /// extra use of the merged tile would then cost a copy.
  Value empty(ArrayRef<int64_t> shape) {
    return bufferization::AllocTensorOp::create(
        b, loc, RankedTensorType::get(shape, f32), ValueRange{});
  }
  Value zeros(ArrayRef<int64_t> shape) {
    return fillWith(b, loc, empty(shape), 0.0f);
  }
  Value matmul(Value lhs, Value rhs, Value acc) {
    return linalg::MatmulOp::create(b, loc, TypeRange{acc.getType()},
                                    ValueRange{lhs, rhs}, ValueRange{acc})
        .getResult(0);
  }

  Value packRows(Value x, Value xHead, Value start, OpFoldResult length,
                 bool partial);
  Value packGates(Value x, Value start, OpFoldResult length, bool partial);
  std::pair<Value, Value> cumulativeGates(Value gates);
  Value causalDecay(Value cum);
  Value maskedProduct(Value scores, Value decay, Value rowScale, bool strict);
  Value invertUnitLower(Value a);

  OpBuilder &b;
  Location loc;
  DeltaRuleOp op;
  int64_t chunk, keyDim, valueDim;
  Value batch, head, keyHead;
  Type f32;
};

/// Copies rows [start, start + length) of head `xHead` of x ([B, T, H, D])
/// into an f32 [chunk, D] tile; rows past `length` are zero.
Value ChunkEmitter::packRows(Value x, Value xHead, Value start,
                             OpFoldResult length, bool partial) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t dim = type.getDimSize(3);
  SmallVector<OpFoldResult> offsets = {batch, start, xHead, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), length,
                                     b.getIndexAttr(1), b.getIndexAttr(dim)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  int64_t rows = partial ? ShapedType::kDynamic : chunk;
  auto sliceType = RankedTensorType::get({rows, dim}, type.getElementType());
  Value slice = tensor::ExtractSliceOp::create(b, loc, sliceType, x, offsets,
                                               sizes, strides);
  auto convert = [&](OpBuilder &nb, Location nl, ValueRange args) {
    return convertFloat(nb, nl, args[0], f32);
  };
  // Full tiles of f32 inputs are still copied: read in place, their rows lie
  // H*D elements apart and the matmul operand rows collide in the L1 sets.
  // linalg.copy, unlike an identity linalg.generic, is not folded away.
  if (!partial && type.getElementType() == f32)
    return linalg::CopyOp::create(b, loc, slice, empty({chunk, dim}))
        .getResult(0);
  if (!partial)
    return buildElementwise(b, loc, slice, empty({chunk, dim}), identity2(),
                            convert);
  Value tile = zeros({chunk, dim});
  SmallVector<OpFoldResult> tileOffsets(2, b.getIndexAttr(0));
  SmallVector<OpFoldResult> tileSizes = {length, b.getIndexAttr(dim)};
  SmallVector<OpFoldResult> tileStrides(2, b.getIndexAttr(1));
  Value valid = tensor::ExtractSliceOp::create(b, loc, tile, tileOffsets,
                                               tileSizes, tileStrides);
  Value packed = buildElementwise(b, loc, slice, valid, identity2(), convert);
  return tensor::InsertSliceOp::create(b, loc, packed, tile, tileOffsets,
                                       tileSizes, tileStrides);
}

/// Copies g or beta ([B, T, Hv]) rows of this task into an f32 [chunk]
/// vector; rows past `length` are zero (no decay, no write).
Value ChunkEmitter::packGates(Value x, Value start, OpFoldResult length,
                              bool partial) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<OpFoldResult> offsets = {batch, start, head};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), length,
                                     b.getIndexAttr(1)};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  int64_t rows = partial ? ShapedType::kDynamic : chunk;
  auto sliceType = RankedTensorType::get({rows}, type.getElementType());
  Value slice = tensor::ExtractSliceOp::create(b, loc, sliceType, x, offsets,
                                               sizes, strides);
  AffineMap id1 = b.getMultiDimIdentityMap(1);
  auto convert = [&](OpBuilder &nb, Location nl, ValueRange args) {
    return convertFloat(nb, nl, args[0], f32);
  };
  if (!partial)
    return buildElementwise(b, loc, slice, empty({chunk}), id1, convert);
  Value tile = zeros({chunk});
  SmallVector<OpFoldResult> tileOffsets = {b.getIndexAttr(0)};
  SmallVector<OpFoldResult> tileSizes = {length};
  SmallVector<OpFoldResult> tileStrides = {b.getIndexAttr(1)};
  Value valid = tensor::ExtractSliceOp::create(b, loc, tile, tileOffsets,
                                               tileSizes, tileStrides);
  Value packed = buildElementwise(b, loc, slice, valid, id1, convert);
  return tensor::InsertSliceOp::create(b, loc, packed, tile, tileOffsets,
                                       tileSizes, tileStrides);
}

/// Chunk-local inclusive prefix sums of the log gates, in f32, and their
/// total (the cumulative gate of the last valid row, since padding is 0).
std::pair<Value, Value> ChunkEmitter::cumulativeGates(Value gates) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = arith::ConstantIndexOp::create(b, loc, chunk);
  auto loop = scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{constF32(0.0f), empty({chunk})},
      [&](OpBuilder &nb, Location nl, Value i, ValueRange iterArgs) {
        Value gate = tensor::ExtractOp::create(nb, nl, gates, i);
        Value sum = arith::AddFOp::create(nb, nl, iterArgs[0], gate);
        Value cum = tensor::InsertOp::create(nb, nl, sum, iterArgs[1], i);
        scf::YieldOp::create(nb, nl, ValueRange{sum, cum});
      });
  return {loop.getResult(1), loop.getResult(0)};
}

/// The causal decay matrix D[i,j] = exp(cum[i] - cum[j]) for i >= j and 0
/// above the diagonal. The exponent is selected before exp, so masked
/// positions never evaluate exp of a positive number.
Value ChunkEmitter::causalDecay(Value cum) {
  return buildElementwise(
      b, loc, ValueRange{cum, cum}, empty({chunk, chunk}), {rowMap(), colMap()},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value i = linalg::IndexOp::create(nb, nl, 0);
        Value j = linalg::IndexOp::create(nb, nl, 1);
        Value causal =
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::uge, i, j);
        Value zero = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0));
        Value diff = arith::SubFOp::create(nb, nl, args[0], args[1]);
        Value exponent = arith::SelectOp::create(nb, nl, causal, diff, zero);
        Value value = math::ExpOp::create(nb, nl, exponent);
        return arith::SelectOp::create(nb, nl, causal, value, zero).getResult();
      });
}

/// out[i,j] = rowScale[i] * scores[i,j] * decay[i,j] where i > j (strict) or
/// i >= j, and exactly 0 elsewhere.
Value ChunkEmitter::maskedProduct(Value scores, Value decay, Value rowScale,
                                  bool strict) {
  SmallVector<Value> inputs = {scores, decay};
  SmallVector<AffineMap> maps = {identity2(), identity2()};
  if (rowScale) {
    inputs.push_back(rowScale);
    maps.push_back(rowMap());
  }
  return buildElementwise(
      b, loc, inputs, empty({chunk, chunk}), maps,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value value = arith::MulFOp::create(nb, nl, args[0], args[1]);
        if (rowScale)
          value = arith::MulFOp::create(nb, nl, value, args[2]);
        if (!strict)
          return value;
        Value i = linalg::IndexOp::create(nb, nl, 0);
        Value j = linalg::IndexOp::create(nb, nl, 1);
        Value lower =
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ugt, i, j);
        Value zero = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0));
        return arith::SelectOp::create(nb, nl, lower, value, zero).getResult();
      });
}

/// Returns (I + a)^-1 for a strictly lower triangular [chunk, chunk] a, by
/// forward substitution: row i of X = e_i - a[i, :] X, which only reads the
/// rows j < i that are already final.
Value ChunkEmitter::invertUnitLower(Value a) {
  Value identity = buildElementwise(
      b, loc, ValueRange{}, empty({chunk, chunk}), {},
      [&](OpBuilder &nb, Location nl, ValueRange) {
        Value i = linalg::IndexOp::create(nb, nl, 0);
        Value j = linalg::IndexOp::create(nb, nl, 1);
        Value diagonal =
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, i, j);
        return arith::UIToFPOp::create(nb, nl, nb.getF32Type(), diagonal)
            .getResult();
      });
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = arith::ConstantIndexOp::create(b, loc, chunk);
  auto loop = scf::ForOp::create(
      b, loc, one, count, one, ValueRange{identity},
      [&](OpBuilder &nb, Location nl, Value i, ValueRange iterArgs) {
        Value x = iterArgs[0];
        SmallVector<OpFoldResult> offsets = {i, nb.getIndexAttr(0)};
        SmallVector<OpFoldResult> sizes = {nb.getIndexAttr(1),
                                           nb.getIndexAttr(chunk)};
        SmallVector<OpFoldResult> strides(2, nb.getIndexAttr(1));
        auto rowType = RankedTensorType::get({chunk}, f32);
        Value aRow = tensor::ExtractSliceOp::create(nb, nl, rowType, a, offsets,
                                                    sizes, strides);
        Value product =
            linalg::VecmatOp::create(
                nb, nl, TypeRange{rowType}, ValueRange{aRow, x},
                ValueRange{createZeros(nb, nl, {nb.getIndexAttr(chunk)}, f32)})
                .getResult(0);
        Value row = buildElementwise(
            nb, nl, product, createEmpty(nb, nl, {nb.getIndexAttr(chunk)}, f32),
            nb.getMultiDimIdentityMap(1),
            [&](OpBuilder &bb, Location bl, ValueRange args) {
              Value c = linalg::IndexOp::create(bb, bl, 0);
              Value diagonal =
                  arith::CmpIOp::create(bb, bl, arith::CmpIPredicate::eq, c, i);
              Value unit =
                  arith::UIToFPOp::create(bb, bl, bb.getF32Type(), diagonal);
              return arith::SubFOp::create(bb, bl, unit, args[0]).getResult();
            });
        Value updated = tensor::InsertSliceOp::create(nb, nl, row, x, offsets,
                                                      sizes, strides);
        scf::YieldOp::create(nb, nl, updated);
      });
  return loop.getResult(0);
}

std::pair<Value, Value> ChunkEmitter::emit(Value state, Value taskOut,
                                           Value start, OpFoldResult length,
                                           bool partial) {
  Value q = packRows(op.getQ(), keyHead, start, length, partial);
  Value k = packRows(op.getK(), keyHead, start, length, partial);
  Value v = packRows(op.getV(), head, start, length, partial);
  Value g = packGates(op.getG(), start, length, partial);
  Value beta = packGates(op.getBeta(), start, length, partial);
  Value cum, total;
  std::tie(cum, total) = cumulativeGates(g);

  // k^T once per chunk: the row-major right operand of k k^T and q k^T.
  Value kT = linalg::TransposeOp::create(b, loc, k, empty({keyDim, chunk}),
                                         ArrayRef<int64_t>{1, 0})
                 .getResult()[0];

  // D[i,j] = exp(b_i - b_j) for i >= j, else 0: shared by A and the output.
  Value decay = causalDecay(cum);
  // A = strictly lower (beta_i k_i . k_j D[i,j]); Tinv = (I + A)^-1.
  Value gram = matmul(k, kT, zeros({chunk, chunk}));
  Value a = maskedProduct(gram, decay, beta, /*strict=*/true);
  Value tInv = invertUnitLower(a);

  // U = Tinv (beta v);  -W = Tinv (-beta exp(b) k).
  Value betaV = buildElementwise(
      b, loc, ValueRange{beta, v}, empty({chunk, valueDim}),
      {rowMap(), identity2()},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        return arith::MulFOp::create(nb, nl, args[0], args[1]).getResult();
      });
  Value negBetaDecayK = buildElementwise(
      b, loc, ValueRange{beta, cum, k}, empty({chunk, keyDim}),
      {rowMap(), rowMap(), identity2()},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value decay = math::ExpOp::create(nb, nl, args[1]);
        Value scale = arith::MulFOp::create(nb, nl, args[0], decay);
        Value scaled = arith::MulFOp::create(nb, nl, scale, args[2]);
        return arith::NegFOp::create(nb, nl, scaled).getResult();
      });
  Value u = matmul(tInv, betaV, zeros({chunk, valueDim}));
  Value negW = matmul(tInv, negBetaDecayK, zeros({chunk, keyDim}));

  // v_new = U - W S: the corrections of the chunk's tokens.
  Value vNew = matmul(negW, state, u);

  // o = exp(b) (q S) + ((q k^T) . D) v_new, from the state at chunk start.
  Value decayQ = buildElementwise(
      b, loc, ValueRange{cum, q}, empty({chunk, keyDim}),
      {rowMap(), identity2()},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value decay = math::ExpOp::create(nb, nl, args[0]);
        return arith::MulFOp::create(nb, nl, decay, args[1]).getResult();
      });
  Value scores = matmul(q, kT, zeros({chunk, chunk}));
  Value causal = maskedProduct(scores, decay, Value(), /*strict=*/false);
  Value out = matmul(decayQ, state, zeros({chunk, valueDim}));
  out = matmul(causal, vNew, out);

  // S = exp(b_last) S + k^T (exp(b_last - b) v_new).
  Value decayedVNew = buildElementwise(
      b, loc, ValueRange{cum, vNew}, empty({chunk, valueDim}),
      {rowMap(), identity2()},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value exponent = arith::SubFOp::create(nb, nl, total, args[0]);
        Value decay = math::ExpOp::create(nb, nl, exponent);
        return arith::MulFOp::create(nb, nl, decay, args[1]).getResult();
      });
  Value totalDecay = math::ExpOp::create(b, loc, total);
  Value decayedState = buildElementwise(
      b, loc, ValueRange{}, state, {},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        return arith::MulFOp::create(nb, nl, totalDecay, args[0]).getResult();
      });
  Value newState = matmul(kT, decayedVNew, decayedState);

  // The valid rows of the output, scaled and rounded to o's element type.
  Type outType = op.getO().getType().getElementType();
  Value scale = constF32(op.getScale().convertToFloat());
  SmallVector<OpFoldResult> offsets(2, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = {length, b.getIndexAttr(valueDim)};
  SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
  int64_t rows = partial ? ShapedType::kDynamic : chunk;
  Value validOut = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({rows, valueDim}, f32), out, offsets, sizes,
      strides);
  SmallVector<OpFoldResult> rowOffsets = {start, b.getIndexAttr(0)};
  Value destination = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({rows, valueDim}, outType), taskOut,
      rowOffsets, sizes, strides);
  Value outRows =
      buildElementwise(b, loc, validOut, destination, identity2(),
                       [&](OpBuilder &nb, Location nl, ValueRange args) {
                         Value scaled =
                             arith::MulFOp::create(nb, nl, args[0], scale);
                         return convertFloat(nb, nl, scaled, outType);
                       });
  Value written = tensor::InsertSliceOp::create(b, loc, outRows, taskOut,
                                                rowOffsets, sizes, strides);
  return {newState, written};
}

/// The token recurrence of one task's head over all T tokens, in place on
/// the task's state; returns {state, output}.
std::pair<Value, Value> buildRecurrentTask(OpBuilder &b, Location loc,
                                           DeltaRuleOp op, Value batch,
                                           Value head, Value keyHead,
                                           Value tokens, Value state,
                                           Value out) {
  Type f32 = b.getF32Type();
  Type outType = op.getO().getType().getElementType();
  int64_t valueDim = op.getO().getType().getDimSize(3);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, zero, tokens, one, ValueRange{state, out},
      [&](OpBuilder &nb, Location nl, Value t, ValueRange iterArgs) {
        OpFoldResult c0 = nb.getIndexAttr(0), c1 = nb.getIndexAttr(1);
        auto tokenVector = [&](Value x, Value xHead) {
          auto type = cast<RankedTensorType>(x.getType());
          int64_t dim = type.getDimSize(3);
          Value slice = tensor::ExtractSliceOp::create(
              nb, nl, RankedTensorType::get({dim}, type.getElementType()), x,
              ArrayRef<OpFoldResult>{batch, t, xHead, c0},
              ArrayRef<OpFoldResult>{c1, c1, c1, nb.getIndexAttr(dim)},
              ArrayRef<OpFoldResult>{c1, c1, c1, c1});
          return convertTensor(nb, nl, slice, f32);
        };
        auto tokenScalar = [&](Value x) {
          Value scalar =
              tensor::ExtractOp::create(nb, nl, x, ValueRange{batch, t, head});
          return convertFloat(nb, nl, scalar, f32);
        };
        HeadStepInputs in{tokenVector(op.getQ(), keyHead),
                          tokenVector(op.getK(), keyHead),
                          tokenVector(op.getV(), head), tokenScalar(op.getG()),
                          tokenScalar(op.getBeta())};
        auto [read, newState] =
            buildHeadStep(nb, nl, iterArgs[0], iterArgs[0], in,
                          op.getScale().convertToFloat());
        SmallVector<OpFoldResult> offsets = {t, c0};
        SmallVector<OpFoldResult> sizes = {c1, nb.getIndexAttr(valueDim)};
        SmallVector<OpFoldResult> strides = {c1, c1};
        Value row = tensor::ExtractSliceOp::create(
            nb, nl, RankedTensorType::get({valueDim}, outType), iterArgs[1],
            offsets, sizes, strides);
        Value converted =
            buildElementwise(nb, nl, read, row, nb.getMultiDimIdentityMap(1),
                             [&](OpBuilder &bb, Location bl, ValueRange args) {
                               return convertFloat(bb, bl, args[0], outType);
                             });
        Value written = tensor::InsertSliceOp::create(
            nb, nl, converted, iterArgs[1], offsets, sizes, strides);
        scf::YieldOp::create(nb, nl, ValueRange{newState, written});
      });
  return {loop.getResult(0), loop.getResult(1)};
}

struct ChunkDeltaRule : OpRewritePattern<DeltaRuleOp> {
  ChunkDeltaRule(MLIRContext *ctx, int64_t chunkSize, int64_t recurrentBelow)
      : OpRewritePattern(ctx), chunkSize(chunkSize),
        recurrentBelow(recurrentBelow) {}

  LogicalResult matchAndRewrite(DeltaRuleOp op,
                                PatternRewriter &rewriter) const override {
    if (chunkSize < 1)
      return rewriter.notifyMatchFailure(op, "chunk size must be positive");
    if (op.hasServingOperands())
      return rewriter.notifyMatchFailure(
          op, "packed sequences or a pool: gdn-unpack-sequences first");
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    auto oType = op.getO().getType();
    auto stateType = op.getFinalState().getType();
    int64_t valueHeads = oType.getDimSize(2);
    int64_t keyDim = stateType.getDimSize(2);
    int64_t valueDim = oType.getDimSize(3);
    int64_t group = op.getGroupSize();

    Value v = op.getV();
    OpFoldResult batchSize = tensor::getMixedSize(rewriter, loc, v, 0);
    if (op.getV().getType().getDimSize(1) == 0) {
      // No tokens: an empty output and the state unchanged.
      Value empty = createEmptyLike(rewriter, loc, v, oType.getElementType());
      Value state = op.getInitialState();
      if (!state)
        state = createZeros(rewriter, loc,
                            {batchSize, rewriter.getIndexAttr(valueHeads),
                             rewriter.getIndexAttr(keyDim),
                             rewriter.getIndexAttr(valueDim)},
                            f32);
      rewriter.replaceOp(op, castToTypes(rewriter, loc, {empty, state},
                                         op->getResultTypes()));
      return success();
    }
    Value tokens = tensor::DimOp::create(rewriter, loc, v, 1);
    Value oInit = createEmptyLike(rewriter, loc, v, oType.getElementType());
    Value stateInit = op.getInitialState();
    if (!stateInit)
      stateInit = createEmpty(rewriter, loc,
                              {batchSize, rewriter.getIndexAttr(valueHeads),
                               rewriter.getIndexAttr(keyDim),
                               rewriter.getIndexAttr(valueDim)},
                              f32);

    auto forall = scf::ForallOp::create(
        rewriter, loc,
        ArrayRef<OpFoldResult>{batchSize, rewriter.getIndexAttr(valueHeads)},
        ValueRange{oInit, stateInit}, std::nullopt);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(forall.getTerminator());
    Value batch = forall.getInductionVar(0);
    Value head = forall.getInductionVar(1);
    Value oShared = forall.getRegionIterArgs()[0];
    Value stateShared = forall.getRegionIterArgs()[1];
    Value groupValue = arith::ConstantIndexOp::create(rewriter, loc, group);
    Value keyHead = arith::DivUIOp::create(rewriter, loc, head, groupValue);

    // This task's slices of the shared output and state.
    SmallVector<OpFoldResult> oOffsets = {batch, rewriter.getIndexAttr(0), head,
                                          rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> oSizes = {rewriter.getIndexAttr(1), tokens,
                                        rewriter.getIndexAttr(1),
                                        rewriter.getIndexAttr(valueDim)};
    SmallVector<OpFoldResult> sOffsets = {batch, head, rewriter.getIndexAttr(0),
                                          rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> sSizes = {
        rewriter.getIndexAttr(1), rewriter.getIndexAttr(1),
        rewriter.getIndexAttr(keyDim), rewriter.getIndexAttr(valueDim)};
    SmallVector<OpFoldResult> unitStrides(4, rewriter.getIndexAttr(1));
    auto oTaskType = RankedTensorType::get({ShapedType::kDynamic, valueDim},
                                           oType.getElementType());
    auto sTaskType = RankedTensorType::get({keyDim, valueDim}, f32);
    Value oTask = tensor::ExtractSliceOp::create(
        rewriter, loc, oTaskType, oShared, oOffsets, oSizes, unitStrides);
    Value sTask = tensor::ExtractSliceOp::create(
        rewriter, loc, sTaskType, stateShared, sOffsets, sSizes, unitStrides);
    if (!op.getInitialState())
      sTask = fillWith(rewriter, loc, sTask, 0.0f);

    auto buildChunked = [&](OpBuilder &rb, Location rl, Value state,
                            Value out) -> std::pair<Value, Value> {
      Value chunkValue = arith::ConstantIndexOp::create(rb, rl, chunkSize);
      Value zero = arith::ConstantIndexOp::create(rb, rl, 0);
      Value fullChunks = arith::DivUIOp::create(rb, rl, tokens, chunkValue);
      Value fullTokens = arith::MulIOp::create(rb, rl, fullChunks, chunkValue);

      // Full chunks: static shapes throughout.
      auto fullLoop = scf::ForOp::create(
          rb, rl, zero, fullTokens, chunkValue, ValueRange{state, out},
          [&](OpBuilder &nb, Location nl, Value start, ValueRange iterArgs) {
            ChunkEmitter body(nb, nl, op, chunkSize, batch, head, keyHead);
            auto [newState, out] =
                body.emit(iterArgs[0], iterArgs[1], start,
                          nb.getIndexAttr(chunkSize), /*partial=*/false);
            scf::YieldOp::create(nb, nl, ValueRange{newState, out});
          });

      // The last, partial chunk, zero-padded to the chunk size.
      Value remainder = arith::SubIOp::create(rb, rl, tokens, fullTokens);
      Value hasTail = arith::CmpIOp::create(rb, rl, arith::CmpIPredicate::ugt,
                                            remainder, zero);
      auto tail = scf::IfOp::create(
          rb, rl, hasTail,
          [&](OpBuilder &nb, Location nl) {
            ChunkEmitter body(nb, nl, op, chunkSize, batch, head, keyHead);
            auto [newState, out] =
                body.emit(fullLoop.getResult(0), fullLoop.getResult(1),
                          fullTokens, remainder, /*partial=*/true);
            scf::YieldOp::create(nb, nl, ValueRange{newState, out});
          },
          [&](OpBuilder &nb, Location nl) {
            scf::YieldOp::create(nb, nl, fullLoop.getResults());
          });

      return {tail.getResult(0), tail.getResult(1)};
    };

    Value finalState, finalOut;
    if (recurrentBelow > 0) {
      // A run-time choice: short sequences take the token recurrence.
      Value threshold =
          arith::ConstantIndexOp::create(rewriter, loc, recurrentBelow);
      Value isShort = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ult, tokens, threshold);
      auto choice = scf::IfOp::create(
          rewriter, loc, isShort,
          [&](OpBuilder &nb, Location nl) {
            auto [state, out] = buildRecurrentTask(
                nb, nl, op, batch, head, keyHead, tokens, sTask, oTask);
            scf::YieldOp::create(nb, nl, ValueRange{state, out});
          },
          [&](OpBuilder &nb, Location nl) {
            auto [state, out] = buildChunked(nb, nl, sTask, oTask);
            scf::YieldOp::create(nb, nl, ValueRange{state, out});
          });
      finalState = choice.getResult(0);
      finalOut = choice.getResult(1);
    } else {
      std::tie(finalState, finalOut) =
          buildChunked(rewriter, loc, sTask, oTask);
    }

    rewriter.setInsertionPointToEnd(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(rewriter, loc, finalOut, oShared,
                                          oOffsets, oSizes, unitStrides);
    tensor::ParallelInsertSliceOp::create(
        rewriter, loc, finalState, stateShared, sOffsets, sSizes, unitStrides);
    rewriter.setInsertionPointAfter(forall);
    rewriter.replaceOp(op, castToTypes(rewriter, loc, forall.getResults(),
                                       op->getResultTypes()));
    return success();
  }

  int64_t chunkSize;
  int64_t recurrentBelow;
};

struct GdnChunkDeltaRulePass
    : gdn::impl::GdnChunkDeltaRulePassBase<GdnChunkDeltaRulePass> {
  using Base::Base;

  void runOnOperation() override {
    // The pass options, in Passes.td order.
    if (llvm::Error error =
            checkChunkDeltaRuleOptions({chunkSize, recurrentBelow})) {
      getOperation().emitError()
          << "gdn-chunk-delta-rule: " << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    populateGdnChunkDeltaRulePatterns(patterns, chunkSize, recurrentBelow);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace

void mlir::gdn::populateGdnChunkDeltaRulePatterns(RewritePatternSet &patterns,
                                                  int64_t chunkSize,
                                                  int64_t recurrentBelow) {
  patterns.add<ChunkDeltaRule>(patterns.getContext(), chunkSize,
                               recurrentBelow);
}

llvm::Error mlir::gdn::checkChunkDeltaRuleOptions(
    const GdnChunkDeltaRulePassOptions &options) {
  // The chunk's matrices are [C, C] tiles unrolled into registers and
  // loops: beyond 1024 tokens they cost gigabytes of IR for no gain.
  if (options.chunkSize < 1 || options.chunkSize > kMaxChunkSize)
    return llvm::createStringError(
        "chunk-size must be 1.." + llvm::Twine(kMaxChunkSize) + ", but got " +
        llvm::Twine(options.chunkSize));
  if (options.recurrentBelow < 0)
    return llvm::createStringError(
        "recurrent-below must be 0 (off) or positive, but got " +
        llvm::Twine(options.recurrentBelow));
  return llvm::Error::success();
}
