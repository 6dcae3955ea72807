//===- TensorCoreProjections.cpp - projections on mma.sync tensor cores ---===//
//
// After bufferization, a projection out[b, t, o] += sum_i x[b, t, i] w[o, i]
// (the layers' linalg.contract, getProjectionIndexingMaps) becomes a
// kernel of bf16 mma.sync m16n8k16 products with f32 accumulators, for the
// rows that fill whole 128-row blocks. The rows left over (all of them in
// a decode step of fewer than 128 sequences) take the same kernel in
// blocks of 64 rows, the last one masked, from small-row-blocks rows on
// and for projections of at least small-row-min-outputs outputs (an LM
// head); otherwise they stay a contract on views of the same buffers,
// which gdn-gpu-map-parallel-loops gives a warp per output: few rows
// against few outputs would leave most multiprocessors idle in one row of
// blocks. MLA's absorbed attention scores (a product per
// sequence and head against keys shared by the heads), its attended
// latents (the softmax's rows against the same latents, of a dynamic
// depth) and its products with a weight per head (the queries into the
// latent space, the values out of it) take the same kernel with the
// sequence and head as the grid's depth; a decode step's attended latents
// in key groups take it with the heads as rows and the sequence and group
// as the depth.
//
// The kernel (gdn.tensor_core_projection on the launch records its tiles):
// blocks of 128 rows x 64 columns, four warps of 64 x 32 (4 x 4 tiles of
// 16 x 8, 64 accumulators per lane), and the reduction in steps of 16. The
// fragments come straight from global memory (L1 and L2 give the reuse
// between warps), or, with tile-stages, from tiles of x and the weight that
// the block stages in workgroup memory by cp.async (see copyTileAsync). The
// sum is the same under any order of its terms, so each lane takes four
// consecutive elements of a row for the two element pairs that the
// m16n8k16 layout gives it (columns 2t, 2t + 1 and 2t + 8, 2t + 9 of the
// step stand for 4t .. 4t + 3 in both operands), and loads them with one
// 16-byte load of x and one 8-byte (bf16) or 16-byte (f32) load of B.
//
// The activations are f32 and the products bf16. With split-activations
// each f32 operand is the sum of two bf16 numbers (hi = bf16(x), lo =
// bf16(x - hi)), and the products hi hi, lo hi and (for an f32 B) hi lo are
// accumulated: 16 significant bits of each operand, so the result matches
// the f32 path to about 1e-5 relative instead of bf16's 4e-3 (bf16 weights
// are exact already), for two or three times the tensor-core work of a
// kernel that is bound by its loads.
//
//===----------------------------------------------------------------------===//

#include "gdn/Codegen/GPU/Passes.h"

#include "Epilogues.h"
#include "gdn/Utils/TensorBuilders.h"
#include "gdn/Utils/TensorCoreBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

#include <functional>

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNGPUTENSORCOREPROJECTIONSPASS
#include "gdn/Codegen/GPU/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// The tiles: a block's rows and columns, a warp's, one mma.sync's.
constexpr int64_t kBlockRows = 128, kBlockCols = 64;
constexpr int64_t kWarpRows = 64, kWarpCols = 32;
constexpr int64_t kTileRows = 16, kTileCols = 8, kStep = 16;
constexpr int64_t kColTiles = kWarpCols / kTileCols; // 4

/// The rows of a block and of each of its warps: 128 of 64 for whole
/// blocks, and for the rows left over (small-row-blocks) fewer, so that
/// a decode batch's rows share each weight fragment they load.
struct RowShape {
  int64_t block, warp;
  int64_t rowTiles() const { return warp / kTileRows; }
  int64_t warps() const { return (block / warp) * (kBlockCols / kWarpCols); }
};
constexpr RowShape kWholeRows{kBlockRows, kWarpRows};

/// The operands of a projection that the kernel takes: x [B, T, I] f32,
/// w [O, I] bf16 or f32 and out [B, T, O] f32, all with identity layouts (dense
/// rows starting at aligned addresses: the vector loads rely on it), and I
/// a multiple of the reduction step. An x of another layout (a view of a
/// cache's rows, whose sequences are the cache's room apart) is first
/// copied into a dense buffer (`copyX`): a pass over B x T x I elements,
/// against the warp per output that the projection would get otherwise.
struct Projection {
  Value x, weight, out;
  int64_t inputs, outputs;
  bool copyX = false;
};

bool isDense(MemRefType type) { return type.getLayout().isIdentity(); }

std::optional<Projection> matchProjection(linalg::ContractOp op,
                                          bool f32Weights) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 ||
      op.getIndexingMaps() != getProjectionIndexingMaps(op.getContext()))
    return std::nullopt;
  Value x = op.getDpsInputs()[0], weight = op.getDpsInputs()[1];
  Value out = op.getDpsInits()[0];
  auto xType = dyn_cast<MemRefType>(x.getType());
  auto weightType = dyn_cast<MemRefType>(weight.getType());
  auto outType = dyn_cast<MemRefType>(out.getType());
  if (!xType || !weightType || !outType || xType.getRank() != 3 ||
      weightType.getRank() != 2 || outType.getRank() != 3 ||
      !isDense(weightType) || !isDense(outType) ||
      !xType.getElementType().isF32() ||
      !(weightType.getElementType().isBF16() ||
        (f32Weights && weightType.getElementType().isF32())) ||
      !outType.getElementType().isF32() || !weightType.hasStaticShape())
    return std::nullopt;
  int64_t outputs = weightType.getDimSize(0), inputs = weightType.getDimSize(1);
  // Fewer outputs than a block's columns (a gate's one per head) would
  // leave one column of blocks, each a chain of dependent steps over the
  // whole reduction: a warp per output is faster there.
  if (outputs < kBlockCols || inputs % kStep != 0 ||
      xType.getDimSize(2) != inputs || outType.getDimSize(2) != outputs)
    return std::nullopt;
  return Projection{x, weight, out, inputs, outputs, !isDense(xType)};
}

/// Makes `p.x` a dense copy of the projection's input, which the op then
/// reads.
void copyInputDense(linalg::ContractOp op, Projection &p) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto type = cast<MemRefType>(p.x.getType());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(memref::DimOp::create(b, loc, p.x, d));
  Value dense = memref::AllocOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()), sizes);
  memref::CopyOp::create(b, loc, p.x, dense);
  op.getDpsInputOperand(0)->set(dense);
  p.x = dense;
}

/// How a kernel reaches its operands, built inside the launch: A [M, K]
/// and B [N, K] in rows of four consecutive elements along K (f32 for A,
/// bf16 or f32 for B), and the f32 output C [M, N] element by element.
struct TileOperands {
  using Load =
      std::function<Value(OpBuilder &, Location, Value row, Value col)>;
  Load loadA, loadB;
  Load loadC;
  std::function<void(OpBuilder &, Location, Value value, Value row, Value col)>
      storeC;
  /// N (columns past it are neither read nor written), and whether it may
  /// end inside a block's columns.
  Value columns;
  bool raggedColumns;
  /// K: a multiple of the reduction step, or dynamic (then `dynamicDepth`,
  /// built inside the launch, and the step that crosses it reads A and B
  /// element by element through `elementA` and `elementB`, zero past K).
  int64_t depth;
  Value dynamicDepth;
  Load elementA, elementB;
  /// Whether B is f32 (split like A) rather than bf16.
  bool floatB;
  /// The rows of A and C, set where blocks may end past them (their A
  /// loads clamped to the last row, their C neither read nor written);
  /// null where every block's rows exist.
  Value rowCount;
  /// Set for dense A [M, K] f32 and B [N, K] bf16 with K a multiple of
  /// kStageDepth, in whole blocks: the blocks then stage their tiles in
  /// workgroup memory by cp.async, `stages` tiles deep
  /// (stagedTileBytes of it), and the fragments come from there.
  Value stagedA, stagedB;
  int64_t stages = 0;
  /// Staged: each thread turns the A elements it copied into their bf16
  /// terms in workgroup memory once per tile, and the warps load those
  /// (instead of each warp converting the f32 fragments it loads).
  bool splitOnce = false;
};

/// The reduction columns of one staged tile (two steps).
constexpr int64_t kStageDepth = 2 * kStep;
/// Bytes of workgroup memory of the staged tiles of one stage: A's f32
/// rows and B's bf16 rows. A block holds `stages` of them, A's first.
constexpr int64_t kStagedABytes = kBlockRows * kStageDepth * 4;
constexpr int64_t kStagedBBytes = kBlockCols * kStageDepth * 2;
/// Bytes of one tile of A's bf16 terms where the block splits A once: hi,
/// then (with split activations) lo.
constexpr int64_t kTermTileBytes = kBlockRows * kStageDepth * 2;
constexpr int64_t stagedTileBytes(int64_t stages, bool splitOnce,
                                  bool split) {
  return stages * (kStagedABytes + kStagedBBytes) +
         (splitOnce ? (split ? 2 : 1) * kTermTileBytes : 0);
}

/// Builds the body of a launch that computes C += A B^T for the rows
/// [0, wholeRows) of A and C (see the file comment for the tiles).
class TileProduct {
public:
  TileProduct(OpBuilder &b, Location loc, const TileOperands &ops,
              bool splitActivations, RowShape shape = kWholeRows)
      : b(b), loc(loc), ops(ops), split(splitActivations), shape(shape) {}

