//===- KeyBlockScores.cpp - attention scores for 16 keys at a time --------===//

#include "KeyBlockScores.h"
#include "CacheContractions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// Keys per block: one zmm register of f32 scores per head.
constexpr int64_t kBlockKeys = 16;
/// The most heads whose scores for a block stay in registers.
constexpr int64_t kMostHeads = 16;
} // namespace

bool mlir::gdn::isKeyBlockScores(linalg::GenericOp op) {
  if (!isCacheContraction(op, /*reduction=*/4, {0, 2, 1, 4}, {0, 3, 4},
                          {0, 1, 2, 3}))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t heads = ranges[1], width = ranges[4];
  return !ShapedType::isDynamic(heads) && heads >= 1 && heads <= kMostHeads &&
         !ShapedType::isDynamic(width) && width % kBlockKeys == 0 &&
         ShapedType::isDynamic(ranges[3]);
}

FailureOr<linalg::GenericOp>
mlir::gdn::lowerScoresInKeyBlocks(RewriterBase &rewriter,
                                  linalg::GenericOp op) {
  if (!isKeyBlockScores(op))
    return failure();
  Location loc = op.getLoc();
  Value queries = op.getDpsInputs()[0], keys = op.getDpsInputs()[1];
  Value scores = op.getDpsInits()[0];
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t heads = ranges[1], width = ranges[4];
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  auto index = [&](OpBuilder &b, int64_t value) -> Value {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  Value batch = memref::DimOp::create(rewriter, loc, scores, 0);
  Value tokens = memref::DimOp::create(rewriter, loc, scores, 2);
  Value keyCount = memref::DimOp::create(rewriter, loc, keys, 1);
  Value blocks = arith::DivUIOp::create(rewriter, loc, keyCount,
                                        index(rewriter, kBlockKeys));
  Value whole = arith::MulIOp::create(rewriter, loc, blocks,
                                      index(rewriter, kBlockKeys));
  Type f32 = rewriter.getF32Type();
  auto lanes = VectorType::get({kBlockKeys}, f32);
  auto tile = VectorType::get({kBlockKeys, kBlockKeys}, f32);
  SmallVector<bool> inBounds1(1, true), inBounds2(2, true);

  // A task per (sequence, token, block of 16 keys).
  scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{batch, tokens, blocks},
      ValueRange{}, std::nullopt,
      [&](OpBuilder &b, Location, ValueRange ivs) {
        Value seq = ivs[0], token = ivs[1];
        Value firstKey =
            arith::MulIOp::create(b, loc, ivs[2], index(b, kBlockKeys));
        SmallVector<Value> initial;
        for (int64_t head = 0; head < heads; ++head)
          initial.push_back(vector::TransferReadOp::create(
              b, loc, lanes, scores,
              ValueRange{seq, index(b, head), token, firstKey},
              /*padding=*/std::nullopt, inBounds1));
        // 16 channels of the latent at a time: the keys' tile transposed
        // in registers, then per channel one FMA per head.
        auto channels = scf::ForOp::create(
            b, loc, index(b, 0), index(b, width), index(b, kBlockKeys),
            initial,
            [&](OpBuilder &cb, Location, Value channel, ValueRange sums) {
              Value keyTile = vector::TransferReadOp::create(
                  cb, loc, tile, keys, ValueRange{seq, firstKey, channel},
                  /*padding=*/std::nullopt, inBounds2);
              Value byChannel = vector::TransposeOp::create(
                  cb, loc, keyTile, ArrayRef<int64_t>{1, 0});
              SmallVector<Value> queryLanes;
              for (int64_t head = 0; head < heads; ++head)
                queryLanes.push_back(vector::TransferReadOp::create(
                    cb, loc, lanes, queries,
                    ValueRange{seq, token, index(cb, head), channel},
                    /*padding=*/std::nullopt, inBounds1));
              SmallVector<Value> next(sums);
              for (int64_t c = 0; c < kBlockKeys; ++c) {
                Value keyLanes = vector::ExtractOp::create(
                    cb, loc, byChannel, ArrayRef<int64_t>{c});
                for (int64_t head = 0; head < heads; ++head) {
                  Value q = vector::ExtractOp::create(
                      cb, loc, queryLanes[head], ArrayRef<int64_t>{c});
                  Value broadcast =
                      vector::BroadcastOp::create(cb, loc, lanes, q);
                  next[head] = vector::FMAOp::create(cb, loc, keyLanes,
                                                     broadcast, next[head]);
                }
              }
              scf::YieldOp::create(cb, loc, next);
            });
        for (int64_t head = 0; head < heads; ++head)
          vector::TransferWriteOp::create(
              b, loc, channels.getResult(head), scores,
              ValueRange{seq, index(b, head), token, firstKey}, inBounds1);
        scf::InParallelOp::create(b, loc);
      });

  // The keys past the last whole block: the same generic on them.
  auto tail = [&](Value source, int64_t keyDim) {
    auto type = cast<MemRefType>(source.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes =
        memref::getMixedSizes(rewriter, loc, source);
    SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
    offsets[keyDim] = whole;
    sizes[keyDim] =
        arith::SubIOp::create(rewriter, loc, keyCount, whole).getResult();
    return memref::SubViewOp::create(rewriter, loc, source, offsets, sizes,
                                     strides)
        .getResult();
  };
  Value keysLeft = tail(keys, 1), scoresLeft = tail(scores, 3);
  auto rest = cast<linalg::GenericOp>(rewriter.clone(*op));
  rest.getDpsInputOperand(1)->set(keysLeft);
  rest.getDpsInitOperand(0)->set(scoresLeft);
  rewriter.eraseOp(op);
  return rest;
}
