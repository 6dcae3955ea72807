//===- TileProjections.cpp - projections in static row tiles --------------===//

#include "gdn/Codegen/CPU/Passes.h"
#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNCPUTILEPROJECTIONSPASS
#include "gdn/Codegen/CPU/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
constexpr StringLiteral kTilingAttr = "gdn.projection_tiling";
/// Weight rows whose dots with one token are taken together. One: each
/// row is read whole before the next, so the weight streams through memory
/// in order and the hardware prefetcher keeps ahead of it; rows taken 8,
/// 4 or 2 at a time interleave as many short streams and made the decode
/// of a 124M-parameter model 1.3x, 1.2x and 1.05x slower (its LM head ran
/// at a third of the copy bandwidth with 8).
constexpr int64_t kDotRows = 1;

/// A projection: f32 x [B, T, I] times a static weight [O, I] (f32, or
/// bf16 widened where it is read) into [B, T, O] on tensors
/// (getProjectionIndexingMaps).
bool isProjection(linalg::ContractOp op) {
  if (!op.hasPureTensorSemantics() ||
      op.getIndexingMaps() != getProjectionIndexingMaps(op.getContext()))
    return false;
  auto x = dyn_cast<RankedTensorType>(op.getInputs()[0].getType());
  auto weight = dyn_cast<RankedTensorType>(op.getInputs()[1].getType());
  auto acc = dyn_cast<RankedTensorType>(op.getOutputs()[0].getType());
  return x && weight && acc && weight.hasStaticShape() &&
         x.getElementType().isF32() &&
         (weight.getElementType().isF32() ||
          weight.getElementType().isBF16()) &&
         acc.getElementType().isF32();
}

/// Builds the tiled form of one projection: the tokens of each sequence in
/// blocks of rowBlock (one scf.forall task per sequence x block), then
/// tiles of rowTile, each a static [rows, I] x [I, O] linalg.matmul on the
/// weight transposed once per call; the last tokens of every sequence
/// (fewer than rowTile, as in decode) stay a contraction, without the
/// transposition.
class ProjectionTiler {
public:
  ProjectionTiler(RewriterBase &b, linalg::ContractOp op, int64_t rowBlock,
                  int64_t rowTile, int64_t columnTile, int64_t parallelMin)
      : b(b), loc(op.getLoc()), x(op.getInputs()[0]), weight(op.getInputs()[1]),
        init(op.getOutputs()[0]), rowBlock(rowBlock), rowTile(rowTile),
        columnTile(columnTile), parallelMin(parallelMin),
        f32(b.getF32Type()) {
    auto weightType = cast<RankedTensorType>(weight.getType());
    outputs = weightType.getDimSize(0);
    inputs = weightType.getDimSize(1);
  }

  Value tile() {
    Value batch = tensor::DimOp::create(b, loc, x, 0);
    Value tokens = tensor::DimOp::create(b, loc, x, 1);
    // Tokens [0, tiled) of every sequence go in static tiles.
    Value tiled = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, tokens, index(b, rowTile)),
        index(b, rowTile));
    Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, tiled,
                                      index(b, 0));
    auto tiledPart = scf::IfOp::create(
        b, loc, any,
        [&](OpBuilder &tb, Location) {
          scf::YieldOp::create(tb, loc, staticTiles(tb, batch, tokens, tiled));
        },
        [&](OpBuilder &eb, Location) { scf::YieldOp::create(eb, loc, init); });
    // The last tokens of every sequence, as a contraction on loops.
    Value rest = arith::SubIOp::create(b, loc, tokens, tiled);
    SmallVector<OpFoldResult> restOffsets = {b.getIndexAttr(0), tiled,
                                             b.getIndexAttr(0)};
    Value restX = tensor::ExtractSliceOp::create(
        b, loc, x, restOffsets,
        ArrayRef<OpFoldResult>{batch, rest, b.getIndexAttr(inputs)},
        unitStrides(b));
    SmallVector<OpFoldResult> restSizes = {batch, rest,
                                           b.getIndexAttr(outputs)};
    Value restAcc = tensor::ExtractSliceOp::create(
        b, loc, tiledPart.getResult(0), restOffsets, restSizes, unitStrides(b));
    Value restOut = rowDots(restX, restAcc, batch, rest);
    return tensor::InsertSliceOp::create(b, loc, restOut,
                                         tiledPart.getResult(0), restOffsets,
                                         restSizes, unitStrides(b));
  }