  /// The blocks' rows start at `firstBlockRow` (0 where null; the grid's
  /// rows of blocks follow it); warps whose rows start at `wholeRows` or
  /// later do nothing.
  void build(gpu::LaunchOp launch, Value wholeRows, Value firstBlockRow = {});

private:
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value l, Value r) { return arith::AddIOp::create(b, loc, l, r); }
  Value mul(Value l, Value r) { return arith::MulIOp::create(b, loc, l, r); }
  Value lessThan(Value l, Value r) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, l, r);
  }

  /// Two 32-bit registers of two bf16 each from four consecutive elements.
  static std::pair<Value, Value> registerPair(OpBuilder &nb, Location nl,
                                              Value halves) {
    auto words = vector::BitCastOp::create(
        nb, nl, VectorType::get({2}, nb.getI32Type()), halves);
    return {vector::ExtractOp::create(nb, nl, words, 0),
            vector::ExtractOp::create(nb, nl, words, 1)};
  }

  /// Four f32 as four bf16: hi = bf16(x) and, split, lo = bf16(x - hi)
  /// (null otherwise).
  static std::pair<Value, Value> splitTerms(OpBuilder &nb, Location nl,
                                            Value values, bool split) {
    auto floats = VectorType::get({4}, nb.getF32Type());
    auto halves = VectorType::get({4}, nb.getBF16Type());
    Value hi = arith::TruncFOp::create(nb, nl, halves, values);
    if (!split)
      return {hi, Value()};
    Value rest = arith::SubFOp::create(
        nb, nl, values, arith::ExtFOp::create(nb, nl, floats, hi));
    return {hi, arith::TruncFOp::create(nb, nl, halves, rest)};
  }

  /// Four f32 as bf16 register pairs: splitTerms' hi and lo.
  static std::pair<std::pair<Value, Value>, std::pair<Value, Value>>
  splitPairs(OpBuilder &nb, Location nl, Value values, bool split) {
    auto [hi, lo] = splitTerms(nb, nl, values, split);
    std::pair<Value, Value> low;
    if (lo)
      low = registerPair(nb, nl, lo);
    return {registerPair(nb, nl, hi), low};
  }

  /// Index of accumulator element e of tile (i, j).
  static int64_t slot(int64_t i, int64_t j, int64_t e) {
    return (i * kColTiles + j) * 4 + e;
  }

  /// The reduction step from column `k` (this lane's four elements start
  /// at k + 4 t): loads, conversions and the products. With `limit`, the
  /// elements at columns from `limit` on are read as zeros.
  void step(OpBuilder &nb, Location nl, Value k, MutableArrayRef<Value> acc,
            Value limit = {});

  /// The reduction over K with the fragments loaded from A and B where
  /// they are. Returns the sums.
  SmallVector<Value> directReduction(ValueRange init);

  /// Four elements of this lane's row `localRow` of the staged A (f32)
  /// or, unless `fromA`, B (bf16) tile of `stage`, from `column` on.
  Value loadStaged(OpBuilder &nb, Location nl, bool fromA, Value localRow,
                   Value column);
  /// Calls `body` with each (row, column) of A's staged tile whose four
  /// f32 this thread copies: eight threads per row.
  void forEachOwnARow(OpBuilder &nb, Location nl,
                      function_ref<void(Value row, Value column)> body);
  /// Starts the cp.async copies of the tile of A and B from reduction
  /// column `first` into stage `slot`.
  void copyTileAsync(OpBuilder &nb, Location nl, Value first, Value slot,
                     Value blockFirstRow, Value blockFirstCol);

  /// Split once: this thread's copied A elements of stage `slot` as
  /// their bf16 terms into `aHigh` and `aLow`.
  void splitOwnElements(OpBuilder &nb, Location nl, Value slot);

  /// The reduction over K through workgroup memory (`ops.stagedA`): each
  /// block's next tile of A and B copied by cp.async while the warps
  /// multiply the one before. Returns the sums.
  SmallVector<Value> stagedReduction(Value blockFirstRow, Value blockFirstCol,
                                     ValueRange init);

  /// Four elements of a row from `column` on, those at `limit` and after
  /// zero (never read).
  static Value maskedFour(OpBuilder &nb, Location nl,
                          const TileOperands::Load &element, Type type,
                          Value row, Value column, Value limit);

  OpBuilder &b;
  Location loc;
  const TileOperands &ops;
  bool split;
  RowShape shape;
  /// Per lane: the A and C rows of its tiles' fragment rows g and g + 8
  /// (the A rows clamped below the row count where blocks end past it),
  /// the B rows (clamped below N) of its B fragments, and its first
  /// reduction column 4 t.
  SmallVector<Value> rows, aRows, bRows;
  Value laneColumn;
  /// Staged: the tiles in workgroup memory ([stage, row, column]), the
  /// stage that `step` reads, and this lane's rows in them (its A fragment
  /// rows, then its B fragment rows).
  Value aTiles, bTiles, stage;
  /// Split once: A's bf16 terms of the tile being multiplied.
  Value aHigh, aLow;
  SmallVector<Value> localARows, localBRows;
};

// The staged tiles' rows are 128 bytes (A, 32 f32) and 64 bytes (B, 32
// bf16). A lane reads 16 bytes of A at column 4 t of rows g and g + 8, so
// eight lanes (one phase of the load) read two neighbouring rows at the
// same columns; and 8 bytes of B at column 4 t of row g, so sixteen
// lanes read four neighbouring rows. Stored plainly, those rows' words
// fall in the same banks; the 16-byte units of odd A rows, and of B rows
// 2 and 3 of every four, are stored swapped with the unit 16 elements
// away (column XOR 16), which puts every phase's reads in distinct banks
// while the cp.async writes, 16 contiguous bytes each, stay whole.
static Value swizzled(OpBuilder &nb, Location nl, Value localRow, Value column,
                      int64_t rowBit, int64_t shift) {
  Value bit = arith::AndIOp::create(
      nb, nl, localRow, arith::ConstantIndexOp::create(nb, nl, rowBit));
  Value flip = arith::ShLIOp::create(
      nb, nl, bit, arith::ConstantIndexOp::create(nb, nl, shift));
  return arith::XOrIOp::create(nb, nl, column, flip);
}
static Value swizzledA(OpBuilder &nb, Location nl, Value row, Value column) {
  return swizzled(nb, nl, row, column, /*rowBit=*/1, /*shift=*/4);
}
static Value swizzledB(OpBuilder &nb, Location nl, Value row, Value column) {
  return swizzled(nb, nl, row, column, /*rowBit=*/2, /*shift=*/3);
}

/// Four elements of a workgroup-memory tile at `indices`, aligned to
/// their size (the tiles' rows and units keep them so).
static Value loadFourAt(OpBuilder &nb, Location nl, Value tile,
                        ValueRange indices) {
  Type element = cast<MemRefType>(tile.getType()).getElementType();
  return vector::LoadOp::create(
      nb, nl, VectorType::get({4}, element), tile, indices, false,
      llvm::Align(4 * element.getIntOrFloatBitWidth() / 8));
}

Value TileProduct::maskedFour(OpBuilder &nb, Location nl,
                              const TileOperands::Load &element, Type type,
                              Value row, Value column, Value limit) {
  Value one = arith::ConstantIndexOp::create(nb, nl, 1);
  Value last = arith::SubIOp::create(nb, nl, limit, one);
  Value zero = arith::ConstantOp::create(nb, nl, nb.getZeroAttr(type));
  SmallVector<Value> values;
  for (int64_t e = 0; e < 4; ++e) {
    Value at = arith::AddIOp::create(nb, nl, column,
                                     arith::ConstantIndexOp::create(nb, nl, e));
    Value inside =
        arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, at, limit);
    // Clamped, so that the load stays inside the operand.
    Value value =
        element(nb, nl, row, arith::MinUIOp::create(nb, nl, at, last));
    values.push_back(arith::SelectOp::create(nb, nl, inside, value, zero));
  }
  return vector::FromElementsOp::create(nb, nl, VectorType::get({4}, type),
                                        values);
}

void TileProduct::step(OpBuilder &nb, Location nl, Value k,
                       MutableArrayRef<Value> acc, Value limit) {
  Value column = arith::AddIOp::create(nb, nl, k, laneColumn);
  Type f32 = nb.getF32Type();
  Type bType = ops.floatB ? f32 : nb.getBF16Type();
  auto loadA = [&](int64_t index) {
    Value row = aRows[index];
    if (aTiles)
      return loadStaged(nb, nl, /*fromA=*/true, localARows[index], column);
    return limit ? maskedFour(nb, nl, ops.elementA, f32, row, column, limit)
                 : ops.loadA(nb, nl, row, column);
  };
  auto loadB = [&](int64_t index) {
    Value row = bRows[index];
    if (bTiles)
      return loadStaged(nb, nl, /*fromA=*/false, localBRows[index], column);
    return limit ? maskedFour(nb, nl, ops.elementB, bType, row, column, limit)
                 : ops.loadB(nb, nl, row, column);
  };
  // A fragments: registers a0 (row g) and a1 (row g + 8) hold the first
  // pair, a2 and a3 the second; once for hi and, split, once for lo.
  int64_t rowTiles = shape.rowTiles();
  SmallVector<SmallVector<Value>> high(rowTiles), low(rowTiles);
  for (int64_t i = 0; i < rowTiles; ++i) {
    SmallVector<Value> hiWords(4), loWords(4);
    for (int64_t half = 0; half < 2; ++half) {
      std::pair<std::pair<Value, Value>, std::pair<Value, Value>> terms;
      if (aHigh) {
        Value row = localARows[2 * i + half];
        auto termsAt = [&](Value tile) {
          return registerPair(
              nb, nl,
              loadFourAt(nb, nl, tile,
                         ValueRange{row, swizzledB(nb, nl, row, column)}));
        };
        terms.first = termsAt(aHigh);
        if (split)
          terms.second = termsAt(aLow);
      } else {
        terms = splitPairs(nb, nl, loadA(2 * i + half), split);
      }
      auto [hi, lo] = terms;
      hiWords[half] = hi.first;
      hiWords[2 + half] = hi.second;
      loWords[half] = lo.first;
      loWords[2 + half] = lo.second;
    }
    high[i] = hiWords;
    low[i] = loWords;
  }
  for (int64_t j = 0; j < kColTiles; ++j) {
    Value values = loadB(j);
    SmallVector<Value> fragment, fragmentLow;
    if (ops.floatB) {
      auto [hi, lo] = splitPairs(nb, nl, values, split);
      fragment = {hi.first, hi.second};
      if (split)
        fragmentLow = {lo.first, lo.second};
    } else {
      auto [b0, b1] = registerPair(nb, nl, values);
      fragment = {b0, b1};
    }
    for (int64_t i = 0; i < rowTiles; ++i) {
      MutableArrayRef<Value> tile = acc.slice(slot(i, j, 0), 4);
      // The small terms first.
      if (split)
        multiplyAccumulateBf16(nb, nl, low[i], fragment, tile);
      if (!fragmentLow.empty())
        multiplyAccumulateBf16(nb, nl, high[i], fragmentLow, tile);
      multiplyAccumulateBf16(nb, nl, high[i], fragment, tile);
    }
  }
}

