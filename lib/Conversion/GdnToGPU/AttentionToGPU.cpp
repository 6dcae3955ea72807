//===- AttentionToGPU.cpp - gdn.causal_attention on tensor cores ----------===//
//
// Causal attention as one kernel in the manner of FlashAttention-2: a
// block of four warps per (64 queries, head, sequence), each warp owning 16
// query rows. The block stages its queries once and then, per block of 64
// keys up to its last query's position, the keys and values, rounded to
// bf16 (or split into two bf16 terms) in workgroup memory, head
// dimensions zero-padded to the products' steps. Each warp computes its
// 16 x 64 scores on mma.sync m16n8k16 into registers, masks them
// causally, and updates a running maximum and sum per row (the online
// softmax, in the exp2 domain); the probabilities become the A fragments
// of the product with the values without leaving registers (the m16n8
// accumulator layout of two neighbouring tiles is the m16k16 A layout),
// and the output accumulators are rescaled as the maximum grows. No score
// is written to memory, and nothing is synchronized but the two barriers
// around each key block's staging.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilders.h"

#include "gdn/Conversion/GdnToGPU/GdnToGPU.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Utils/TensorCoreBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// Queries and keys per block, warps per block (16 query rows each), and
/// the row padding of the bf16 tiles in halves (as the chunked scan's: the
/// eight rows an ldmatrix phase reads fall in different banks).
constexpr int64_t kQueryBlock = 64, kKeyBlock = 64, kWarps = 4;
constexpr int64_t kThreads = 32 * kWarps;
constexpr int64_t kHalfPad = 8;
/// Accumulator tiles of the scores per warp (8 keys each).
constexpr int64_t kScoreTiles = kKeyBlock / 8;

int64_t roundUp(int64_t x, int64_t multiple) {
  return (x + multiple - 1) / multiple * multiple;
}

/// The geometry of one kernel.
struct AttentionShape {
  /// Query/key and value elements per head, and their padded widths in
  /// the tiles (the score product's steps of 16, the value product's
  /// tiles of 8).
  int64_t qkDim, valueDim, qkWidth, valueWidth;
  int64_t groupSize;
  bool split;
  /// Rows of q, k and v read 8 elements at a time (two 16-byte loads)
  /// where the head dimension is a multiple of 8 and needs no padding.
  bool vectorRows = false;

  int64_t valueTiles() const { return valueWidth / 8; }
  /// Hi (and lo) bf16 tiles of the queries, the keys and the values.
  int64_t sharedBytes() const {
    int64_t halves = kQueryBlock * (qkWidth + kHalfPad) +
                     kKeyBlock * (qkWidth + kHalfPad) +
                     kKeyBlock * (valueWidth + kHalfPad);
    return (split ? 2 : 1) * halves * 2;
  }
};

/// A bf16 tile [rows, width + pad] and, with split operands, the tile of
/// the remainders.
struct SplitTile {
  Value hi, lo;
};

/// Builds the kernel's body inside the launch.
class AttentionKernel {
public:
  AttentionKernel(OpBuilder &b, Location loc, const AttentionShape &shape)
      : b(b), loc(loc), s(shape), f32(b.getF32Type()), bf16(b.getBF16Type()) {}

