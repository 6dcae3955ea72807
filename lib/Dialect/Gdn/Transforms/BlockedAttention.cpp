//===- BlockedAttention.cpp - causal attention in blocks ------------------===//

#include "BlockedAttention.h"

#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::gdn;

namespace {
using utils::IteratorType;

/// The per-task work: one block of queries of one head of one sequence.
class QueryBlock {
public:
  QueryBlock(OpBuilder &b, Location loc, float scale, int64_t block)
      : b(b), loc(loc), f32(b.getF32Type()), scale(scale), block(block) {}

  /// The attention of queries q0 .. q0 + rows - 1 (positions offset + q0 ..)
  /// of `qTile` [rows, d] over keys 0 .. keyEnd - 1 of `keys` and `values`
  /// (this task's head: [S, d] and [S, e] slices are taken per key block by
  /// `keyTile`). Returns [rows, e].
  Value build(Value qTile, Value rows, Value firstPosition, Value keyEnd,
              function_ref<std::pair<Value, Value>(Value, Value)> keyTile,
              int64_t valueDim) {
    Value lowest = constant(-std::numeric_limits<float>::infinity());
    OpFoldResult rowSize = rows;
    Value maximum = fillWith(b, loc, createEmpty(b, loc, {rowSize}, f32),
                             -std::numeric_limits<float>::infinity());
    Value sum = createZeros(b, loc, {rowSize}, f32);
    Value acc = createZeros(b, loc, {rowSize, b.getIndexAttr(valueDim)}, f32);
    Value zero = index(0), step = index(block);
    auto loop = scf::ForOp::create(
        b, loc, zero, keyEnd, step, ValueRange{maximum, sum, acc},
        [&](OpBuilder &lb, Location ll, Value firstKey, ValueRange carried) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          Value columns = arith::MinUIOp::create(
              b, loc, step, arith::SubIOp::create(b, loc, keyEnd, firstKey));
          auto [kTile, vTile] = keyTile(firstKey, columns);
          // Whole blocks (all but the last of each row and column) take
          // static shapes, whose products gdn-cpu-vectorize turns into
          // register-tiled FMA kernels; the partial ones stay dynamic.
          Value whole = arith::AndIOp::create(
              b, loc,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rows,
                                    step),
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, columns,
                                    step));
          auto choice = scf::IfOp::create(b, loc, carried.getTypes(), whole,
                                          /*withElseRegion=*/true);
          {
            OpBuilder::InsertionGuard branch(b);
            b.setInsertionPointToStart(choice.thenBlock());
            auto fixed = [&](Value x) {
              auto type = cast<RankedTensorType>(x.getType());
              SmallVector<int64_t> shape(type.getShape());
              for (int64_t &size : shape)
                if (ShapedType::isDynamic(size))
                  size = block;
              return tensor::CastOp::create(
                         b, loc, RankedTensorType::get(shape, f32), x)
                  .getResult();
            };
            SmallVector<Value> next =
                keyBlock(fixed(qTile), fixed(kTile), fixed(vTile), rows,
                         columns, firstPosition, firstKey, fixed(carried[0]),
                         fixed(carried[1]), fixed(carried[2]), lowest,
                         /*wholeBlock=*/true);
            scf::YieldOp::create(b, loc,
                                 castToTypes(b, loc, next, carried.getTypes()));
            b.setInsertionPointToStart(choice.elseBlock());
            scf::YieldOp::create(b, loc,
                                 keyBlock(qTile, kTile, vTile, rows, columns,
                                          firstPosition, firstKey, carried[0],
                                          carried[1], carried[2], lowest,
                                          /*wholeBlock=*/false));
          }
          scf::YieldOp::create(b, loc, choice.getResults());
        });
    Value total = loop.getResult(1);
    return buildElementwise(
        b, loc, ValueRange{loop.getResult(2), total},
        createEmptyLike(b, loc, loop.getResult(2), f32),
        {b.getMultiDimIdentityMap(2), map(2, {0})},
        [](OpBuilder &nb, Location nl, ValueRange args) {
          return arith::DivFOp::create(nb, nl, args[0], args[1]).getResult();
        });
  }

