//===- KeyPartSums.cpp - attended latents in parts of the keys ------------===//

#include "KeyPartSums.h"
#include "CacheContractions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// Parts of the keys, one task each: enough for the threads of a small
/// machine to read the cache side by side, few enough that adding the
/// parts' sums costs nothing next to the pass over the cache.
constexpr int64_t kKeyParts = 4;
} // namespace

bool mlir::gdn::isKeyPartSums(linalg::GenericOp op, int64_t maxLanes) {
  if (!isCacheContraction(op, /*reduction=*/3, {0, 2, 1, 3}, {0, 3, 4},
                          {0, 1, 2, 4}))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t heads = ranges[2], width = ranges[4];
  return !ShapedType::isDynamic(heads) && !ShapedType::isDynamic(width) &&
         width % 16 == 0 && heads * width <= maxLanes &&
         ShapedType::isDynamic(ranges[3]);
}

LogicalResult mlir::gdn::lowerSumsInKeyParts(RewriterBase &rewriter,
                                             linalg::GenericOp op) {
  Location loc = op.getLoc();
  Value weights = op.getDpsInputs()[0], rows = op.getDpsInputs()[1];
  Value out = op.getDpsInits()[0];
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t heads = ranges[2], width = ranges[4];
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  auto index = [&](OpBuilder &b, int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  Value batch = memref::DimOp::create(rewriter, loc, out, 0);
  Value tokens = memref::DimOp::create(rewriter, loc, out, 1);
  Value keys = memref::DimOp::create(rewriter, loc, rows, 1);
  Value perPart = arith::CeilDivUIOp::create(rewriter, loc, keys,
                                             index(rewriter, kKeyParts));
  Type f32 = rewriter.getF32Type();
  auto lanes = VectorType::get({width}, f32);
  SmallVector<bool> inBounds(1, true);
  auto partialType = MemRefType::get(
      {kKeyParts, ShapedType::kDynamic, ShapedType::kDynamic, heads, width},
      f32);
  Value partial = memref::AllocOp::create(rewriter, loc, partialType,
                                          ValueRange{batch, tokens});

  scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{index(rewriter, kKeyParts), batch,
                                            tokens},
      ValueRange{}, std::nullopt, [&](OpBuilder &b, Location, ValueRange ivs) {
        Value part = ivs[0], seq = ivs[1], token = ivs[2];
        Value first = arith::MinUIOp::create(
            b, loc, arith::MulIOp::create(b, loc, part, perPart), keys);
        Value last = arith::MinUIOp::create(
            b, loc, arith::AddIOp::create(b, loc, first, perPart), keys);
        Value zeros = arith::ConstantOp::create(
            b, loc, lanes, DenseElementsAttr::get(lanes, 0.0f));
        SmallVector<Value> initial(heads, zeros);
        auto overKeys = scf::ForOp::create(
            b, loc, first, last, index(b, 1), initial,
            [&](OpBuilder &kb, Location, Value key, ValueRange sums) {
              Value row = vector::TransferReadOp::create(
                  kb, loc, lanes, rows, ValueRange{seq, key, index(kb, 0)},
                  /*padding=*/std::nullopt, inBounds);
              SmallVector<Value> next;
              for (int64_t head = 0; head < heads; ++head) {
                Value weight = memref::LoadOp::create(
                    kb, loc, weights,
                    ValueRange{seq, index(kb, head), token, key});
                Value broadcast =
                    vector::BroadcastOp::create(kb, loc, lanes, weight);
                next.push_back(vector::FMAOp::create(kb, loc, broadcast, row,
                                                     sums[head]));
              }
              scf::YieldOp::create(kb, loc, next);
            });
        for (int64_t head = 0; head < heads; ++head)
          vector::TransferWriteOp::create(
              b, loc, overKeys.getResult(head), partial,
              ValueRange{part, seq, token, index(b, head), index(b, 0)},
              inBounds);
        scf::InParallelOp::create(b, loc);
      });

  // The parts' sums into the output, which holds what came before.
  auto overSequences = scf::ForOp::create(rewriter, loc, index(rewriter, 0),
                                          batch, index(rewriter, 1));
  {
    OpBuilder::InsertionGuard inner(rewriter);
    rewriter.setInsertionPointToStart(overSequences.getBody());
    Value seq = overSequences.getInductionVar();
    auto overTokens = scf::ForOp::create(rewriter, loc, index(rewriter, 0),
                                         tokens, index(rewriter, 1));
    rewriter.setInsertionPointToStart(overTokens.getBody());
    Value token = overTokens.getInductionVar();
    for (int64_t head = 0; head < heads; ++head) {
      SmallVector<Value> at = {seq, token, index(rewriter, head),
                               index(rewriter, 0)};
      Value sum = vector::TransferReadOp::create(
          rewriter, loc, lanes, out, at, /*padding=*/std::nullopt, inBounds);
      for (int64_t p = 0; p < kKeyParts; ++p) {
        Value piece = vector::TransferReadOp::create(
            rewriter, loc, lanes, partial,
            ValueRange{index(rewriter, p), seq, token, index(rewriter, head),
                       index(rewriter, 0)},
            /*padding=*/std::nullopt, inBounds);
        sum = arith::AddFOp::create(rewriter, loc, sum, piece);
      }
      vector::TransferWriteOp::create(rewriter, loc, sum, out, at, inBounds);
    }
  }
  memref::DeallocOp::create(rewriter, loc, partial);
  rewriter.eraseOp(op);
  return success();
}
