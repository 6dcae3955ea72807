//===- TensorCoreProjections.cpp - projections on mma.sync tensor cores ---===//
//
// After bufferization, a projection out[b, t, o] += sum_i x[b, t, i] w[o, i]
// (the layers' linalg.contract, getProjectionIndexingMaps) whose weight is
// bf16 becomes a kernel of bf16 mma.sync m16n8k16 products with f32
// accumulators, for the rows that fill whole 128-row blocks. The rows left
// over (all of them in a decode step of fewer than 128 sequences) stay a
// contract on views of the same buffers, which gdn-gpu-map-parallel-loops
// gives a warp per output: there, reading each weight row once at full
// bandwidth matters more than the products.
//
// The kernel (gdn.tensor_core_projection on the launch records its tiles):
// blocks of 128 rows x 64 columns, four warps of 64 x 32 (4 x 4 tiles of
// 16 x 8, 64 accumulators per lane), and the reduction in steps of 16. The
// fragments come straight from global memory (L1 and L2 give the reuse
// between warps; there is no workgroup memory to stage or synchronize): the
// sum is the same under any order of its terms, so each lane takes four
// consecutive elements of a row for the two element pairs that the
// m16n8k16 layout gives it (columns 2t, 2t + 1 and 2t + 8, 2t + 9 of the
// step stand for 4t .. 4t + 3 in both operands), and loads them with one
// 16-byte load of x and one 8-byte load of the weight.
//
// The activations are f32 and the products bf16. With split-activations
// each x is the sum of two bf16 numbers (hi = bf16(x), lo = bf16(x - hi)),
// and both products are accumulated: 16 significant bits of x, so the
// result matches the f32 path to about 1e-5 relative instead of bf16's
// 4e-3 (the weights are exact in bf16 already), for twice the tensor-core
// work of a kernel that is bound by its loads.
//
//===----------------------------------------------------------------------===//

#include "gdn/Codegen/GPU/Passes.h"
#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

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
constexpr int64_t kRowTiles = kWarpRows / kTileRows; // 4
constexpr int64_t kColTiles = kWarpCols / kTileCols; // 4
constexpr int64_t kWarps = (kBlockRows / kWarpRows) * (kBlockCols / kWarpCols);

/// The operands of a projection that the kernel takes: x [B, T, I] f32,
/// w [O, I] bf16 and out [B, T, O] f32, all with identity layouts (dense
/// rows starting at aligned addresses: the vector loads rely on it), and I
/// a multiple of the reduction step.
struct Projection {
  Value x, weight, out;
  int64_t inputs, outputs;
};

bool isDense(MemRefType type) { return type.getLayout().isIdentity(); }

std::optional<Projection> matchProjection(linalg::ContractOp op) {
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
      weightType.getRank() != 2 || outType.getRank() != 3 || !isDense(xType) ||
      !isDense(weightType) || !isDense(outType) ||
      !xType.getElementType().isF32() ||
      !weightType.getElementType().isBF16() ||
      !outType.getElementType().isF32() || !weightType.hasStaticShape())
    return std::nullopt;
  int64_t outputs = weightType.getDimSize(0), inputs = weightType.getDimSize(1);
  // Fewer outputs than a block's columns (a gate's one per head) would
  // leave one column of blocks, each a chain of dependent steps over the
  // whole reduction: a warp per output is faster there.
  if (outputs < kBlockCols || inputs % kStep != 0 ||
      xType.getDimSize(2) != inputs ||
      outType.getDimSize(2) != outputs)
    return std::nullopt;
  return Projection{x, weight, out, inputs, outputs};
}

/// Builds the kernel body for `p` over the rows [0, wholeRows) of the
/// collapsed x [M, I] and out [M, O].
class ProjectionKernel {
public:
  ProjectionKernel(OpBuilder &b, Location loc, const Projection &p, Value x,
                   Value out, bool splitActivations)
      : b(b), loc(loc), p(p), x(x), out(out), split(splitActivations) {}