Value TileProduct::loadStaged(OpBuilder &nb, Location nl, bool fromA,
                              Value localRow, Value column) {
  Value at = fromA ? swizzledA(nb, nl, localRow, column)
                   : swizzledB(nb, nl, localRow, column);
  return loadFourAt(nb, nl, fromA ? aTiles : bTiles,
                    ValueRange{stage, localRow, at});
}

void TileProduct::forEachOwnARow(
    OpBuilder &nb, Location nl,
    function_ref<void(Value row, Value column)> body) {
  auto k = [&](int64_t v) { return arith::ConstantIndexOp::create(nb, nl, v); };
  constexpr int64_t units = kStageDepth / 4;
  int64_t threads = shape.warps() * 32;
  Value tid = gpu::ThreadIdOp::create(nb, nl, gpu::Dimension::x);
  Value firstRow = arith::DivUIOp::create(nb, nl, tid, k(units));
  Value column = arith::MulIOp::create(
      nb, nl, arith::RemUIOp::create(nb, nl, tid, k(units)), k(4));
  for (int64_t r = 0; r < shape.block; r += threads / units)
    body(arith::AddIOp::create(nb, nl, firstRow, k(r)), column);
}

void TileProduct::copyTileAsync(OpBuilder &nb, Location nl, Value first,
                                Value slot, Value blockFirstRow,
                                Value blockFirstCol) {
  auto k = [&](int64_t v) { return arith::ConstantIndexOp::create(nb, nl, v); };
  auto plus = [&](Value l, Value r) {
    return arith::AddIOp::create(nb, nl, l, r).getResult();
  };
  auto times = [&](Value l, int64_t r) {
    return arith::MulIOp::create(nb, nl, l, k(r)).getResult();
  };
  Type token = nvgpu::DeviceAsyncTokenType::get(nb.getContext());
  forEachOwnARow(nb, nl, [&](Value row, Value column) {
    nvgpu::DeviceAsyncCopyOp::create(
        nb, nl, token, aTiles,
        ValueRange{slot, row, swizzledA(nb, nl, row, column)}, ops.stagedA,
        ValueRange{plus(blockFirstRow, row), plus(first, column)},
        nb.getIndexAttr(4), Value(), nb.getUnitAttr());
  });
  // B: four threads per row, eight bf16 each; rows past N read the last
  // one (their columns of C are not stored).
  int64_t threads = shape.warps() * 32;
  Value tid = gpu::ThreadIdOp::create(nb, nl, gpu::Dimension::x);
  constexpr int64_t bUnits = kStageDepth / 8;
  Value lastColumn = arith::SubIOp::create(nb, nl, ops.columns, k(1));
  Value bRow = arith::DivUIOp::create(nb, nl, tid, k(bUnits));
  Value bColumn = times(arith::RemUIOp::create(nb, nl, tid, k(bUnits)), 8);
  for (int64_t r = 0; r < kBlockCols; r += threads / bUnits) {
    Value row = plus(bRow, k(r));
    Value source =
        arith::MinUIOp::create(nb, nl, plus(blockFirstCol, row), lastColumn);
    nvgpu::DeviceAsyncCopyOp::create(
        nb, nl, token, bTiles,
        ValueRange{slot, row, swizzledB(nb, nl, row, bColumn)}, ops.stagedB,
        ValueRange{source, plus(first, bColumn)}, nb.getIndexAttr(8), Value(),
        nb.getUnitAttr());
  }
}

void TileProduct::splitOwnElements(OpBuilder &nb, Location nl, Value slot) {
  // The elements this thread copied: visible to it once its copies are
  // waited for, before any barrier.
  forEachOwnARow(nb, nl, [&](Value row, Value column) {
    Value values = loadFourAt(
        nb, nl, aTiles, ValueRange{slot, row, swizzledA(nb, nl, row, column)});
    auto [hi, lo] = splitTerms(nb, nl, values, split);
    // Stored as the warps' loads read them (the weight tiles' layout).
    Value at = swizzledB(nb, nl, row, column);
    vector::StoreOp::create(nb, nl, hi, aHigh, ValueRange{row, at}, false,
                            llvm::Align(8));
    if (lo)
      vector::StoreOp::create(nb, nl, lo, aLow, ValueRange{row, at}, false,
                              llvm::Align(8));
  });
}

SmallVector<Value> TileProduct::stagedReduction(Value blockFirstRow,
                                                Value blockFirstCol,
                                                ValueRange init) {
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  Value memory = dynamicWorkgroupMemory(b, loc);
  auto tileType = [&](int64_t rows, Type element) {
    return MemRefType::get({ops.stages, rows, kStageDepth}, element,
                           MemRefLayoutAttrInterface(), workgroup);
  };
  aTiles = memref::ViewOp::create(b, loc, tileType(shape.block, b.getF32Type()),
                                  memory, c(0), ValueRange{});
  bTiles = memref::ViewOp::create(b, loc, tileType(kBlockCols, b.getBF16Type()),
                                  memory, c(ops.stages * kStagedABytes),
                                  ValueRange{});
  if (ops.splitOnce) {
    auto termsType = MemRefType::get({shape.block, kStageDepth},
                                     b.getBF16Type(),
                                     MemRefLayoutAttrInterface(), workgroup);
    int64_t first = ops.stages * (kStagedABytes + kStagedBBytes);
    aHigh = memref::ViewOp::create(b, loc, termsType, memory, c(first),
                                   ValueRange{});
    if (split)
      aLow = memref::ViewOp::create(b, loc, termsType, memory,
                                    c(first + kTermTileBytes), ValueRange{});
  }
  Type token = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  int64_t tiles = ops.depth / kStageDepth;
  // The first stages - 1 tiles in flight, a group each (an empty group
  // past the last tile, so that every wait counts the same groups).
  for (int64_t t = 0; t + 1 < ops.stages; ++t) {
    if (t < tiles)
      copyTileAsync(b, loc, c(t * kStageDepth), c(t), blockFirstRow,
                    blockFirstCol);
    nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, token, ValueRange{});
  }
  auto loop = scf::ForOp::create(
      b, loc, c(0), c(tiles), c(1), init,
      [&](OpBuilder &nb, Location nl, Value tile, ValueRange carried) {
        auto k = [&](int64_t v) {
          return arith::ConstantIndexOp::create(nb, nl, v);
        };
        Value slot = arith::RemUIOp::create(nb, nl, tile, k(ops.stages));
        // The tile stages - 1 ahead goes into the slot read last.
        Value next = arith::AddIOp::create(nb, nl, tile, k(ops.stages - 1));
        scf::IfOp::create(
            nb, nl,
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, next,
                                  k(tiles)),
            [&](OpBuilder &ib, Location il) {
              copyTileAsync(ib, il,
                            arith::MulIOp::create(ib, il, next, k(kStageDepth)),
                            arith::RemUIOp::create(ib, il, next, k(ops.stages)),
                            blockFirstRow, blockFirstCol);
              scf::YieldOp::create(ib, il);
            });
        // The group's token only orders the IR: cp.async.wait_group counts
        // the thread's groups, and leaves the next tiles' in flight.
        Value group = nvgpu::DeviceAsyncCreateGroupOp::create(
            nb, nl, token, ValueRange{});
        nvgpu::DeviceAsyncWaitOp::create(nb, nl, group,
                                         nb.getI32IntegerAttr(ops.stages - 1));
        if (aHigh)
          splitOwnElements(nb, nl, slot);
        // Every thread's copies (and terms) of this tile have landed.
        gpu::BarrierOp::create(nb, nl);
        stage = slot;
        SmallVector<Value> acc(carried);
        for (int64_t k0 = 0; k0 < kStageDepth; k0 += kStep)
          step(nb, nl, k(k0), acc);
        // Every warp is done with the slot that the next copies refill.
        gpu::BarrierOp::create(nb, nl);
        scf::YieldOp::create(nb, nl, acc);
      });
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value> TileProduct::directReduction(ValueRange init) {
  // Two reduction steps per iteration where they divide the row: the
  // second step's loads can be in flight during the first one's products.
  bool dynamic = ShapedType::isDynamic(ops.depth);
  int64_t unroll = !dynamic && ops.depth % (2 * kStep) == 0 ? 2 : 1;
  // A dynamic K: the whole steps, then the one that crosses K, masked.
  Value wholeDepth =
      dynamic ? mul(arith::DivUIOp::create(b, loc, ops.dynamicDepth, c(kStep)),
                    c(kStep))
              : c(ops.depth);
  auto loop = scf::ForOp::create(
      b, loc, c(0), wholeDepth, c(unroll * kStep), init,
      [&](OpBuilder &nb, Location nl, Value k, ValueRange carried) {
        SmallVector<Value> acc(carried);
        for (int64_t u = 0; u < unroll; ++u)
          step(nb, nl, arith::AddIOp::create(nb, nl, k, c(u * kStep)), acc);
        scf::YieldOp::create(nb, nl, acc);
      });
  if (!dynamic)
    return SmallVector<Value>(loop.getResults());
  auto tail = scf::IfOp::create(
      b, loc, lessThan(wholeDepth, ops.dynamicDepth),
      [&](OpBuilder &nb, Location nl) {
        SmallVector<Value> acc(loop.getResults());
        step(nb, nl, wholeDepth, acc, ops.dynamicDepth);
        scf::YieldOp::create(nb, nl, acc);
      },
      [&](OpBuilder &nb, Location nl) {
        scf::YieldOp::create(nb, nl, loop.getResults());
      });
  return SmallVector<Value>(tail.getResults());
}