  void build(gpu::LaunchOp launch, Value q, Value k, Value v, Value o,
             float scale);

private:
  Value c(int64_t value) { return indexConstant(b, loc, value); }
  Value f(float value) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value lessThan(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  /// The maximum (or sum) of `x` over the four lanes of a quad, which hold
  /// one accumulator row between them.
  Value quadReduce(Value x, bool maximum) {
    for (int64_t offset : {1, 2}) {
      Value other =
          gpu::ShuffleOp::create(b, loc, x, offset, 32, gpu::ShuffleMode::XOR)
              .getShuffleResult();
      x = maximum ? arith::MaximumFOp::create(b, loc, x, other).getResult()
                  : arith::AddFOp::create(b, loc, x, other).getResult();
    }
    return x;
  }

  SplitTile carve(int64_t rows, int64_t width, int64_t &offset);
  /// Rows `first`.. of head `head` of `source` ([B, N, heads, dim], f32,
  /// N = `limit`) into `tile`, `width` columns: rows past `limit` and
  /// columns past `dim` are zero. All loads of a thread are issued before
  /// its stores.
  void stage(const SplitTile &tile, Value source, Value head, Value first,
             Value limit, int64_t dim, int64_t width);
  /// The A fragment of rows `row0`..+15 at depth step `step` of a tile.
  SmallVector<Value> fragmentA(Value tile, Value row0, int64_t step) {
    return loadMatrixFragments(
        b, loc, tile,
        ValueRange{add(row0, add(matrixRow, matrixColumn)),
                   add(c(16 * step), matrixHalf)},
        4, /*transpose=*/false);
  }
  /// The B fragment of columns `n0`..+7 at depth step `step`, from a tile
  /// stored [column, depth] (the keys) or [depth, column] (the values).
  SmallVector<Value> fragmentB(Value tile, int64_t n0, int64_t step,
                               bool depthMajor) {
    if (depthMajor)
      return loadMatrixFragments(
          b, loc, tile,
          ValueRange{add(c(16 * step), add(matrixRow, matrixColumn)), c(n0)}, 2,
          /*transpose=*/true);
    return loadMatrixFragments(
        b, loc, tile,
        ValueRange{add(c(n0), matrixRow), add(c(16 * step), matrixColumn)}, 2,
        /*transpose=*/false);
  }
  /// acc += A B on tensor cores; with split operands the three products
  /// hi hi, lo hi and hi lo.
  void multiply(ArrayRef<Value> aHi, ArrayRef<Value> aLo,
                function_ref<SmallVector<Value>(Value)> loadB,
                const SplitTile &bTile, MutableArrayRef<Value> acc) {
    SmallVector<Value> bHi = loadB(bTile.hi);
    multiplyAccumulateBf16(b, loc, aHi, bHi, acc);
    if (!s.split)
      return;
    multiplyAccumulateBf16(b, loc, aLo, bHi, acc);
    multiplyAccumulateBf16(b, loc, aHi, loadB(bTile.lo), acc);
  }
  /// Two f32 values as one register of two bf16 (the first in the low
  /// half), and the register of their remainders.
  std::pair<Value, Value> pack(Value first, Value second);

  OpBuilder &b;
  Location loc;
  AttentionShape s;
  Type f32, bf16;
  Value tid, warp, group, quad, sharedBase;
  Value matrixRow, matrixColumn, matrixHalf;
  Value batch;
};

SplitTile AttentionKernel::carve(int64_t rows, int64_t width, int64_t &offset) {
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto type = MemRefType::get({rows, width + kHalfPad}, bf16,
                              MemRefLayoutAttrInterface(), workgroup);
  auto view = [&] {
    Value tile = memref::ViewOp::create(b, loc, type, sharedBase, c(offset),
                                        ValueRange{});
    offset += type.getNumElements() * 2;
    return tile;
  };
  SplitTile tile;
  tile.hi = view();
  if (s.split)
    tile.lo = view();
  return tile;
}

void AttentionKernel::stage(const SplitTile &tile, Value source, Value head,
                            Value first, Value limit, int64_t dim,
                            int64_t width) {
  // Vectors of 8 elements (16 bytes of bf16, one store each); consecutive
  // threads take consecutive vectors of a row, so a warp reads whole rows.
  static_assert(kKeyBlock == kQueryBlock, "one staging shape for both");
  int64_t perRow = width / 8, vectors = kKeyBlock * perRow;
  // Where the thread count does not divide the vectors, the last round's
  // spare threads store nothing.
  bool ragged = vectors % kThreads != 0;
  Value lastRow = arith::SubIOp::create(b, loc, limit, c(1));
  auto vectorType = VectorType::get({8}, f32);
  struct Staged {
    Value row, col, values, real;
  };
  SmallVector<Staged> staged;
  for (int64_t i = 0; i * kThreads < vectors; ++i) {
    Value index = add(tid, c(i * kThreads));
    Value row = arith::DivUIOp::create(b, loc, index, c(perRow));
    Value col =
        mul(arith::RemUIOp::create(b, loc, index, c(perRow)), c(int64_t(8)));
    Value token = add(first, row);
    Value inside = lessThan(token, limit);
    Value real = ragged ? lessThan(index, c(vectors)) : Value();
    Value safeToken = arith::MinUIOp::create(b, loc, token, lastRow);
    if (s.vectorRows && dim % 8 == 0 && width == dim) {
      // Rows of a multiple of 8 f32 in a dense [B, T, H, D] buffer start
      // at multiples of 32 bytes from its (16-byte aligned) base: two
      // aligned 16-byte loads instead of eight.
      auto quad = VectorType::get({4}, f32);
      auto loadQuad = [&](Value column) {
        return vector::LoadOp::create(
            b, loc, quad, source, ValueRange{batch, safeToken, head, column},
            false, llvm::Align(16));
      };
      Value both = vector::ShuffleOp::create(
          b, loc, loadQuad(col), loadQuad(add(col, c(4))),
          ArrayRef<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
      Value zeros = arith::ConstantOp::create(
          b, loc, vectorType, DenseElementsAttr::get(vectorType, 0.0f));
      staged.push_back(
          {row, col, arith::SelectOp::create(b, loc, inside, both, zeros),
           real});
      continue;
    }
    SmallVector<Value> elements;
    for (int64_t e = 0; e < 8; ++e) {
      Value column = add(col, c(e));
      Value valid = inside;
      Value safeColumn = column;
      if (dim % 8 != 0 || width != roundUp(dim, 8)) {
        valid = arith::AndIOp::create(b, loc, valid, lessThan(column, c(dim)));
        safeColumn = arith::MinUIOp::create(b, loc, column, c(dim - 1));
      }
      Value x = memref::LoadOp::create(
          b, loc, source, ValueRange{batch, safeToken, head, safeColumn});
      elements.push_back(arith::SelectOp::create(b, loc, valid, x, f(0.0f)));
    }
    staged.push_back(
        {row, col, vector::FromElementsOp::create(b, loc, vectorType, elements),
         real});
  }
  auto halfVector = VectorType::get({8}, bf16);
  for (const Staged &item : staged) {
    OpBuilder::InsertionGuard guard(b);
    if (item.real) {
      auto store =
          scf::IfOp::create(b, loc, item.real, /*withElseRegion=*/false);
      b.setInsertionPointToStart(store.thenBlock());
    }
    Value hi = arith::TruncFOp::create(b, loc, halfVector, item.values);
    vector::StoreOp::create(b, loc, hi, tile.hi, ValueRange{item.row, item.col},
                            false, llvm::Align(16));
    if (!s.split)
      continue;
    Value rest = arith::SubFOp::create(
        b, loc, item.values, arith::ExtFOp::create(b, loc, vectorType, hi));
    vector::StoreOp::create(
        b, loc, arith::TruncFOp::create(b, loc, halfVector, rest), tile.lo,
        ValueRange{item.row, item.col}, false, llvm::Align(16));
  }
}

std::pair<Value, Value> AttentionKernel::pack(Value first, Value second) {
  auto pairType = VectorType::get({2}, f32);
  auto halfPair = VectorType::get({2}, bf16);
  auto word = VectorType::get({1}, b.getI32Type());
  Value pair = vector::FromElementsOp::create(b, loc, pairType,
                                              ValueRange{first, second});
  Value hi = arith::TruncFOp::create(b, loc, halfPair, pair);
  auto asRegister = [&](Value halves) {
    return vector::ExtractOp::create(
               b, loc, vector::BitCastOp::create(b, loc, word, halves), 0)
        .getResult();
  };
  if (!s.split)
    return {asRegister(hi), Value()};
  Value rest = arith::SubFOp::create(
      b, loc, pair, arith::ExtFOp::create(b, loc, pairType, hi));
  return {asRegister(hi),
          asRegister(arith::TruncFOp::create(b, loc, halfPair, rest))};
}

void AttentionKernel::build(gpu::LaunchOp launch, Value q, Value k, Value v,
                            Value o, float scale) {
  tid = launch.getThreadIds().x;
  MmaLane lane = mmaLaneOf(b, loc, tid);
  warp = lane.warp;
  group = lane.group;
  quad = lane.quad;
  matrixRow = lane.matrixRow;
  matrixColumn = lane.matrixColumn;
  matrixHalf = lane.matrixHalf;
  sharedBase = dynamicWorkgroupMemory(b, loc);
  int64_t offset = 0;
  SplitTile qTile = carve(kQueryBlock, s.qkWidth, offset);
  SplitTile kTile = carve(kKeyBlock, s.qkWidth, offset);
  SplitTile vTile = carve(kKeyBlock, s.valueWidth, offset);

  Value queryBlock = launch.getBlockIds().x;
  Value head = launch.getBlockIds().y;
  batch = launch.getBlockIds().z;
  Value keyHead = arith::DivUIOp::create(b, loc, head, c(s.groupSize));
  Value tokens = memref::DimOp::create(b, loc, q, 1);
  Value keys = memref::DimOp::create(b, loc, k, 1);
  // Query t sits at position keys - tokens + t.
  Value offsetOfQueries = arith::SubIOp::create(b, loc, keys, tokens);
  Value firstQuery = mul(queryBlock, c(kQueryBlock));
  stage(qTile, q, head, firstQuery, tokens, s.qkDim, s.qkWidth);

  // This lane's two accumulator rows (g and g + 8 of the warp's 16) and
  // their positions.
  Value warpRow = mul(warp, c(16));
  Value row0 = add(warpRow, group);
  Value position0 = add(offsetOfQueries, add(firstQuery, row0));
  Value position1 = add(position0, c(8));
  // Keys up to the block's last query; at least the first key block.
  Value keyEnd = arith::MinUIOp::create(
      b, loc, keys, add(offsetOfQueries, add(firstQuery, c(kQueryBlock))));

  float log2e = 1.4426950408889634f;
  Value scoreScale = f(scale * log2e);
  Value lowest = f(-std::numeric_limits<float>::infinity());
  // The running maximum starts finite, so that a row whose keys of a block
  // are all masked rescales by 2^0 instead of 2^(-inf + inf).
  SmallVector<Value> initial = {f(-1.0e30f), f(-1.0e30f), f(0.0f), f(0.0f)};
  int64_t outputRegisters = 4 * s.valueTiles();
  initial.append(outputRegisters, f(0.0f));
  auto loop = scf::ForOp::create(b, loc, c(0), keyEnd, c(kKeyBlock), initial);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value firstKey = loop.getInductionVar();
    ValueRange carried = loop.getRegionIterArgs();
    stage(kTile, k, keyHead, firstKey, keys, s.qkDim, s.qkWidth);
    stage(vTile, v, keyHead, firstKey, keys, s.valueDim, s.valueWidth);
    gpu::BarrierOp::create(b, loc);

    // Scores: 16 rows x 64 keys per warp, kScoreTiles tiles of 16 x 8.
    SmallVector<SmallVector<Value>> scores(kScoreTiles,
                                           SmallVector<Value>(4, f(0.0f)));
    for (int64_t step = 0; step < s.qkWidth / 16; ++step) {
      SmallVector<Value> aHi = fragmentA(qTile.hi, warpRow, step);
      SmallVector<Value> aLo;
      if (s.split)
        aLo = fragmentA(qTile.lo, warpRow, step);
      for (int64_t t = 0; t < kScoreTiles; ++t)
        multiply(
            aHi, aLo,
            [&](Value tile) {
              return fragmentB(tile, 8 * t, step, /*depthMajor=*/false);
            },
            kTile, scores[t]);
    }
    // Causal mask and the online softmax, in the exp2 domain. Lane
    // elements 0, 1 are row g, keys 2 quad and 2 quad + 1 of the tile; 2, 3
    // row g + 8.
    Value keyOfLane = add(firstKey, mul(quad, c(2)));
    SmallVector<Value> rowMax = {lowest, lowest};
    for (int64_t t = 0; t < kScoreTiles; ++t) {
      for (int64_t e = 0; e < 4; ++e) {
        Value key = add(keyOfLane, c(8 * t + e % 2));
        Value position = e < 2 ? position0 : position1;
        Value visible = arith::AndIOp::create(
            b, loc, lessThan(key, keys),
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, key,
                                  position));
        Value scaled = arith::MulFOp::create(b, loc, scores[t][e], scoreScale);
        scores[t][e] = arith::SelectOp::create(b, loc, visible, scaled, lowest);
        rowMax[e / 2] =
            arith::MaximumFOp::create(b, loc, rowMax[e / 2], scores[t][e]);
      }
    }
    SmallVector<Value> maximum(2), rescale(2), sums(2);
    for (int64_t r = 0; r < 2; ++r) {
      maximum[r] = arith::MaximumFOp::create(b, loc, carried[r],
                                             quadReduce(rowMax[r], true));
      rescale[r] = exponent2(
          b, loc, arith::SubFOp::create(b, loc, carried[r], maximum[r]));
      sums[r] = arith::MulFOp::create(b, loc, carried[2 + r], rescale[r]);
    }
    for (int64_t t = 0; t < kScoreTiles; ++t) {
      for (int64_t e = 0; e < 4; ++e) {
        scores[t][e] = exponent2(
            b, loc,
            arith::SubFOp::create(b, loc, scores[t][e], maximum[e / 2]));
        sums[e / 2] = arith::AddFOp::create(b, loc, sums[e / 2], scores[t][e]);
      }
    }
    SmallVector<SmallVector<Value>> output(s.valueTiles());
    for (int64_t t = 0; t < s.valueTiles(); ++t)
      for (int64_t e = 0; e < 4; ++e)
        output[t].push_back(arith::MulFOp::create(
            b, loc, carried[4 + 4 * t + e], rescale[e / 2]));
    // output += P V, 16 keys per step: the accumulators of score tiles 2j
    // and 2j + 1 are the four A registers (rows g, g + 8; keys +0, +8).
    for (int64_t step = 0; step < kKeyBlock / 16; ++step) {
      const SmallVector<Value> &left = scores[2 * step];
      const SmallVector<Value> &right = scores[2 * step + 1];
      SmallVector<Value> aHi, aLo;
      for (auto [first, second] :
           {std::pair(left[0], left[1]), std::pair(left[2], left[3]),
            std::pair(right[0], right[1]), std::pair(right[2], right[3])}) {
        auto [hi, lo] = pack(first, second);
        aHi.push_back(hi);
        aLo.push_back(lo);
      }
      for (int64_t t = 0; t < s.valueTiles(); ++t)
        multiply(
            aHi, aLo,
            [&](Value tile) {
              return fragmentB(tile, 8 * t, step, /*depthMajor=*/true);
            },
            vTile, output[t]);
    }
    // The next block's staging overwrites the keys and values.
    gpu::BarrierOp::create(b, loc);
    SmallVector<Value> next = {maximum[0], maximum[1], sums[0], sums[1]};
    for (const SmallVector<Value> &tile : output)
      next.append(tile.begin(), tile.end());
    scf::YieldOp::create(b, loc, next);
  }