private:
  Value constant(float value) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  }
  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  AffineMap map(unsigned dims, ArrayRef<unsigned> results) {
    SmallVector<AffineExpr> exprs;
    for (unsigned r : results)
      exprs.push_back(b.getAffineDimExpr(r));
    return AffineMap::get(dims, 0, exprs, b.getContext());
  }

  /// init[i, j] + sum_c lhs[i, c] rhs(...) over loops (i, j, c), `rhsMap`
  /// placing rhs in them: the partial blocks' products, on loops.
  Value multiplyAccumulate(Value lhs, Value rhs, Value init, AffineMap rhsMap) {
    return buildGeneric(
        b, loc, ValueRange{lhs, rhs}, init,
        {map(3, {0, 2}), rhsMap, map(3, {0, 1})},
        {IteratorType::parallel, IteratorType::parallel,
         IteratorType::reduction},
        [](OpBuilder &nb, Location nl, ValueRange args) {
          Value product = arith::MulFOp::create(nb, nl, args[0], args[1]);
          return arith::AddFOp::create(nb, nl, args[2], product).getResult();
        });
  }

  /// One key block: the running maximum, sum and output after it. A whole
  /// block has static [block, ...] tiles and its two products are
  /// linalg.matmul ops (the keys transposed once); a partial one keeps
  /// dynamic sizes and contractions on loops.
  SmallVector<Value> keyBlock(Value qTile, Value kTile, Value vTile, Value rows,
                              Value columns, Value firstPosition,
                              Value firstKey, Value maximum, Value sum,
                              Value acc, Value lowest, bool wholeBlock) {
    OpFoldResult rowSize = rows, columnSize = columns;
    if (wholeBlock)
      rowSize = columnSize = b.getIndexAttr(block);
    Value scoresInit = createZeros(b, loc, {rowSize, columnSize}, f32);
    Value scores;
    if (wholeBlock) {
      int64_t keyDim = cast<RankedTensorType>(kTile.getType()).getDimSize(1);
      Value keysT =
          linalg::TransposeOp::create(
              b, loc, kTile,
              createEmpty(b, loc,
                          {b.getIndexAttr(keyDim), b.getIndexAttr(block)}, f32),
              ArrayRef<int64_t>{1, 0})
              .getResult()[0];
      scores = linalg::MatmulOp::create(b, loc, TypeRange{scoresInit.getType()},
                                        ValueRange{qTile, keysT},
                                        ValueRange{scoresInit})
                   .getResult(0);
    } else {
      // scores[i, j] = q[i] . k[j], loops (i, j, c).
      scores = multiplyAccumulate(qTile, kTile, scoresInit, map(3, {1, 2}));
    }
    Value factor = constant(scale);
    // Whether key j of the block is visible to query i.
    auto visible = [&](OpBuilder &nb, Location nl) {
      Value position = arith::AddIOp::create(
          nb, nl, firstPosition, linalg::IndexOp::create(nb, nl, 0));
      Value key = arith::AddIOp::create(nb, nl, firstKey,
                                        linalg::IndexOp::create(nb, nl, 1));
      return arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ule, key,
                                   position)
          .getResult();
    };
    SmallVector<IteratorType> rowsAndColumns = {IteratorType::parallel,
                                                IteratorType::reduction};
    // Each update is written into the carried tensor it replaces, so that
    // the loop's values stay in their buffers: the block's row maxima
    // (fresh), the correction from the old maximum, then the new maximum.
    Value rowMaximum = buildGeneric(
        b, loc, ValueRange{scores},
        fillWith(b, loc, createEmptyLike(b, loc, maximum, f32),
                 -std::numeric_limits<float>::infinity()),
        {map(2, {0, 1}), map(2, {0})}, rowsAndColumns,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value scaled = arith::MulFOp::create(nb, nl, args[0], factor);
          Value masked =
              arith::SelectOp::create(nb, nl, visible(nb, nl), scaled, lowest);
          return arith::MaximumFOp::create(nb, nl, args[1], masked).getResult();
        });
    // What the sum and the output so far are rescaled by: exp(old max -
    // new max), 0 before the first block (no exp of -inf).
    Value correction = buildElementwise(
        b, loc, ValueRange{maximum, rowMaximum},
        createEmptyLike(b, loc, maximum, f32), {map(1, {0}), map(1, {0})},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value first = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ,
                                              args[0], lowest);
          Value largest = arith::MaximumFOp::create(nb, nl, args[0], args[1]);
          Value e = math::ExpOp::create(
              nb, nl, arith::SubFOp::create(nb, nl, args[0], largest));
          Value none =
              arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0.0f));
          return arith::SelectOp::create(nb, nl, first, none, e).getResult();
        });
    Value newMaximum = buildElementwise(
        b, loc, ValueRange{maximum, rowMaximum}, maximum,
        {map(1, {0}), map(1, {0})},
        [](OpBuilder &nb, Location nl, ValueRange args) {
          return arith::MaximumFOp::create(nb, nl, args[0], args[1])
              .getResult();
        });
    // p[i, j] = exp(scale s - max_i) where visible, else 0.
    Value probabilities = buildElementwise(
        b, loc, ValueRange{scores, newMaximum},
        createEmptyLike(b, loc, scores, f32), {map(2, {0, 1}), map(2, {0})},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value scaled = arith::MulFOp::create(nb, nl, args[0], factor);
          Value e = math::ExpOp::create(
              nb, nl, arith::SubFOp::create(nb, nl, scaled, args[1]));
          Value none =
              arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0.0f));
          return arith::SelectOp::create(nb, nl, visible(nb, nl), e, none)
              .getResult();
        });
    auto times = [](OpBuilder &nb, Location nl, ValueRange args) {
      return arith::MulFOp::create(nb, nl, args[0], args[1]).getResult();
    };
    Value scaledSum = buildElementwise(b, loc, ValueRange{sum, correction}, sum,
                                       {map(1, {0}), map(1, {0})}, times);
    Value newSum = buildGeneric(
        b, loc, ValueRange{probabilities}, scaledSum,
        {map(2, {0, 1}), map(2, {0})}, rowsAndColumns,
        [](OpBuilder &nb, Location nl, ValueRange args) {
          return arith::AddFOp::create(nb, nl, args[1], args[0]).getResult();
        });
    Value scaledAcc = buildElementwise(b, loc, ValueRange{acc, correction}, acc,
                                       {map(2, {0, 1}), map(2, {0})}, times);
    if (wholeBlock)
      return {newMaximum, newSum,
              linalg::MatmulOp::create(b, loc, TypeRange{scaledAcc.getType()},
                                       ValueRange{probabilities, vTile},
                                       ValueRange{scaledAcc})
                  .getResult(0)};
    // acc[i, c] += sum_j p[i, j] v[j, c], loops (i, c, j).
    return {
        newMaximum, newSum,
        multiplyAccumulate(probabilities, vTile, scaledAcc, map(3, {2, 1}))};
  }

  OpBuilder &b;
  Location loc;
  Type f32;
  float scale;
  int64_t block;
};
} // namespace