void TileProduct::build(gpu::LaunchOp launch, Value wholeRows,
                        Value firstBlockRow) {
  Value tid = launch.getThreadIds().x;
  Value warp = arith::DivUIOp::create(b, loc, tid, c(32));
  Value lane = arith::RemUIOp::create(b, loc, tid, c(32));
  Value group = arith::DivUIOp::create(b, loc, lane, c(4));
  Value quad = arith::RemUIOp::create(b, loc, lane, c(4));
  Value warpRow = arith::DivUIOp::create(b, loc, warp, c(2));
  Value warpCol = arith::RemUIOp::create(b, loc, warp, c(2));
  Value blockFirstRow = mul(launch.getBlockIds().y, c(shape.block));
  if (firstBlockRow)
    blockFirstRow = add(firstBlockRow, blockFirstRow);
  Value blockFirstCol = mul(launch.getBlockIds().x, c(kBlockCols));
  Value firstCol = add(blockFirstCol, mul(warpCol, c(kWarpCols)));
  Value firstRow = add(blockFirstRow, mul(warpRow, c(shape.warp)));
  laneColumn = mul(quad, c(4));

  // Rows past the whole blocks are the contract's on views (the grid has
  // no block for them; the guard keeps a block row from straying there).
  auto inside = scf::IfOp::create(b, loc, lessThan(firstRow, wholeRows),
                                  /*withElse=*/false);
  b.setInsertionPointToStart(inside.thenBlock());
  int64_t rowTiles = shape.rowTiles();
  Value lastRow;
  if (ops.rowCount)
    lastRow = arith::SubIOp::create(b, loc, ops.rowCount, c(1));
  for (int64_t i = 0; i < rowTiles; ++i)
    for (int64_t half = 0; half < 2; ++half) {
      rows.push_back(add(firstRow, add(group, c(i * kTileRows + 8 * half))));
      aRows.push_back(lastRow ? arith::MinUIOp::create(b, loc, rows.back(),
                                                       lastRow)
                                    .getResult()
                              : rows.back());
    }
  Value lastColumn = arith::SubIOp::create(b, loc, ops.columns, c(1));
  for (int64_t j = 0; j < kColTiles; ++j)
    bRows.push_back(arith::MinUIOp::create(
        b, loc, add(firstCol, add(group, c(j * kTileCols))), lastColumn));
  if (ops.stagedA) {
    assert(shape.block == kWholeRows.block && !ops.rowCount &&
           ops.depth % kStageDepth == 0 && "staged tiles are whole blocks");
    Value warpFirstRow = mul(warpRow, c(shape.warp));
    for (int64_t i = 0; i < rowTiles; ++i)
      for (int64_t half = 0; half < 2; ++half)
        localARows.push_back(
            add(warpFirstRow, add(group, c(i * kTileRows + 8 * half))));
    Value warpFirstCol = mul(warpCol, c(kWarpCols));
    for (int64_t j = 0; j < kColTiles; ++j)
      localBRows.push_back(add(warpFirstCol, add(group, c(j * kTileCols))));
  }

  // Accumulator element e of tile (i, j): row g (+ 8 for e >= 2), column
  // 2 t (+ 1 for odd e), as the m16n8k16 layout deals them.
  auto element = [&](int64_t i, int64_t j, int64_t e) {
    Value row = rows[2 * i + e / 2];
    Value col = add(firstCol, add(mul(quad, c(2)), c(j * kTileCols + e % 2)));
    return std::make_pair(row, col);
  };
  // Whether element (row, col) of C exists: always, unless blocks may
  // end past the rows or the columns.
  auto exists = [&](Value row, Value col) -> Value {
    Value inside;
    if (ops.rowCount)
      inside = lessThan(row, ops.rowCount);
    if (ops.raggedColumns) {
      Value column = lessThan(col, ops.columns);
      inside = inside ? arith::AndIOp::create(b, loc, inside, column)
                            .getResult()
                      : column;
    }
    return inside;
  };
  SmallVector<Value> init;
  for (int64_t i = 0; i < rowTiles; ++i)
    for (int64_t j = 0; j < kColTiles; ++j)
      for (int64_t e = 0; e < 4; ++e) {
        auto [row, col] = element(i, j, e);
        Value inside = exists(row, col);
        if (!inside) {
          init.push_back(ops.loadC(b, loc, row, col));
          continue;
        }
        Value clampedRow = aRows[2 * i + e / 2];
        Value clampedCol = ops.raggedColumns
                               ? arith::MinUIOp::create(b, loc, col,
                                                        lastColumn)
                                     .getResult()
                               : col;
        Value value = ops.loadC(b, loc, clampedRow, clampedCol);
        Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
        init.push_back(arith::SelectOp::create(b, loc, inside, value, zero));
      }

  SmallVector<Value> sums = ops.stagedA
                                ? stagedReduction(blockFirstRow, blockFirstCol,
                                                  init)
                                : directReduction(init);

  for (int64_t i = 0; i < rowTiles; ++i)
    for (int64_t j = 0; j < kColTiles; ++j)
      for (int64_t e = 0; e < 4; ++e) {
        auto [row, col] = element(i, j, e);
        Value value = sums[slot(i, j, e)];
        Value inside = exists(row, col);
        if (!inside) {
          ops.storeC(b, loc, value, row, col);
          continue;
        }
        auto guard = scf::IfOp::create(b, loc, inside, /*withElse=*/false);
        OpBuilder::InsertionGuard restore(b);
        b.setInsertionPointToStart(guard.thenBlock());
        ops.storeC(b, loc, value, row, col);
      }
  b.setInsertionPointAfter(inside);
  gpu::TerminatorOp::create(b, loc);
}

/// Four consecutive elements of `memory` at `indices` along its last
/// dimension: one vector load, aligned to its size, from a dense buffer
/// (whose rows of a multiple of four elements start at aligned addresses);
/// four scalar loads from a strided view, whose alignment the type does
/// not tell.
Value loadFour(OpBuilder &b, Location loc, Value memory, ValueRange indices) {
  auto type = cast<MemRefType>(memory.getType());
  Type element = type.getElementType();
  auto vectorType = VectorType::get({4}, element);
  if (isDense(type))
    return vector::LoadOp::create(
        b, loc, vectorType, memory, indices, false,
        llvm::Align(4 * element.getIntOrFloatBitWidth() / 8));
  SmallVector<Value> elements, at(indices);
  for (int64_t e = 0; e < 4; ++e) {
    at.back() = arith::AddIOp::create(
        b, loc, indices.back(), arith::ConstantIndexOp::create(b, loc, e));
    elements.push_back(memref::LoadOp::create(b, loc, memory, at));
  }
  return vector::FromElementsOp::create(b, loc, vectorType, elements);
}

/// The launch attribute that records the kernel's tiles.
DictionaryAttr tilesAttr(Builder &b, bool splitActivations,
                         RowShape shape = kWholeRows, int64_t stages = 0,
                         bool splitOnce = false) {
  SmallVector<NamedAttribute> entries{
      b.getNamedAttr("block",
                     b.getDenseI64ArrayAttr({shape.block, kBlockCols})),
      b.getNamedAttr("warp", b.getDenseI64ArrayAttr({shape.warp, kWarpCols})),
      b.getNamedAttr("mma", b.getStringAttr("m16n8k16.bf16")),
      b.getNamedAttr("split_activations", b.getBoolAttr(splitActivations)),
  };
  // Staged tiles: `stages` tiles of `stage_depth` reduction columns in
  // workgroup memory, copied by cp.async.
  if (stages) {
    entries.push_back(b.getNamedAttr("stages", b.getI64IntegerAttr(stages)));
    entries.push_back(
        b.getNamedAttr("stage_depth", b.getI64IntegerAttr(kStageDepth)));
    if (splitOnce)
      entries.push_back(b.getNamedAttr("split_once", b.getUnitAttr()));
  }
  return b.getDictionaryAttr(entries);
}

/// [B, T, C] as [B T, C] (dense, so the rows collapse).
Value collapseRows(OpBuilder &b, Location loc, Value buffer) {
  return memref::CollapseShapeOp::create(
      b, loc, buffer, SmallVector<ReassociationIndices>{{0, 1}, {2}});
}

/// Rows [first, M) of a [M, C] buffer as [1, M - first, C].
Value rowsFrom(OpBuilder &b, Location loc, Value rows, Value first) {
  auto type = cast<MemRefType>(rows.getType());
  Value count = memref::DimOp::create(b, loc, rows, 0);
  Value remaining = arith::SubIOp::create(b, loc, count, first);
  int64_t columns = type.getDimSize(1);
  SmallVector<OpFoldResult> offsets{first, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes{remaining, b.getIndexAttr(columns)};
  SmallVector<OpFoldResult> strides{b.getIndexAttr(1), b.getIndexAttr(1)};
  Value view = memref::SubViewOp::create(b, loc, rows, offsets, sizes, strides);
  return memref::ExpandShapeOp::create(
      b, loc, ArrayRef<int64_t>{1, ShapedType::kDynamic, columns}, view,
      SmallVector<ReassociationIndices>{{0, 1}, {2}},
      SmallVector<OpFoldResult>{b.getIndexAttr(1), remaining,
                                b.getIndexAttr(columns)});
}

/// The grid of a product over `rowBlocks` whole blocks of A's rows and
/// `columnBlocks` column blocks, `batches` deep, with the launch's
/// attribute; its body is left to the caller. A decode step's few rows
/// fill no block: the grid is then empty, and the runtime skips the launch
/// (mgpuLaunchKernel).
gpu::LaunchOp launchTiles(OpBuilder &b, Location loc, Value columnBlocks,
                          Value rowBlocks, Value batches,
                          bool splitActivations,
                          RowShape shape = kWholeRows, int64_t stages = 0,
                          bool splitOnce = false) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value sharedBytes;
  if (stages)
    sharedBytes = arith::ConstantOp::create(
        b, loc,
        b.getI32IntegerAttr(
            stagedTileBytes(stages, splitOnce, splitActivations)));
  auto launch = gpu::LaunchOp::create(
      b, loc, columnBlocks, rowBlocks, batches,
      arith::ConstantIndexOp::create(b, loc, 32 * shape.warps()), one, one,
      sharedBytes);
  launch->setAttr("gdn.tensor_core_projection",
                  tilesAttr(b, splitActivations, shape, stages, splitOnce));
  return launch;
}