  // o = output / sum, the rows inside the sequence and the columns inside
  // the head.
  ValueRange results = loop.getResults();
  SmallVector<Value> inverse(2);
  for (int64_t r = 0; r < 2; ++r)
    inverse[r] = arith::DivFOp::create(b, loc, f(1.0f),
                                       quadReduce(results[2 + r], false));
  Value columnOfLane = mul(quad, c(2));
  for (int64_t r = 0; r < 2; ++r) {
    Value token = add(firstQuery, add(row0, c(8 * r)));
    auto inside = scf::IfOp::create(b, loc, lessThan(token, tokens),
                                    /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inside.thenBlock());
    for (int64_t t = 0; t < s.valueTiles(); ++t) {
      for (int64_t e = 0; e < 2; ++e) {
        int64_t column = 8 * t + e;
        Value value = arith::MulFOp::create(
            b, loc, results[4 + 4 * t + 2 * r + e], inverse[r]);
        Value at = add(columnOfLane, c(column));
        auto store = [&](OpBuilder &sb, Location sl) {
          memref::StoreOp::create(sb, sl, value, o,
                                  ValueRange{batch, token, head, at});
        };
        // Columns past the head's values are padding.
        if (s.valueDim % 8 == 0) {
          store(b, loc);
          continue;
        }
        auto real = scf::IfOp::create(b, loc, lessThan(at, c(s.valueDim)),
                                      /*withElseRegion=*/false);
        OpBuilder::InsertionGuard columnGuard(b);
        b.setInsertionPointToStart(real.thenBlock());
        store(b, loc);
      }
    }
  }
  gpu::TerminatorOp::create(b, loc);
}