  void build(gpu::LaunchOp launch, Value wholeRows);

private:
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value l, Value r) { return arith::AddIOp::create(b, loc, l, r); }
  Value mul(Value l, Value r) { return arith::MulIOp::create(b, loc, l, r); }
  Value lessThan(Value l, Value r) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, l, r);
  }

  /// Two 32-bit registers of two bf16 each from four consecutive elements.
  std::pair<Value, Value> registerPair(OpBuilder &nb, Location nl,
                                       Value halves) {
    auto words = vector::BitCastOp::create(
        nb, nl, VectorType::get({2}, nb.getI32Type()), halves);
    return {vector::ExtractOp::create(nb, nl, words, 0),
            vector::ExtractOp::create(nb, nl, words, 1)};
  }

  /// acc (four f32) += A B on one mma.sync m16n8k16 (bf16 operands).
  static void multiplyAccumulate(OpBuilder &nb, Location nl, ArrayRef<Value> a,
                                 ArrayRef<Value> bFragment,
                                 MutableArrayRef<Value> acc) {
    Type f32 = nb.getF32Type();
    auto accType =
        LLVM::LLVMStructType::getLiteral(nb.getContext(), {f32, f32, f32, f32});
    Value result =
        NVVM::MmaOp::create(nb, nl, accType, a, bFragment, acc, {16, 8, 16},
                            std::nullopt, std::nullopt,
                            std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                                          NVVM::MMATypes::bf16},
                            std::array<NVVM::MMALayout, 2>{
                                NVVM::MMALayout::row, NVVM::MMALayout::col});
    for (int64_t e = 0; e < 4; ++e)
      acc[e] = LLVM::ExtractValueOp::create(nb, nl, result, e);
  }

  /// Index of accumulator element e of tile (i, j).
  static int64_t slot(int64_t i, int64_t j, int64_t e) {
    return (i * kColTiles + j) * 4 + e;
  }

  /// The reduction step from column `k` (this lane's four elements start
  /// at k + 4 t): loads, conversions and the products.
  void step(OpBuilder &nb, Location nl, Value k, MutableArrayRef<Value> acc);

  OpBuilder &b;
  Location loc;
  const Projection &p;
  Value x, out;
  bool split;
  /// Per lane: the x rows of its tiles' fragment rows g and g + 8, the
  /// weight rows (clamped into the matrix) of its B fragments, and its
  /// first reduction column 4 t.
  SmallVector<Value> rows, weightRows;
  Value laneColumn;
};

void ProjectionKernel::step(OpBuilder &nb, Location nl, Value k,
                            MutableArrayRef<Value> acc) {
  Type f32 = nb.getF32Type(), bf16 = nb.getBF16Type();
  auto floats = VectorType::get({4}, f32);
  auto halves = VectorType::get({4}, bf16);
  Value column = arith::AddIOp::create(nb, nl, k, laneColumn);
  // A fragments: registers a0 (row g) and a1 (row g + 8) hold the first
  // pair, a2 and a3 the second; once for hi and, split, once for lo.
  SmallVector<SmallVector<Value>> high(kRowTiles), low(kRowTiles);
  for (int64_t i = 0; i < kRowTiles; ++i) {
    SmallVector<Value> hiWords(4), loWords(4);
    for (int64_t half = 0; half < 2; ++half) {
      Value values = vector::LoadOp::create(
          nb, nl, floats, x, ValueRange{rows[2 * i + half], column}, false,
          llvm::Align(16));
      Value hi = arith::TruncFOp::create(nb, nl, halves, values);
      auto [first, second] = registerPair(nb, nl, hi);
      hiWords[half] = first;
      hiWords[2 + half] = second;
      if (split) {
        Value rest = arith::SubFOp::create(
            nb, nl, values, arith::ExtFOp::create(nb, nl, floats, hi));
        Value lo = arith::TruncFOp::create(nb, nl, halves, rest);
        auto [loFirst, loSecond] = registerPair(nb, nl, lo);
        loWords[half] = loFirst;
        loWords[2 + half] = loSecond;
      }
    }
    high[i] = hiWords;
    low[i] = loWords;
  }
  for (int64_t j = 0; j < kColTiles; ++j) {
    Value weights = vector::LoadOp::create(nb, nl, halves, p.weight,
                                           ValueRange{weightRows[j], column},
                                           false, llvm::Align(8));
    auto [b0, b1] = registerPair(nb, nl, weights);
    SmallVector<Value> fragment{b0, b1};
    for (int64_t i = 0; i < kRowTiles; ++i) {
      MutableArrayRef<Value> tile = acc.slice(slot(i, j, 0), 4);
      if (split)
        multiplyAccumulate(nb, nl, low[i], fragment, tile);
      multiplyAccumulate(nb, nl, high[i], fragment, tile);
    }
  }
}