/// A fill folded into `op` (gdn-gpu-fold-fills): its accumulators start
/// from the fill's value, and C is only written.
void startFromFoldedFill(Operation *op, TileOperands &ops) {
  auto initial = op->getAttrOfType<TypedAttr>(kReductionInitAttrName);
  if (!initial)
    return;
  ops.loadC = [initial](OpBuilder &nb, Location nl, Value, Value) -> Value {
    return arith::ConstantOp::create(nb, nl, initial);
  };
}

/// How an epilogue (epilogueOf) of a projection reads an input where the
/// tile kernel stores C[row, col].
enum class EpilogueRead { Output, Element, Column, Scalar };

/// How each input of `epilogue` is read, if the tile kernel can run it as
/// it stores C: its inputs are the projection's output, dense [B, T, N]
/// buffers through the identity (collapsed like C), vectors over the
/// columns through the last index, or scalars; it writes a dense buffer;
/// its payload has no linalg.index.
std::optional<SmallVector<EpilogueRead>>
epilogueReads(linalg::LinalgOp epilogue, Value out) {
  auto writtenType =
      epilogue ? dyn_cast<MemRefType>(epilogue.getDpsInits()[0].getType())
               : MemRefType();
  // Rows of the written buffer are views like C's (rowsFrom): dense, with
  // a static row length.
  if (!writtenType || !isDense(writtenType) || writtenType.getRank() != 3 ||
      writtenType.isDynamicDim(2) ||
      !epilogue.getBlock()->getOps<linalg::IndexOp>().empty())
    return std::nullopt;
  MLIRContext *context = epilogue.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(3, context);
  AffineMap column =
      AffineMap::get(3, 0, getAffineDimExpr(2, context), context);
  SmallVector<EpilogueRead> reads;
  for (OpOperand *input : epilogue.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(input->get().getType());
    AffineMap map = epilogue.getMatchingIndexingMap(input);
    if (input->get() == out)
      reads.push_back(EpilogueRead::Output);
    else if (!type)
      reads.push_back(EpilogueRead::Scalar);
    else if (map == identity && isDense(type) && !type.isDynamicDim(2))
      reads.push_back(EpilogueRead::Element);
    else if (map == column && type.getRank() == 1)
      reads.push_back(EpilogueRead::Column);
    else
      return std::nullopt;
  }
  return reads;
}

/// The epilogue's value at C[row, col] = `value`, stored where it writes
/// (its operands collapsed to rows like C where `collapsed` has them).
void storeThroughEpilogue(OpBuilder &b, Location loc, linalg::LinalgOp epilogue,
                          Value out, ArrayRef<EpilogueRead> reads,
                          const DenseMap<Value, Value> &collapsed, Value value,
                          Value row, Value col) {
  Block *body = epilogue.getBlock();
  IRMapping mapping;
  for (auto [input, read] :
       llvm::zip_equal(epilogue.getDpsInputOperands(), reads)) {
    Value element = input->get();
    if (read == EpilogueRead::Output)
      element = value;
    else if (read == EpilogueRead::Element)
      element = memref::LoadOp::create(b, loc, collapsed.lookup(element),
                                       ValueRange{row, col});
    else if (read == EpilogueRead::Column)
      element = memref::LoadOp::create(b, loc, element, ValueRange{col});
    mapping.map(body->getArgument(input->getOperandNumber()), element);
  }
  // In place over C, the epilogue reads the value through its output.
  OpOperand &written = epilogue.getDpsInitsMutable()[0];
  if (written.get() == out)
    mapping.map(body->getArgument(written.getOperandNumber()), value);
  for (Operation &payload : body->without_terminator())
    b.clone(payload, mapping);
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  memref::StoreOp::create(b, loc, mapping.lookupOrDefault(yield.getOperand(0)),
                          collapsed.lookup(epilogue.getDpsInits()[0]),
                          ValueRange{row, col});
}

/// The tiles of the rows after the whole blocks (small-row-blocks): 64 rows
/// of four warps of 16, so that a decode batch of 64 reads each weight
/// fragment once per block.
constexpr RowShape kLeftoverRows{64, 16};

void rewriteProjection(linalg::ContractOp op, const Projection &p,
                       bool splitActivations, bool fuseEpilogues,
                       int64_t smallRowBlocksFrom, int64_t smallRowMinOutputs,
                       int64_t tileStages, bool splitOnce) {
  // The element-wise op after the projection runs in its kernels: as the
  // tiles store C, and after the rest rows' reduction.
  linalg::LinalgOp epilogue = fuseEpilogues ? findEpilogue(op) : nullptr;
  std::optional<SmallVector<EpilogueRead>> reads =
      epilogueReads(epilogue, p.out);
  if (!reads)
    epilogue = nullptr;
  // Before the epilogue's place: the views of its operands are defined
  // after the projection.
  OpBuilder b(epilogue ? epilogue.getOperation() : op.getOperation());
  Location loc = op.getLoc();
  Value x = collapseRows(b, loc, p.x);
  Value out = collapseRows(b, loc, p.out);
  DenseMap<Value, Value> collapsed;
  if (epilogue) {
    collapsed[p.out] = out;
    for (Value operand : epilogue->getOperands())
      if (auto type = dyn_cast<MemRefType>(operand.getType());
          type && type.getRank() == 3 && !collapsed.count(operand))
        collapsed[operand] = collapseRows(b, loc, operand);
  }
  Value rowCount = memref::DimOp::create(b, loc, x, 0);
  Value blockRows = arith::ConstantIndexOp::create(b, loc, kBlockRows);
  Value rowBlocks = arith::DivUIOp::create(b, loc, rowCount, blockRows);
  Value wholeRows = arith::MulIOp::create(b, loc, rowBlocks, blockRows);
  Value colBlocks = arith::ConstantIndexOp::create(
      b, loc, llvm::divideCeil(p.outputs, kBlockCols));
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  // The kernel over rows [first, first + blocks x shape.block) that exist
  // (below `bound`); `rowCount` masks a last block that ends past them.
  auto tiles = [&](OpBuilder &hb, Value blocks, Value bound, Value first,
                   Value rowCount, RowShape shape) {
    // Whole blocks of a bf16 weight stage their tiles (the rest rows'
    // blocks are a decode batch's few rows: bound by the weight reads).
    bool floatB = cast<MemRefType>(p.weight.getType()).getElementType().isF32();
    bool staged = tileStages > 0 && !rowCount && !floatB &&
                  shape.block == kWholeRows.block &&
                  p.inputs % kStageDepth == 0 &&
                  isDense(cast<MemRefType>(x.getType()));
    gpu::LaunchOp launch = launchTiles(hb, loc, colBlocks, blocks, one,
                                       splitActivations, shape,
                                       staged ? tileStages : 0,
                                       staged && splitOnce);
    OpBuilder kb(op->getContext());
    kb.setInsertionPointToStart(&launch.getBody().front());
    TileOperands ops;
    ops.loadA = [&](OpBuilder &nb, Location nl, Value row, Value col) {
      return loadFour(nb, nl, x, {row, col});
    };
    ops.loadB = [&](OpBuilder &nb, Location nl, Value row, Value col) {
      return loadFour(nb, nl, p.weight, {row, col});
    };
    ops.loadC = [&](OpBuilder &nb, Location nl, Value row, Value col) {
      return memref::LoadOp::create(nb, nl, out, ValueRange{row, col});
    };
    startFromFoldedFill(op, ops);
    ops.storeC = [&](OpBuilder &nb, Location nl, Value value, Value row,
                     Value col) {
      memref::StoreOp::create(nb, nl, value, out, ValueRange{row, col});
      if (epilogue)
        storeThroughEpilogue(nb, nl, epilogue, p.out, *reads, collapsed, value,
                             row, col);
    };
    ops.columns = arith::ConstantIndexOp::create(kb, loc, p.outputs);
    ops.raggedColumns = p.outputs % kBlockCols != 0;
    ops.depth = p.inputs;
    ops.floatB = floatB;
    ops.rowCount = rowCount;
    if (staged) {
      ops.stagedA = x;
      ops.stagedB = p.weight;
      ops.stages = tileStages;
      ops.splitOnce = splitOnce;
    }
    TileProduct(kb, loc, ops, splitActivations, shape)
        .build(launch, bound, first);
    return launch;
  };
  gpu::LaunchOp launch =
      tiles(b, rowBlocks, wholeRows, Value(), Value(), kWholeRows);

  // The rows after the whole blocks, on the same buffers: a warp per
  // output (gdn-gpu-map-parallel-loops), each reading its weight row.
  auto warpPerOutput = [&](OpBuilder &rb, Value first) {
    Value restX = rowsFrom(rb, loc, x, first);
    Value restOut = rowsFrom(rb, loc, out, first);
    auto rest = linalg::ContractOp::create(
        rb, loc, TypeRange{}, ValueRange{restX, p.weight}, ValueRange{restOut},
        op.getIndexingMaps());
    // A fill folded into the projection (gdn-gpu-fold-fills) holds for
    // the rest of its rows too.
    if (Attribute initial = op->getAttr(kReductionInitAttrName))
      rest->setAttr(kReductionInitAttrName, initial);
    if (epilogue) {
      // The epilogue of the rest rows, on the same views: right after
      // their reduction, which gdn-gpu-map-parallel-loops fuses it into.
      IRMapping views;
      views.map(p.out, restOut);
      for (Value operand : epilogue->getOperands())
        if (collapsed.count(operand) && !views.contains(operand))
          views.map(operand, rowsFrom(rb, loc, collapsed[operand], first));
      rb.clone(*epilogue, views);
    }
  };
  b.setInsertionPointAfter(launch);
  // With one row of blocks, a projection of few outputs would leave most
  // multiprocessors idle, each of its few blocks walking the whole
  // reduction: it keeps the warp per output (small-row-min-outputs).
  if (smallRowBlocksFrom <= 0 || p.outputs < smallRowMinOutputs) {
    warpPerOutput(b, wholeRows);
  } else {
    // From `smallRowBlocksFrom` rows on, the rest takes tensor cores too,
    // in blocks of fewer rows, the last one masked: the rows then share
    // each weight fragment they load, where a warp per output reads the
    // weights once per row. Both kernels stay in the step, one of them
    // over nothing (an empty grid, skipped at launch): a branch would put
    // its launches on a stream of their own, waited for by the host.
    Value left = arith::SubIOp::create(b, loc, rowCount, wholeRows);
    Value enough = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::uge, left,
        arith::ConstantIndexOp::create(b, loc, smallRowBlocksFrom));
    Value blocks = arith::SelectOp::create(
        b, loc, enough,
        arith::CeilDivUIOp::create(
            b, loc, left,
            arith::ConstantIndexOp::create(b, loc, kLeftoverRows.block)),
        arith::ConstantIndexOp::create(b, loc, 0));
    gpu::LaunchOp small =
        tiles(b, blocks, rowCount, wholeRows, rowCount, kLeftoverRows);
    b.setInsertionPointAfter(small);
    warpPerOutput(b, arith::SelectOp::create(b, loc, enough, rowCount,
                                             wholeRows));
  }
  if (epilogue)
    epilogue->erase();
  op.erase();
}