private:
  Value index(OpBuilder &nb, int64_t v) {
    return arith::ConstantIndexOp::create(nb, loc, v);
  }

  SmallVector<OpFoldResult> unitStrides(OpBuilder &nb) {
    return SmallVector<OpFoldResult>(3, nb.getIndexAttr(1));
  }

  /// [1, rows, width] at (sequence, first, 0), rank-reduced to 2-D.
  Value rowsOf(OpBuilder &nb, Value source, Value sequence, Value first,
               int64_t rows, int64_t width) {
    auto type = RankedTensorType::get({rows, width}, f32);
    return tensor::ExtractSliceOp::create(
        nb, loc, type, source,
        ArrayRef<OpFoldResult>{sequence, first, nb.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(rows),
                               nb.getIndexAttr(width)},
        unitStrides(nb));
  }

  SmallVector<OpFoldResult> tileOffsets(OpBuilder &nb, Value sequence,
                                        Value first) {
    return {sequence, first, nb.getIndexAttr(0)};
  }

  SmallVector<OpFoldResult> tileSizes(OpBuilder &nb, int64_t rows) {
    return {nb.getIndexAttr(1), nb.getIndexAttr(rows),
            nb.getIndexAttr(outputs)};
  }

  DictionaryAttr tilingAttr() {
    return b.getDictionaryAttr(
        {b.getNamedAttr("row_block", b.getI64IntegerAttr(rowBlock)),
         b.getNamedAttr("row_tile", b.getI64IntegerAttr(rowTile))});
  }

  /// The weight as [I, O] f32: transposed once per call, and a bf16 weight
  /// widened in the same pass (the tiles' matmul schedule is f32).
  Value transposedWeight(OpBuilder &tb) {
    Value empty = createEmpty(
        tb, loc, {tb.getIndexAttr(inputs), tb.getIndexAttr(outputs)}, f32);
    if (cast<RankedTensorType>(weight.getType()).getElementType().isF32())
      return linalg::TransposeOp::create(tb, loc, weight, empty,
                                         ArrayRef<int64_t>{1, 0})
          .getResult()[0];
    AffineMap swapped =
        AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0}, tb.getContext());
    return buildGeneric(
        tb, loc, weight, empty, {swapped, tb.getMultiDimIdentityMap(2)},
        {utils::IteratorType::parallel, utils::IteratorType::parallel},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          return convertFloat(nb, nl, args[0], nb.getF32Type());
        });
  }

  /// Rows [first, first + count) of the weight.
  Value weightRows(OpBuilder &nb, OpFoldResult first, int64_t count) {
    return tensor::ExtractSliceOp::create(
        nb, loc, weight, ArrayRef<OpFoldResult>{first, nb.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{nb.getIndexAttr(count), nb.getIndexAttr(inputs)},
        SmallVector<OpFoldResult>(2, nb.getIndexAttr(1)));
  }

  /// The projection contraction of `rows` of x ([batch, tokens, inputs])
  /// with the weight rows [first, first + count), into `acc`.
  Value contraction(OpBuilder &nb, Value rows, Value acc, int64_t first,
                    int64_t count) {
    Value part = first == 0 && count == outputs
                     ? weight
                     : weightRows(nb, nb.getIndexAttr(first), count);
    return linalg::ContractOp::create(
               nb, loc, TypeRange{acc.getType()}, ValueRange{rows, part},
               ValueRange{acc}, getProjectionIndexingMaps(nb.getContext()))
        .getResult(0);
  }

  /// Where the columns [first, first + columns) of every token lie in a
  /// [batch, tokens, outputs] tensor.
  SmallVector<OpFoldResult> columnOffsets(OpBuilder &nb, OpFoldResult first) {
    return {nb.getIndexAttr(0), nb.getIndexAttr(0), first};
  }
  SmallVector<OpFoldResult> columnSizes(OpBuilder &nb, Value batch,
                                        Value tokens, int64_t columns) {
    return {batch, tokens, nb.getIndexAttr(columns)};
  }

  /// [batch, tokens, columns] of `acc` from column `first`.
  Value columnsOf(OpBuilder &nb, Value acc, Value batch, Value tokens,
                  OpFoldResult first, int64_t columns) {
    return tensor::ExtractSliceOp::create(
        nb, loc, acc, columnOffsets(nb, first),
        columnSizes(nb, batch, tokens, columns), unitStrides(nb));
  }

  /// Where one token's row of `width` elements lies in a [batch, tokens,
  /// width] tensor, rank-reduced to 1-D.
  SmallVector<OpFoldResult> tokenOffsets(OpBuilder &nb, Value sequence,
                                         Value token) {
    return {sequence, token, nb.getIndexAttr(0)};
  }
  SmallVector<OpFoldResult> tokenSizes(OpBuilder &nb, int64_t width) {
    return {nb.getIndexAttr(1), nb.getIndexAttr(1), nb.getIndexAttr(width)};
  }
  Value tokenRow(OpBuilder &nb, Value source, Value sequence, Value token,
                 int64_t width) {
    return tensor::ExtractSliceOp::create(
        nb, loc, RankedTensorType::get({width}, f32), source,
        tokenOffsets(nb, sequence, token), tokenSizes(nb, width),
        unitStrides(nb));
  }

  /// The remainder rows (fewer than a row tile: a decode step's tokens) as
  /// dot products along the weight's rows, which are contiguous in memory:
  /// the weight's rows go in blocks, one scf.forall task per block (so that
  /// a single token still spreads over the threads), and each token's dots
  /// with a block are vector code (tokenDots). The weight is read once per
  /// token as it is stored, bf16 widened in registers, never transposed:
  /// the loop-nest contraction it replaces kept one scalar accumulator in
  /// memory, which LLVM does not vectorize. Rows past the last whole block,
  /// and inputs that are not a multiple of 16, stay a contraction.
  Value rowDots(Value rows, Value acc, Value batch, Value tokens) {
    int64_t lanes = inputs % 32 == 0 ? 32 : inputs % 16 == 0 ? 16 : 0;
    int64_t block = 0;
    static_assert(8 % kDotRows == 0, "blocks are multiples of kDotRows");
    for (int64_t size : {64, 32, 16, 8})
      if (outputs % size == 0) {
        block = size;
        break;
      }
    if (!block)
      block = outputs >= 64 ? 64 : 0;
    if (!lanes || !block)
      return contraction(b, rows, acc, 0, outputs);
    int64_t blocks = outputs / block;
    int64_t covered = blocks * block;
    // The dots of every token with one block of weight rows (starting at
    // `firstRow`), into that block's columns of `result`.
    auto blockDots = [&](OpBuilder &fb, Value firstRow, Value result) {
      Value weightBlock = weightRows(fb, firstRow, block);
      Value columns = columnsOf(fb, result, batch, tokens, firstRow, block);
      auto overSequences = scf::ForOp::create(
          fb, loc, index(fb, 0), batch, index(fb, 1), ValueRange{columns},
          [&](OpBuilder &sb, Location, Value sequence, ValueRange outer) {
            auto overTokens = scf::ForOp::create(
                sb, loc, index(sb, 0), tokens, index(sb, 1), outer,
                [&](OpBuilder &lb, Location, Value token, ValueRange inner) {
                  scf::YieldOp::create(lb, loc,
                                       tokenDots(lb, inner[0], sequence, token,
                                                 weightBlock, block, lanes,
                                                 rows));
                });
            scf::YieldOp::create(sb, loc, overTokens.getResults());
          });
      return overSequences.getResult(0);
    };
    Operation *blockLoop;
    if (outputs * inputs >= parallelMin) {
      blockLoop = scf::ForallOp::create(
          b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(blocks)},
          ValueRange{acc}, std::nullopt,
          [&](OpBuilder &fb, Location, ValueRange args) {
            Value firstRow =
                arith::MulIOp::create(fb, loc, args[0], index(fb, block));
            Value dots = blockDots(fb, firstRow, args[1]);
            auto terminator = scf::InParallelOp::create(fb, loc);
            OpBuilder ib = OpBuilder::atBlockBegin(terminator.getBody());
            tensor::ParallelInsertSliceOp::create(
                ib, loc, dots, args[1], columnOffsets(ib, firstRow),
                columnSizes(ib, batch, tokens, block), unitStrides(ib));
          });
    } else {
      blockLoop = scf::ForOp::create(
          b, loc, index(b, 0), index(b, covered), index(b, block),
          ValueRange{acc},
          [&](OpBuilder &fb, Location, Value firstRow, ValueRange result) {
            Value dots = blockDots(fb, firstRow, result[0]);
            scf::YieldOp::create(
                fb, loc,
                tensor::InsertSliceOp::create(
                    fb, loc, dots, result[0], columnOffsets(fb, firstRow),
                    columnSizes(fb, batch, tokens, block), unitStrides(fb))
                    .getResult());
          });
    }
    blockLoop->setAttr(
        kTilingAttr,
        b.getDictionaryAttr(
            {b.getNamedAttr("row_dot_block", b.getI64IntegerAttr(block)),
             b.getNamedAttr("row_dot_lanes", b.getI64IntegerAttr(lanes)),
             b.getNamedAttr("row_dot_parallel",
                            b.getBoolAttr(isa<scf::ForallOp>(blockLoop)))}));
    Value result = blockLoop->getResult(0);
    if (covered == outputs)
      return result;
    // The weight rows past the last whole block.
    int64_t left = outputs - covered;
    Value leftAcc =
        columnsOf(b, result, batch, tokens, b.getIndexAttr(covered), left);
    Value leftOut = contraction(b, rows, leftAcc, covered, left);
    return tensor::InsertSliceOp::create(
        b, loc, leftOut, result, columnOffsets(b, b.getIndexAttr(covered)),
        columnSizes(b, batch, tokens, left), unitStrides(b));
  }

  /// One token's dots with a block of weight rows ([block, inputs]), added
  /// into its [1, 1, block] of `columns`: kDotRows rows at a time, each
  /// with a vector of `lanes` partial sums carried along the inputs (one
  /// FMA per weight vector, the row of x broadcast), then each row's lanes
  /// added up once.
  Value tokenDots(OpBuilder &nb, Value columns, Value sequence, Value token,
                  Value weightBlock, int64_t block, int64_t lanes, Value rows) {
    Value row = tokenRow(nb, rows, sequence, token, inputs);
    Value out = tokenRow(nb, columns, sequence, token, block);
    Type weightElement =
        cast<RankedTensorType>(weight.getType()).getElementType();
    auto laneType = VectorType::get({lanes}, f32);
    auto weightLaneType = VectorType::get({lanes}, weightElement);
    auto overRows = scf::ForOp::create(
        nb, loc, index(nb, 0), index(nb, block), index(nb, kDotRows),
        ValueRange{out},
        [&](OpBuilder &rb, Location, Value firstRow, ValueRange rowsAcc) {
          Value zeros = arith::ConstantOp::create(
              rb, loc, laneType, DenseElementsAttr::get(laneType, 0.0f));
          SmallVector<Value> initial(kDotRows, zeros);
          auto alongInputs = scf::ForOp::create(
              rb, loc, index(rb, 0), index(rb, inputs), index(rb, lanes),
              initial,
              [&](OpBuilder &ib, Location, Value column, ValueRange acc) {
                Value xLanes = vector::TransferReadOp::create(
                    ib, loc, laneType, row, ValueRange{column},
                    /*padding=*/std::nullopt, ArrayRef<bool>{true});
                SmallVector<Value> next;
                for (int64_t r = 0; r < kDotRows; ++r) {
                  Value weightRow =
                      arith::AddIOp::create(ib, loc, firstRow, index(ib, r));
                  Value w = vector::TransferReadOp::create(
                      ib, loc, weightLaneType, weightBlock,
                      ValueRange{weightRow, column}, /*padding=*/std::nullopt,
                      ArrayRef<bool>{true});
                  if (weightElement != f32)
                    w = arith::ExtFOp::create(ib, loc, laneType, w);
                  next.push_back(
                      vector::FMAOp::create(ib, loc, w, xLanes, acc[r]));
                }
                scf::YieldOp::create(ib, loc, next);
              });
          SmallVector<Value> sums;
          for (Value partial : alongInputs.getResults())
            sums.push_back(vector::ReductionOp::create(
                rb, loc, vector::CombiningKind::ADD, partial));
          auto sumType = VectorType::get({kDotRows}, f32);
          Value dots = vector::FromElementsOp::create(rb, loc, sumType, sums);
          Value before = vector::TransferReadOp::create(
              rb, loc, sumType, rowsAcc[0], ValueRange{firstRow},
              /*padding=*/std::nullopt, ArrayRef<bool>{true});
          Value after = arith::AddFOp::create(rb, loc, before, dots);
          Value written = vector::TransferWriteOp::create(
                              rb, loc, after, rowsAcc[0], ValueRange{firstRow},
                              ArrayRef<bool>{true})
                              .getResult();
          scf::YieldOp::create(rb, loc, written);
        });
    return tensor::InsertSliceOp::create(
        nb, loc, overRows.getResult(0), columns,
        tokenOffsets(nb, sequence, token), tokenSizes(nb, block),
        unitStrides(nb));
  }

  Value staticTiles(OpBuilder &tb, Value batch, Value tokens, Value tiled) {
    Value transposed = transposedWeight(tb);
    // The outputs up to the last multiple of columnTile, whose matmul the
    // vectorizer's register tiles divide, and the rest (a vocabulary's
    // last few) in a matmul of their own.
    int64_t wide = outputs - outputs % columnTile;
    auto tileProduct = [&](OpBuilder &nb, Value acc, Value sequence,
                           Value first, int64_t rows) {
      Value xRows = rowsOf(nb, x, sequence, first, rows, inputs);
      Value accRows = rowsOf(nb, acc, sequence, first, rows, outputs);
      auto matmul = [&](Value w, Value out) {
        return linalg::MatmulOp::create(nb, loc, ValueRange{xRows, w},
                                        ValueRange{out})
            .getResult(0);
      };
      if (wide == 0 || wide == outputs)
        return matmul(transposed, accRows);
      auto columns = [&](Value source, int64_t height, int64_t from,
                         int64_t count) {
        return tensor::ExtractSliceOp::create(
            nb, loc, source,
            ArrayRef<OpFoldResult>{nb.getIndexAttr(0), nb.getIndexAttr(from)},
            ArrayRef<OpFoldResult>{nb.getIndexAttr(height),
                                   nb.getIndexAttr(count)},
            SmallVector<OpFoldResult>(2, nb.getIndexAttr(1)));
      };
      SmallVector<OpFoldResult> unit(2, nb.getIndexAttr(1));
      Value result = accRows;
      for (auto [from, count] :
           {std::pair<int64_t, int64_t>{0, wide}, {wide, outputs - wide}}) {
        Value part = matmul(columns(transposed, inputs, from, count),
                            columns(result, rows, from, count));
        result = tensor::InsertSliceOp::create(
            nb, loc, part, result,
            ArrayRef<OpFoldResult>{nb.getIndexAttr(0), nb.getIndexAttr(from)},
            ArrayRef<OpFoldResult>{nb.getIndexAttr(rows),
                                   nb.getIndexAttr(count)},
            unit);
      }
      return result;
    };
    // Blocks of rowBlock tokens, one task per sequence x block.
    Value blocks = arith::DivUIOp::create(tb, loc, tokens, index(tb, rowBlock));
    auto forall = scf::ForallOp::create(
        tb, loc,
        ArrayRef<OpFoldResult>{OpFoldResult(batch), OpFoldResult(blocks)},
        ValueRange{init}, std::nullopt,
        [&](OpBuilder &fb, Location, ValueRange args) {
          Value first =
              arith::MulIOp::create(fb, loc, args[1], index(fb, rowBlock));
          Value tile = tileProduct(fb, args[2], args[0], first, rowBlock);
          auto terminator = scf::InParallelOp::create(fb, loc);
          OpBuilder ib = OpBuilder::atBlockBegin(terminator.getBody());
          tensor::ParallelInsertSliceOp::create(
              ib, loc, tile, args[2], tileOffsets(ib, args[0], first),
              tileSizes(ib, rowBlock), unitStrides(ib));
        });
    forall->setAttr(kTilingAttr, tilingAttr());
    // Then tiles of rowTile tokens up to `tiled`, per sequence.
    Value start = arith::MulIOp::create(tb, loc, blocks, index(tb, rowBlock));
    auto sequences = scf::ForOp::create(
        tb, loc, index(tb, 0), batch, index(tb, 1),
        ValueRange{forall.getResult(0)},
        [&](OpBuilder &sb, Location, Value sequence, ValueRange acc) {
          auto rowTiles = scf::ForOp::create(
              sb, loc, start, tiled, index(sb, rowTile), acc,
              [&](OpBuilder &lb, Location, Value first, ValueRange inner) {
                Value tile =
                    tileProduct(lb, inner[0], sequence, first, rowTile);
                Value updated = tensor::InsertSliceOp::create(
                    lb, loc, tile, inner[0], tileOffsets(lb, sequence, first),
                    tileSizes(lb, rowTile), unitStrides(lb));
                scf::YieldOp::create(lb, loc, updated);
              });
          rowTiles->setAttr(kTilingAttr, tilingAttr());
          scf::YieldOp::create(sb, loc, rowTiles.getResult(0));
        });
    return sequences.getResult(0);
  }

  RewriterBase &b;
  Location loc;
  Value x, weight, init;
  int64_t rowBlock, rowTile, columnTile, parallelMin, outputs = 0,
      inputs = 0;
  Type f32;
};