void ProjectionKernel::build(gpu::LaunchOp launch, Value wholeRows) {
  Value tid = launch.getThreadIds().x;
  Value warp = arith::DivUIOp::create(b, loc, tid, c(32));
  Value lane = arith::RemUIOp::create(b, loc, tid, c(32));
  Value group = arith::DivUIOp::create(b, loc, lane, c(4));
  Value quad = arith::RemUIOp::create(b, loc, lane, c(4));
  Value warpRow = arith::DivUIOp::create(b, loc, warp, c(2));
  Value warpCol = arith::RemUIOp::create(b, loc, warp, c(2));
  Value firstRow = add(mul(launch.getBlockIds().y, c(kBlockRows)),
                       mul(warpRow, c(kWarpRows)));
  Value firstCol = add(mul(launch.getBlockIds().x, c(kBlockCols)),
                       mul(warpCol, c(kWarpCols)));
  laneColumn = mul(quad, c(4));

  // One block row past the whole rows when there are none (the grid has
  // at least one): it does nothing.
  auto inside = scf::IfOp::create(b, loc, lessThan(firstRow, wholeRows),
                                  /*withElse=*/false);
  b.setInsertionPointToStart(inside.thenBlock());
  for (int64_t i = 0; i < kRowTiles; ++i)
    for (int64_t half = 0; half < 2; ++half)
      rows.push_back(add(firstRow, add(group, c(i * kTileRows + 8 * half))));
  Value lastOutput = c(p.outputs - 1);
  for (int64_t j = 0; j < kColTiles; ++j)
    weightRows.push_back(arith::MinUIOp::create(
        b, loc, add(firstCol, add(group, c(j * kTileCols))), lastOutput));

  // Accumulator element e of tile (i, j): row g (+ 8 for e >= 2), column
  // 2 t (+ 1 for odd e), as the m16n8k16 layout deals them.
  bool ragged = p.outputs % kBlockCols != 0;
  auto element = [&](int64_t i, int64_t j, int64_t e) {
    Value row = rows[2 * i + e / 2];
    Value col = add(firstCol, add(mul(quad, c(2)), c(j * kTileCols + e % 2)));
    return std::make_pair(row, col);
  };
  Value outputCount = c(p.outputs);
  SmallVector<Value> init;
  for (int64_t i = 0; i < kRowTiles; ++i)
    for (int64_t j = 0; j < kColTiles; ++j)
      for (int64_t e = 0; e < 4; ++e) {
        auto [row, col] = element(i, j, e);
        if (!ragged) {
          init.push_back(memref::LoadOp::create(b, loc, out, {row, col}));
          continue;
        }
        Value clamped = arith::MinUIOp::create(b, loc, col, lastOutput);
        Value value = memref::LoadOp::create(b, loc, out, {row, clamped});
        Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
        init.push_back(arith::SelectOp::create(
            b, loc, lessThan(col, outputCount), value, zero));
      }

  // Two reduction steps per iteration where they divide the row: the
  // second step's loads can be in flight during the first one's products.
  int64_t unroll = p.inputs % (2 * kStep) == 0 ? 2 : 1;
  auto loop = scf::ForOp::create(
      b, loc, c(0), c(p.inputs), c(unroll * kStep), init,
      [&](OpBuilder &nb, Location nl, Value k, ValueRange carried) {
        SmallVector<Value> acc(carried);
        for (int64_t u = 0; u < unroll; ++u)
          step(nb, nl, arith::AddIOp::create(nb, nl, k, c(u * kStep)), acc);
        scf::YieldOp::create(nb, nl, acc);
      });

  for (int64_t i = 0; i < kRowTiles; ++i)
    for (int64_t j = 0; j < kColTiles; ++j)
      for (int64_t e = 0; e < 4; ++e) {
        auto [row, col] = element(i, j, e);
        Value value = loop.getResult(slot(i, j, e));
        if (!ragged) {
          memref::StoreOp::create(b, loc, value, out, {row, col});
          continue;
        }
        auto guard = scf::IfOp::create(b, loc, lessThan(col, outputCount),
                                       /*withElse=*/false);
        OpBuilder::InsertionGuard restore(b);
        b.setInsertionPointToStart(guard.thenBlock());
        memref::StoreOp::create(b, loc, value, out, {row, col});
      }
  b.setInsertionPointAfter(inside);
  gpu::TerminatorOp::create(b, loc);
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

void rewriteProjection(linalg::ContractOp op, const Projection &p,
                       bool splitActivations) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value x = collapseRows(b, loc, p.x);
  Value out = collapseRows(b, loc, p.out);
  Value rowCount = memref::DimOp::create(b, loc, x, 0);
  Value blockRows = arith::ConstantIndexOp::create(b, loc, kBlockRows);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value rowBlocks = arith::DivUIOp::create(b, loc, rowCount, blockRows);
  Value wholeRows = arith::MulIOp::create(b, loc, rowBlocks, blockRows);
  Value colBlocks = arith::ConstantIndexOp::create(
      b, loc, llvm::divideCeil(p.outputs, kBlockCols));
  auto launch = gpu::LaunchOp::create(
      b, loc, colBlocks, arith::MaxUIOp::create(b, loc, rowBlocks, one), one,
      arith::ConstantIndexOp::create(b, loc, 32 * kWarps), one, one);
  launch->setAttr(
      "gdn.tensor_core_projection",
      b.getDictionaryAttr({
          b.getNamedAttr("block",
                         b.getDenseI64ArrayAttr({kBlockRows, kBlockCols})),
          b.getNamedAttr("warp",
                         b.getDenseI64ArrayAttr({kWarpRows, kWarpCols})),
          b.getNamedAttr("mma", b.getStringAttr("m16n8k16.bf16")),
          b.getNamedAttr("split_activations", b.getBoolAttr(splitActivations)),
      }));
  {
    OpBuilder kb(op->getContext());
    kb.setInsertionPointToStart(&launch.getBody().front());
    ProjectionKernel(kb, loc, p, x, out, splitActivations)
        .build(launch, wholeRows);
  }

  // The rows after the whole blocks, on the same buffers.
  b.setInsertionPointAfter(launch);
  Value restX = rowsFrom(b, loc, x, wholeRows);
  Value restOut = rowsFrom(b, loc, out, wholeRows);
  linalg::ContractOp::create(b, loc, TypeRange{}, ValueRange{restX, p.weight},
                             ValueRange{restOut}, op.getIndexingMaps());
  op.erase();
}

struct GdnGPUTensorCoreProjectionsPass
    : gdn::impl::GdnGPUTensorCoreProjectionsPassBase<
          GdnGPUTensorCoreProjectionsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<std::pair<linalg::ContractOp, Projection>> projections;
    getOperation().walk([&](linalg::ContractOp op) {
      if (op->getParentOfType<gpu::LaunchOp>())
        return;
      if (std::optional<Projection> p = matchProjection(op))
        projections.emplace_back(op, *p);
    });
    for (auto &[op, p] : projections)
      rewriteProjection(op, p, splitActivations);
  }
};
} // namespace