struct CausalAttentionToGPU : OpRewritePattern<CausalAttentionOp> {
  CausalAttentionToGPU(MLIRContext *context, bool split, bool vectorRows)
      : OpRewritePattern<CausalAttentionOp>(context), split(split),
        vectorRows(vectorRows) {}
  bool split, vectorRows;

  LogicalResult matchAndRewrite(CausalAttentionOp op,
                                PatternRewriter &rewriter) const override {
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    auto kType = cast<RankedTensorType>(op.getK().getType());
    auto vType = cast<RankedTensorType>(op.getV().getType());
    auto oType = cast<RankedTensorType>(op.getO().getType());
    AttentionShape shape;
    shape.qkDim = qType.getDimSize(3);
    shape.valueDim = vType.getDimSize(3);
    if (!CausalAttentionOp::fitsTensorCoreKernel(shape.qkDim, shape.valueDim))
      return rewriter.notifyMatchFailure(op, "heads too wide for the kernel");
    shape.qkWidth = roundUp(shape.qkDim, 16);
    shape.valueWidth = roundUp(shape.valueDim, 8);
    shape.groupSize = qType.getDimSize(2) / kType.getDimSize(2);
    shape.split = split;
    shape.vectorRows = vectorRows;

    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value q = toBuffer(b, loc, op.getQ()), k = toBuffer(b, loc, op.getK());
    Value v = toBuffer(b, loc, op.getV());
    Value batch = memref::DimOp::create(b, loc, q, 0);
    Value tokens = memref::DimOp::create(b, loc, q, 1);
    SmallVector<Value> sizes;
    if (oType.isDynamicDim(0))
      sizes.push_back(batch);
    if (oType.isDynamicDim(1))
      sizes.push_back(tokens);
    Value o = memref::AllocOp::create(
        b, loc, MemRefType::get(oType.getShape(), oType.getElementType()),
        sizes);
    // No blocks for no queries: the runtime skips an empty grid.
    Value queryBlocks = arith::CeilDivUIOp::create(
        b, loc, tokens, indexConstant(b, loc, kQueryBlock));
    Value one = indexConstant(b, loc, 1);
    Value sharedBytes = arith::ConstantOp::create(
        b, loc, b.getI32IntegerAttr(shape.sharedBytes()));
    auto launch = gpu::LaunchOp::create(
        b, loc, queryBlocks, indexConstant(b, loc, qType.getDimSize(2)), batch,
        indexConstant(b, loc, kThreads), one, one, sharedBytes);
    launch->setAttr(
        "gdn.tensor_core_attention",
        b.getDictionaryAttr({
            b.getNamedAttr("query_block", b.getI64IntegerAttr(kQueryBlock)),
            b.getNamedAttr("key_block", b.getI64IntegerAttr(kKeyBlock)),
            b.getNamedAttr("warps", b.getI64IntegerAttr(kWarps)),
            b.getNamedAttr("mma", b.getStringAttr("m16n8k16.bf16")),
            b.getNamedAttr("split", b.getBoolAttr(split)),
            b.getNamedAttr("vector_rows", b.getBoolAttr(vectorRows)),
        }));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&launch.getBody().front());
      AttentionKernel(b, loc, shape)
          .build(launch, q, k, v, o, op.getScale().convertToFloat());
    }
    UnitAttr unit = b.getUnitAttr();
    rewriter.replaceOp(
        op, bufferization::ToTensorOp::create(b, loc, oType, o, unit, unit)
                .getResult());
    return success();
  }
};
} // namespace

void mlir::gdn::populateGdnToGPUAttentionPatterns(RewritePatternSet &patterns,
                                                  bool splitOperands,
                                                  bool vectorRows) {
  patterns.add<CausalAttentionToGPU>(patterns.getContext(), splitOperands,
                                     vectorRows);
}