Value mlir::gdn::buildBlockedCausalAttention(OpBuilder &b, Location loc,
                                             Value q, Value k, Value v,
                                             float scale, Value offset,
                                             int64_t block) {
  Type f32 = b.getF32Type();
  auto qType = cast<RankedTensorType>(q.getType());
  auto kType = cast<RankedTensorType>(k.getType());
  auto vType = cast<RankedTensorType>(v.getType());
  int64_t heads = qType.getDimSize(2), kvHeads = kType.getDimSize(2);
  int64_t keyDim = qType.getDimSize(3), valueDim = vType.getDimSize(3);
  Value batch = tensor::DimOp::create(b, loc, q, 0);
  Value tokens = tensor::DimOp::create(b, loc, q, 1);
  Value keys = tensor::DimOp::create(b, loc, k, 1);
  Value blockSize = arith::ConstantIndexOp::create(b, loc, block);
  Value queryBlocks = arith::CeilDivUIOp::create(b, loc, tokens, blockSize);
  Value out = createEmpty(
      b, loc, {batch, tokens, b.getIndexAttr(heads), b.getIndexAttr(valueDim)},
      f32);
  auto forall = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{batch, b.getIndexAttr(heads), queryBlocks},
      ValueRange{out}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forall.getTerminator());
  Value sequence = forall.getInductionVar(0);
  Value head = forall.getInductionVar(1);
  Value firstQuery =
      arith::MulIOp::create(b, loc, forall.getInductionVar(2), blockSize);
  Value rows = arith::MinUIOp::create(
      b, loc, blockSize, arith::SubIOp::create(b, loc, tokens, firstQuery));
  Value kvHead = arith::DivUIOp::create(
      b, loc, head, arith::ConstantIndexOp::create(b, loc, heads / kvHeads));
  Value firstPosition = arith::AddIOp::create(b, loc, firstQuery, offset);
  // The keys this block sees: up to its last query's position.
  Value keyEnd = arith::MinUIOp::create(
      b, loc, keys, arith::AddIOp::create(b, loc, firstPosition, rows));

  SmallVector<OpFoldResult> unit(4, b.getIndexAttr(1));
  auto rowsOf = [&](Value x, Value headIndex, Value first, Value count,
                    int64_t width) {
    return tensor::ExtractSliceOp::create(
               b, loc,
               RankedTensorType::get({ShapedType::kDynamic, width}, f32), x,
               ArrayRef<OpFoldResult>{sequence, first, headIndex,
                                      b.getIndexAttr(0)},
               ArrayRef<OpFoldResult>{b.getIndexAttr(1), count,
                                      b.getIndexAttr(1), b.getIndexAttr(width)},
               unit)
        .getResult();
  };
  Value qTile = rowsOf(q, head, firstQuery, rows, keyDim);
  QueryBlock task(b, loc, scale, block);
  Value result = task.build(
      qTile, rows, firstPosition, keyEnd,
      [&](Value firstKey, Value columns) {
        return std::make_pair(rowsOf(k, kvHead, firstKey, columns, keyDim),
                              rowsOf(v, kvHead, firstKey, columns, valueDim));
      },
      valueDim);

  b.setInsertionPointToEnd(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      b, loc, result, forall.getRegionIterArgs()[0],
      ArrayRef<OpFoldResult>{sequence, firstQuery, head, b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), rows, b.getIndexAttr(1),
                             b.getIndexAttr(valueDim)},
      unit);
  b.setInsertionPointAfter(forall);
  return forall.getResult(0);
}