/// Attention scores against shared keys, as MLA's absorbed form makes them:
/// scores[b, n, t, s] += sum_r q[b, t, n, r] keys[b, s, r] (a generic over
/// (b, n, t, s, r) with a plain multiply-add of f32), the queries and the
/// scores dense, R
/// a multiple of the reduction step. A batched product: per (b, n), A =
/// q[b, :, n, :] and B = keys[b].
struct Scores {
  Value queries, keys, scores;
  int64_t depth;
};

/// Whether the body of `op` is acc + in0 * in1 in f32, the second input
/// widened from bf16 first where it is bf16 (a weight kept in bf16).
bool isMultiplyAdd(linalg::GenericOp op) {
  Block *body = op.getBody();
  BlockArgument lhs = body->getArgument(0), rhs = body->getArgument(1),
                acc = body->getArgument(2);
  Operation *first = &body->front();
  Value right = rhs;
  if (auto widen = dyn_cast<arith::ExtFOp>(first)) {
    if (widen.getIn() != rhs || !rhs.getType().isBF16())
      return false;
    right = widen.getResult();
    first = first->getNextNode();
  }
  auto mul = dyn_cast<arith::MulFOp>(first);
  if (!mul || !mul.getType().isF32())
    return false;
  auto addOp = dyn_cast_or_null<arith::AddFOp>(mul->getNextNode());
  auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
  if (!addOp || addOp->getNextNode() != yield ||
      yield.getOperand(0) != addOp.getResult())
    return false;
  bool products = (mul.getLhs() == lhs && mul.getRhs() == right) ||
                  (mul.getLhs() == right && mul.getRhs() == lhs);
  bool accumulates = (addOp.getLhs() == acc && addOp.getRhs() == mul) ||
                     (addOp.getRhs() == acc && addOp.getLhs() == mul);
  return products && accumulates;
}

/// Whether `op` is a multiply-add over `loops` loops on buffers, reducing
/// loop `reduction` alone, with the indexing maps `dims` (the loops that
/// index each operand, in order).
bool isBatchedProduct(linalg::GenericOp op, unsigned reduction,
                      ArrayRef<ArrayRef<unsigned>> dims, unsigned loops = 5) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != loops ||
      op.getNumReductionLoops() != 1 ||
      op.getIteratorTypesArray()[reduction] != utils::IteratorType::reduction ||
      !isMultiplyAdd(op))
    return false;
  MLIRContext *context = op.getContext();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (auto [map, operandDims] : llvm::zip_equal(maps, dims)) {
    SmallVector<AffineExpr> exprs;
    for (unsigned d : operandDims)
      exprs.push_back(getAffineDimExpr(d, context));
    if (map != AffineMap::get(loops, 0, exprs, context))
      return false;
  }
  return llvm::all_of(op->getOperands(),
                      [](Value v) { return isa<MemRefType>(v.getType()); });
}

bool isF32Buffer(Value v) {
  return cast<MemRefType>(v.getType()).getElementType().isF32();
}

std::optional<Scores> matchScores(linalg::GenericOp op) {
  if (!isBatchedProduct(op, 4, {{0, 2, 1, 4}, {0, 3, 4}, {0, 1, 2, 3}}) ||
      !llvm::all_of(op->getOperands(), isF32Buffer))
    return std::nullopt;
  Value queries = op.getDpsInputs()[0], keys = op.getDpsInputs()[1];
  Value scores = op.getDpsInits()[0];
  // The keys may be a view (a cache whose rows per sequence exceed the
  // keys), and so may the queries (the RoPE part of each head's query, a
  // slice of its row): loadFour reads them element by element.
  if (!isDense(cast<MemRefType>(scores.getType())))
    return std::nullopt;
  int64_t depth = cast<MemRefType>(queries.getType()).getDimSize(3);
  if (ShapedType::isDynamic(depth) || depth % kStep != 0 ||
      cast<MemRefType>(keys.getType()).getDimSize(2) != depth)
    return std::nullopt;
  return Scores{queries, keys, scores, depth};
}

/// Dimension `d` of `memory` on the host.
Value dim(OpBuilder &b, Location loc, Value memory, int64_t d) {
  return memref::DimOp::create(b, loc, memory, d);
}

/// `memory` with dimension `d` from index `first` on.
Value indicesFrom(OpBuilder &b, Location loc, Value memory, int64_t d,
                  Value first) {
  auto type = cast<MemRefType>(memory.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = memref::getMixedSizes(b, loc, memory);
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  offsets[d] = first;
  sizes[d] =
      arith::SubIOp::create(b, loc, dim(b, loc, memory, d), first).getResult();
  return memref::SubViewOp::create(b, loc, memory, offsets, sizes, strides)
      .getResult();
}

/// Replaces `op`, whose whole row blocks `launch` computes, by the same
/// generic on the rows from `wholeRows` on: each operand of `rows` viewed
/// from there along its row dimension.
void keepLeftoverRows(linalg::GenericOp op, gpu::LaunchOp launch,
                      ArrayRef<std::pair<Value, int64_t>> rows,
                      Value wholeRows) {
  OpBuilder b(op->getContext());
  b.setInsertionPointAfter(launch);
  IRMapping mapping;
  for (auto [operand, rowDim] : rows)
    mapping.map(operand,
                indicesFrom(b, op.getLoc(), operand, rowDim, wholeRows));
  b.clone(*op, mapping);
  op.erase();
}

/// Four elements of a row from `column` on, one load each.
Value fourElements(OpBuilder &b, Location loc,
                   const TileOperands::Load &element, Value row, Value column) {
  SmallVector<Value> values;
  for (int64_t e = 0; e < 4; ++e)
    values.push_back(element(
        b, loc, row,
        arith::AddIOp::create(b, loc, column,
                              arith::ConstantIndexOp::create(b, loc, e))));
  return vector::FromElementsOp::create(
      b, loc, VectorType::get({4}, values.front().getType()), values);
}

/// Where A's row `row` lies in the queries and the scores: (token, head).
using ScoreRow =
    std::function<std::pair<Value, Value>(OpBuilder &, Location, Value row)>;

/// The operands of the scores product of `sequence`: A the queries at
/// `at(row)`, B the keys (f32, a column per key), C the scores.
TileOperands scoresOperands(OpBuilder &kb, Location loc, const Scores &m,
                            linalg::GenericOp op, Value sequence,
                            ScoreRow at) {
  TileOperands ops;
  ops.loadA = [&m, sequence, at](OpBuilder &nb, Location nl, Value row,
                                 Value col) {
    auto [token, head] = at(nb, nl, row);
    return loadFour(nb, nl, m.queries, {sequence, token, head, col});
  };
  ops.loadB = [&m, sequence](OpBuilder &nb, Location nl, Value row,
                             Value col) {
    return loadFour(nb, nl, m.keys, {sequence, row, col});
  };
  ops.loadC = [&m, sequence, at](OpBuilder &nb, Location nl, Value row,
                                 Value col) -> Value {
    auto [token, head] = at(nb, nl, row);
    return memref::LoadOp::create(nb, nl, m.scores,
                                  ValueRange{sequence, head, token, col});
  };
  startFromFoldedFill(op, ops);
  ops.storeC = [&m, sequence, at](OpBuilder &nb, Location nl, Value value,
                                  Value row, Value col) {
    auto [token, head] = at(nb, nl, row);
    memref::StoreOp::create(nb, nl, value, m.scores,
                            ValueRange{sequence, head, token, col});
  };
  ops.columns = dim(kb, loc, m.keys, 1);
  ops.raggedColumns = true;
  ops.depth = m.depth;
  ops.floatB = true;
  return ops;
}

/// The scores of the query tokens from `firstToken` on with the heads as
/// A's rows (row r: token firstToken + r / heads, head r % heads), in
/// masked 64-row blocks, the grid's depth the batch: a decode step's
/// single token per head becomes a product of all the heads against one
/// read of the keys.
void headRowScores(OpBuilder &b, Location loc, const Scores &m,
                   Value firstToken, Value rowCount, Value colBlocks,
                   bool splitActivations, linalg::GenericOp op) {
  Value blocks = arith::CeilDivUIOp::create(
      b, loc, rowCount,
      arith::ConstantIndexOp::create(b, loc, kLeftoverRows.block));
  gpu::LaunchOp launch =
      launchTiles(b, loc, colBlocks, blocks, dim(b, loc, m.queries, 0),
                  splitActivations, kLeftoverRows);
  OpBuilder kb(op->getContext());
  kb.setInsertionPointToStart(&launch.getBody().front());
  Value sequence = launch.getBlockIds().z;
  Value headCount = dim(kb, loc, m.queries, 2);
  TileOperands ops = scoresOperands(
      kb, loc, m, op, sequence,
      [firstToken, headCount](OpBuilder &nb, Location nl, Value row) {
        Value token = arith::AddIOp::create(
            nb, nl, firstToken,
            arith::DivUIOp::create(nb, nl, row, headCount));
        Value head = arith::RemUIOp::create(nb, nl, row, headCount);
        return std::make_pair(token, head);
      });
  ops.rowCount = rowCount;
  TileProduct(kb, loc, ops, splitActivations, kLeftoverRows)
      .build(launch, rowCount);
}

void rewriteScores(linalg::GenericOp op, const Scores &m,
                   bool splitActivations, int64_t smallRowBlocksFrom) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  Value batch = dim(b, loc, m.queries, 0), tokens = dim(b, loc, m.queries, 1);
  Value heads = dim(b, loc, m.queries, 2), keyCount = dim(b, loc, m.keys, 1);
  Value rowBlocks = arith::DivUIOp::create(b, loc, tokens, c(kBlockRows));
  Value wholeRows = arith::MulIOp::create(b, loc, rowBlocks, c(kBlockRows));
  Value colBlocks = arith::MaxUIOp::create(
      b, loc, arith::CeilDivUIOp::create(b, loc, keyCount, c(kBlockCols)),
      c(1));
  gpu::LaunchOp launch = launchTiles(
      b, loc, colBlocks, rowBlocks, arith::MulIOp::create(b, loc, batch, heads),
      splitActivations);
  {
    OpBuilder kb(op->getContext());
    kb.setInsertionPointToStart(&launch.getBody().front());
    Value z = launch.getBlockIds().z;
    // z = b * heads + n: the grid's depth is batch x heads.
    Value headCount = dim(kb, loc, m.queries, 2);
    Value head = arith::RemUIOp::create(kb, loc, z, headCount);
    Value sequence = arith::DivUIOp::create(kb, loc, z, headCount);
    TileOperands ops = scoresOperands(
        kb, loc, m, op, sequence,
        [head](OpBuilder &, Location, Value row) {
          return std::make_pair(row, head);
        });
    TileProduct(kb, loc, ops, splitActivations).build(launch, wholeRows);
  }

  if (smallRowBlocksFrom <= 0) {
    keepLeftoverRows(op, launch, {{m.queries, 1}, {m.scores, 2}}, wholeRows);
    return;
  }
  // The tokens after the whole blocks, every head of them: on tensor cores
  // from `smallRowBlocksFrom` rows on, the generic on views below that
  // (the other one over nothing, as for the projections).
  b.setInsertionPointAfter(launch);
  Value rowCount = arith::MulIOp::create(
      b, loc, arith::SubIOp::create(b, loc, tokens, wholeRows), heads);
  Value enough = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                       rowCount, c(smallRowBlocksFrom));
  headRowScores(b, loc, m, wholeRows,
                arith::SelectOp::create(b, loc, enough, rowCount, c(0)),
                colBlocks, splitActivations, op);
  Value restFirst = arith::SelectOp::create(b, loc, enough, tokens, wholeRows);
  IRMapping views;
  views.map(m.queries, indicesFrom(b, loc, m.queries, 1, restFirst));
  views.map(m.scores, indicesFrom(b, loc, m.scores, 2, restFirst));
  b.clone(*op, views);
  op.erase();
}