struct GdnCPUTileProjectionsPass
    : gdn::impl::GdnCPUTileProjectionsPassBase<GdnCPUTileProjectionsPass> {
  using Base::Base;

  void runOnOperation() override {
    // The pass options, in Passes.td order.
    if (llvm::Error error =
            checkCPUTileProjectionsOptions(
                {rowBlock, rowTile, columnTile, rowDotParallelMin})) {
      getOperation().emitError()
          << "gdn-cpu-tile-projections: " << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    // Collected first: the remainder contractions the rewrite creates are
    // projections too, and stay as they are.
    SmallVector<linalg::ContractOp> projections;
    getOperation().walk([&](linalg::ContractOp op) {
      if (isProjection(op))
        projections.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::ContractOp op : projections) {
      rewriter.setInsertionPoint(op);
      Value tiled = ProjectionTiler(rewriter, op, rowBlock, rowTile,
                                    columnTile, rowDotParallelMin)
                        .tile();
      rewriter.replaceOp(op, tiled);
    }
  }
};
} // namespace

llvm::Error mlir::gdn::checkCPUTileProjectionsOptions(
    const GdnCPUTileProjectionsPassOptions &options) {
  if (options.rowDotParallelMin < 0)
    return llvm::createStringError(
        "row-dot-parallel-min must not be negative, but got " +
        llvm::Twine(options.rowDotParallelMin));
  if (options.columnTile < 1)
    return llvm::createStringError("column-tile must be positive, but got " +
                                   llvm::Twine(options.columnTile));
  if (options.rowTile < 1 || options.rowBlock < options.rowTile ||
      options.rowBlock % options.rowTile != 0)
    return llvm::createStringError(
        "row-tile must be positive and row-block a multiple of it, but got "
        "row-block = " +
        llvm::Twine(options.rowBlock) +
        " and row-tile = " + llvm::Twine(options.rowTile));
  return llvm::Error::success();
}