/// MLA's attended latents: out[b, t, n, c] += sum_s probs[b, n, t, s]
/// latents[b, s, c] (a generic over (b, t, n, s, c), f32), with the
/// probabilities of the causal softmax and the latents of the cache. A
/// batched product per (b, n) whose depth is the number of keys (dynamic):
/// A = probs[b, n] and B[c, s] = latents[b, s, c], both read element by
/// element (a row of probs has a dynamic length, so its alignment is
/// unknown; B runs down the latents' columns).
struct AttendedLatents {
  Value probs, latents, out;
};

std::optional<AttendedLatents> matchAttendedLatents(linalg::GenericOp op) {
  if (!isBatchedProduct(op, 3, {{0, 2, 1, 3}, {0, 3, 4}, {0, 1, 2, 4}}) ||
      !llvm::all_of(op->getOperands(), isF32Buffer))
    return std::nullopt;
  return AttendedLatents{op.getDpsInputs()[0], op.getDpsInputs()[1],
                         op.getDpsInits()[0]};
}

void rewriteAttendedLatents(linalg::GenericOp op, const AttendedLatents &m,
                            bool splitActivations) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  Value batch = dim(b, loc, m.probs, 0), heads = dim(b, loc, m.probs, 1);
  Value tokens = dim(b, loc, m.probs, 2);
  Value latentSize = dim(b, loc, m.latents, 2);
  Value rowBlocks = arith::DivUIOp::create(b, loc, tokens, c(kBlockRows));
  Value wholeRows = arith::MulIOp::create(b, loc, rowBlocks, c(kBlockRows));
  Value colBlocks = arith::MaxUIOp::create(
      b, loc, arith::CeilDivUIOp::create(b, loc, latentSize, c(kBlockCols)),
      c(1));
  gpu::LaunchOp launch = launchTiles(
      b, loc, colBlocks, rowBlocks, arith::MulIOp::create(b, loc, batch, heads),
      splitActivations);
  {
    OpBuilder kb(op->getContext());
    kb.setInsertionPointToStart(&launch.getBody().front());
    Value z = launch.getBlockIds().z;
    Value headCount = dim(kb, loc, m.probs, 1);
    Value head = arith::RemUIOp::create(kb, loc, z, headCount);
    Value sequence = arith::DivUIOp::create(kb, loc, z, headCount);
    TileOperands ops;
    ops.elementA = [&](OpBuilder &nb, Location nl, Value row, Value col) {
      return memref::LoadOp::create(nb, nl, m.probs,
                                    ValueRange{sequence, head, row, col});
    };
    ops.elementB = [&](OpBuilder &nb, Location nl, Value row, Value col) {
      return memref::LoadOp::create(nb, nl, m.latents,
                                    ValueRange{sequence, col, row});
    };
    ops.loadA = [&](OpBuilder &nb, Location nl, Value row, Value col) {
      return fourElements(nb, nl, ops.elementA, row, col);
    };
    ops.loadB = [&](OpBuilder &nb, Location nl, Value row, Value col) {
      return fourElements(nb, nl, ops.elementB, row, col);
    };
    ops.loadC = [&](OpBuilder &nb, Location nl, Value row, Value col) {
      return memref::LoadOp::create(nb, nl, m.out,
                                    ValueRange{sequence, row, head, col});
    };
    startFromFoldedFill(op, ops);
    ops.storeC = [&](OpBuilder &nb, Location nl, Value value, Value row,
                     Value col) {
      memref::StoreOp::create(nb, nl, value, m.out,
                              ValueRange{sequence, row, head, col});
    };
    ops.columns = dim(kb, loc, m.latents, 2);
    int64_t staticColumns = cast<MemRefType>(m.latents.getType()).getDimSize(2);
    ops.raggedColumns =
        ShapedType::isDynamic(staticColumns) || staticColumns % kBlockCols != 0;
    ops.depth = ShapedType::kDynamic;
    ops.dynamicDepth = dim(kb, loc, m.probs, 3);
    ops.floatB = true;
    TileProduct(kb, loc, ops, splitActivations).build(launch, wholeRows);
  }

  keepLeftoverRows(op, launch, {{m.probs, 2}, {m.out, 1}}, wholeRows);
}

/// MLA's attended latents in key groups, as a decode step takes them
/// (gdn-absorb-mla-decode key-split): partial[b, t, n, c, g] += sum_s
/// probs[b, n, t, g, s] latents[b, g, s, c] (a generic over
/// (b, t, n, g, c, s), f32), the groups of `groupKeys` keys summed after.
/// The product of one (sequence, group) takes the tokens' heads as A's
/// rows (row r: token r / heads, head r % heads), so that all the heads
/// share each load of the group's latents.
struct AttendedPartials {
  Value probs, latents, out;
  int64_t groupKeys;
};

std::optional<AttendedPartials> matchAttendedPartials(linalg::GenericOp op) {
  if (!isBatchedProduct(op, 5,
                        {{0, 2, 1, 3, 5}, {0, 3, 5, 4}, {0, 1, 2, 4, 3}},
                        /*loops=*/6) ||
      !llvm::all_of(op->getOperands(), isF32Buffer))
    return std::nullopt;
  Value probs = op.getDpsInputs()[0], latents = op.getDpsInputs()[1];
  int64_t groupKeys = cast<MemRefType>(probs.getType()).getDimSize(4);
  if (ShapedType::isDynamic(groupKeys) || groupKeys % kStep != 0 ||
      cast<MemRefType>(latents.getType()).getDimSize(2) != groupKeys)
    return std::nullopt;
  return AttendedPartials{probs, latents, op.getDpsInits()[0], groupKeys};
}

/// From `smallRowBlocksFrom` rows (tokens x heads) on, the partial sums on
/// tensor cores in masked 64-row blocks, the grid's depth the sequences'
/// groups; below that the generic (the other form over nothing, as for
/// the scores).
void rewriteAttendedPartials(linalg::GenericOp op, const AttendedPartials &m,
                             bool splitActivations,
                             int64_t smallRowBlocksFrom) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  Value batch = dim(b, loc, m.probs, 0), heads = dim(b, loc, m.probs, 1);
  Value tokens = dim(b, loc, m.probs, 2), groups = dim(b, loc, m.probs, 3);
  Value rows = arith::MulIOp::create(b, loc, tokens, heads);
  Value enough = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                       rows, c(smallRowBlocksFrom));
  Value rowCount = arith::SelectOp::create(b, loc, enough, rows, c(0));
  Value rowBlocks =
      arith::CeilDivUIOp::create(b, loc, rowCount, c(kLeftoverRows.block));
  Value colBlocks = arith::MaxUIOp::create(
      b, loc,
      arith::CeilDivUIOp::create(b, loc, dim(b, loc, m.latents, 3),
                                 c(kBlockCols)),
      c(1));
  gpu::LaunchOp launch = launchTiles(
      b, loc, colBlocks, rowBlocks, arith::MulIOp::create(b, loc, batch, groups),
      splitActivations, kLeftoverRows);
  {
    OpBuilder kb(op->getContext());
    kb.setInsertionPointToStart(&launch.getBody().front());
    Value z = launch.getBlockIds().z;
    Value groupCount = dim(kb, loc, m.probs, 3);
    Value headCount = dim(kb, loc, m.probs, 1);
    Value sequence = arith::DivUIOp::create(kb, loc, z, groupCount);
    Value group = arith::RemUIOp::create(kb, loc, z, groupCount);
    auto at = [headCount](OpBuilder &nb, Location nl, Value row) {
      return std::make_pair(arith::DivUIOp::create(nb, nl, row, headCount),
                            arith::RemUIOp::create(nb, nl, row, headCount));
    };
    TileOperands ops;
    ops.loadA = [&m, sequence, group, at](OpBuilder &nb, Location nl,
                                          Value row, Value col) {
      auto [token, head] = at(nb, nl, row);
      return loadFour(nb, nl, m.probs, {sequence, head, token, group, col});
    };
    // B[c, s] = latents[b, g, s, c]: four keys of one latent channel.
    ops.elementB = [&m, sequence, group](OpBuilder &nb, Location nl, Value row,
                                         Value col) -> Value {
      return memref::LoadOp::create(nb, nl, m.latents,
                                    ValueRange{sequence, group, col, row});
    };
    ops.loadB = [&ops](OpBuilder &nb, Location nl, Value row, Value col) {
      return fourElements(nb, nl, ops.elementB, row, col);
    };
    ops.loadC = [&m, sequence, group, at](OpBuilder &nb, Location nl,
                                          Value row, Value col) -> Value {
      auto [token, head] = at(nb, nl, row);
      return memref::LoadOp::create(
          nb, nl, m.out, ValueRange{sequence, token, head, col, group});
    };
    startFromFoldedFill(op, ops);
    ops.storeC = [&m, sequence, group, at](OpBuilder &nb, Location nl,
                                           Value value, Value row, Value col) {
      auto [token, head] = at(nb, nl, row);
      memref::StoreOp::create(nb, nl, value, m.out,
                              ValueRange{sequence, token, head, col, group});
    };
    ops.columns = dim(kb, loc, m.latents, 3);
    int64_t staticColumns = cast<MemRefType>(m.latents.getType()).getDimSize(3);
    ops.raggedColumns =
        ShapedType::isDynamic(staticColumns) || staticColumns % kBlockCols != 0;
    ops.depth = m.groupKeys;
    ops.floatB = true;
    ops.rowCount = rowCount;
    TileProduct(kb, loc, ops, splitActivations, kLeftoverRows)
        .build(launch, rowCount);
  }
  b.setInsertionPointAfter(launch);
  Value restFirst = arith::SelectOp::create(b, loc, enough, tokens, c(0));
  IRMapping views;
  views.map(m.probs, indicesFrom(b, loc, m.probs, 2, restFirst));
  views.map(m.out, indicesFrom(b, loc, m.out, 1, restFirst));
  b.clone(*op, views);
  op.erase();
}

/// MLA's products with a weight per head, as its absorbed form makes them:
/// out[b, t, n, o] += sum_k x[b, t, n, k] w[n, k, o] (the queries taken
/// into the latent space, `kMajorWeight`) or w[n, o, k] (the attended
/// latents' values out of it); x and out f32, w bf16 (f32 too with
/// f32-weights) of static shape, K a multiple of the reduction step. A
/// batched product per (b, n): A = x[b, :, n, :], B[o, k] = w[n, k, o] or
/// w[n, o, k].
struct HeadProduct {
  Value x, weight, out;
  bool kMajorWeight;
  int64_t depth, outputs;
};

std::optional<HeadProduct> matchHeadProduct(linalg::GenericOp op,
                                            bool f32Weights) {
  bool kMajor =
      isBatchedProduct(op, 4, {{0, 1, 2, 4}, {2, 4, 3}, {0, 1, 2, 3}});
  if (!kMajor &&
      !isBatchedProduct(op, 4, {{0, 1, 2, 4}, {2, 3, 4}, {0, 1, 2, 3}}))
    return std::nullopt;
  Value x = op.getDpsInputs()[0], weight = op.getDpsInputs()[1];
  Value out = op.getDpsInits()[0];
  auto weightType = cast<MemRefType>(weight.getType());
  Type element = weightType.getElementType();
  if (!isF32Buffer(x) || !isF32Buffer(out) || !weightType.hasStaticShape() ||
      !(element.isBF16() || (f32Weights && element.isF32())))
    return std::nullopt;
  int64_t depth = weightType.getDimSize(kMajor ? 1 : 2);
  int64_t outputs = weightType.getDimSize(kMajor ? 2 : 1);
  if (depth % kStep != 0)
    return std::nullopt;
  return HeadProduct{x, weight, out, kMajor, depth, outputs};
}

void rewriteHeadProduct(linalg::GenericOp op, const HeadProduct &m,
                        bool splitActivations) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  Value batch = dim(b, loc, m.x, 0), tokens = dim(b, loc, m.x, 1);
  Value heads = dim(b, loc, m.x, 2);
  Value rowBlocks = arith::DivUIOp::create(b, loc, tokens, c(kBlockRows));
  Value wholeRows = arith::MulIOp::create(b, loc, rowBlocks, c(kBlockRows));
  gpu::LaunchOp launch = launchTiles(
      b, loc, c(llvm::divideCeil(m.outputs, kBlockCols)), rowBlocks,
      arith::MulIOp::create(b, loc, batch, heads), splitActivations);
  {
    OpBuilder kb(op->getContext());
    kb.setInsertionPointToStart(&launch.getBody().front());
    Value z = launch.getBlockIds().z;
    Value headCount = dim(kb, loc, m.x, 2);
    Value head = arith::RemUIOp::create(kb, loc, z, headCount);
    Value sequence = arith::DivUIOp::create(kb, loc, z, headCount);
    TileOperands ops;
    ops.loadA = [&](OpBuilder &nb, Location nl, Value row, Value col) {
      return loadFour(nb, nl, m.x, {sequence, row, head, col});
    };
    ops.elementB = [&](OpBuilder &nb, Location nl, Value row, Value col) {
      return memref::LoadOp::create(nb, nl, m.weight,
                                    ValueRange{head, col, row});
    };
    ops.loadB = [&](OpBuilder &nb, Location nl, Value row, Value col) {
      // w[n, k, o]: K runs down the weight's columns, one load each.
      if (m.kMajorWeight)
        return fourElements(nb, nl, ops.elementB, row, col);
      return loadFour(nb, nl, m.weight, {head, row, col});
    };
    ops.loadC = [&](OpBuilder &nb, Location nl, Value row, Value col) {
      return memref::LoadOp::create(nb, nl, m.out,
                                    ValueRange{sequence, row, head, col});
    };
    startFromFoldedFill(op, ops);
    ops.storeC = [&](OpBuilder &nb, Location nl, Value value, Value row,
                     Value col) {
      memref::StoreOp::create(nb, nl, value, m.out,
                              ValueRange{sequence, row, head, col});
    };
    ops.columns = arith::ConstantIndexOp::create(kb, loc, m.outputs);
    ops.raggedColumns = m.outputs % kBlockCols != 0;
    ops.depth = m.depth;
    ops.floatB = isF32Buffer(m.weight);
    TileProduct(kb, loc, ops, splitActivations).build(launch, wholeRows);
  }

  keepLeftoverRows(op, launch, {{m.x, 1}, {m.out, 1}}, wholeRows);
}

struct GdnGPUTensorCoreProjectionsPass
    : gdn::impl::GdnGPUTensorCoreProjectionsPassBase<
          GdnGPUTensorCoreProjectionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (tileStages != 0 && (tileStages < 2 || tileStages > 4)) {
      getOperation().emitError()
          << "gdn-gpu-tensor-core-projections: tile-stages must be 0 (no "
             "staging) or 2 to 4, got "
          << static_cast<int64_t>(tileStages);
      return signalPassFailure();
    }
    if (smallRowBlocks < 0 || smallRowMinOutputs < 0) {
      getOperation().emitError()
          << "gdn-gpu-tensor-core-projections: small-row-blocks and "
             "small-row-min-outputs must be 0 or more, got "
          << static_cast<int64_t>(smallRowBlocks) << " and "
          << static_cast<int64_t>(smallRowMinOutputs);
      return signalPassFailure();
    }
    SmallVector<std::pair<linalg::ContractOp, Projection>> projections;
    SmallVector<std::pair<linalg::GenericOp, Scores>> scores;
    SmallVector<std::pair<linalg::GenericOp, AttendedLatents>> attended;
    SmallVector<std::pair<linalg::GenericOp, AttendedPartials>> partials;
    SmallVector<std::pair<linalg::GenericOp, HeadProduct>> headProducts;
    getOperation().walk([&](Operation *op) {
      if (op->getParentOfType<gpu::LaunchOp>())
        return;
      if (auto contract = dyn_cast<linalg::ContractOp>(op))
        if (std::optional<Projection> p = matchProjection(contract, f32Weights))
          projections.emplace_back(contract, *p);
      auto generic = dyn_cast<linalg::GenericOp>(op);
      if (!generic)
        return;
      if (attentionScores) {
        if (std::optional<Scores> s = matchScores(generic))
          scores.emplace_back(generic, *s);
        if (std::optional<AttendedLatents> a = matchAttendedLatents(generic))
          attended.emplace_back(generic, *a);
        if (smallRowBlocks > 0)
          if (std::optional<AttendedPartials> p =
                  matchAttendedPartials(generic))
            partials.emplace_back(generic, *p);
      }
      if (std::optional<HeadProduct> h = matchHeadProduct(generic, f32Weights))
        headProducts.emplace_back(generic, *h);
    });
    for (auto &[op, p] : projections) {
      if (p.copyX)
        copyInputDense(op, p);
      rewriteProjection(op, p, splitActivations, fuseEpilogues,
                        smallRowBlocks, smallRowMinOutputs, tileStages,
                        splitOnce);
    }
    for (auto &[op, s] : scores)
      rewriteScores(op, s, splitActivations, smallRowBlocks);
    for (auto &[op, a] : attended)
      rewriteAttendedLatents(op, a, splitActivations);
    for (auto &[op, p] : partials)
      rewriteAttendedPartials(op, p, splitActivations, smallRowBlocks);
    for (auto &[op, h] : headProducts)
      rewriteHeadProduct(op, h, splitActivations);
  }
};
} // namespace
