//===- ScanStrategy.cpp - choosing the chunked scan's strategy ------------===//
//
// gdn-choose-scan-strategy: every decision of the chunked tensor-core scan
// (ChunkedScanToGPU.cpp) made once, from the op's shapes and the device's
// parameters, and recorded on the op as a #gdn.scan_strategy that the
// lowering reads and nothing else.
//
//===----------------------------------------------------------------------===//

#include "ChunkedScan.h"
#include "gdn/Conversion/Passes.h"

#include "llvm/Support/MathExtras.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNCHOOSESCANSTRATEGYPASS
#include "gdn/Conversion/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::scan;

/// The chunk the kernels are built for.
constexpr int64_t kChunk = 64;

ScanShape scan::shapeOf(DeltaRuleOp op, int64_t valueTile) {
  ScanShape shape;
  ScanStrategyAttr strategy = op.getStrategyAttr();
  shape.chunk = strategy ? strategy.getChunk() : kChunk;
  auto q = cast<RankedTensorType>(op.getQ().getType());
  shape.keyDim = q.getDimSize(3);
  Builder builder(op.getContext());
  shape.operand = q.getElementType().isF16() ? Type(builder.getF16Type())
                                             : Type(builder.getBF16Type());
  shape.valueDim = cast<RankedTensorType>(op.getV().getType()).getDimSize(3);
  shape.valueTile = valueTile;
  shape.warps = strategy ? strategy.getWarps() : 4;
  if (strategy)
    shape.copyWarps = strategy.getCopyWarps();
  return shape;
}

static bool fitsWorkgroupMemory(const ScanShape &shape) {
  return std::max(shape.chunkKernelBytes(), shape.stateKernelBytes()) <=
         kMaxSharedBytes;
}

/// The segments of a sequence scanned side by side (ScanSegments.cpp),
/// where even one batch entry's grid of the state kernel (Hv x V / Vt
/// blocks, Vt the tile the segments use) covers fewer than `enoughBlocks`.
/// A cost model in chunk-times of one block per multiprocessor: the whole
/// walk costs ceil(blocks / SMs) x C for C chunks; S segments of C / S
/// chunks cost a partial pass of blocks + (S - 2) x (blocks + Hv x K /
/// Vt) blocks (the middle segments add their transitions' K columns) at
/// 0.63 of an output chunk (no Q S, no O: their multiply-adds at Vt = 32,
/// K = 128), then an output pass of S x blocks. The cheapest S among the
/// powers of two up to kMaxSegments wins, the fewer segments on a tie. On
/// the H200 at (1, 32768, 2, 8) the model ties 4 and 8 segments (0.565 of
/// the walk each), and 4 measured faster (docs/performance.md). Packed
/// sequences, pools, checkpoints and the f32 recurrence keep one segment;
/// so do keys that are no whole number of tiles.
static int64_t chooseContextSegments(const ScanShape &shape, int64_t tile,
                                     int64_t valueHeads, int64_t enoughBlocks,
                                     int64_t multiprocessors, bool allowed,
                                     int64_t requested) {
  constexpr int64_t kMaxSegments = 16;
  // A partial-state chunk's cost, in hundredths of an output chunk's.
  constexpr int64_t kPartialCost = 63;
  if (!allowed || shape.keyDim % tile != 0)
    return 1;
  if (requested > 0)
    return requested;
  int64_t blocks = valueHeads * (shape.valueDim / tile);
  if (blocks >= enoughBlocks)
    return 1;
  int64_t transitionBlocks = valueHeads * (shape.keyDim / tile);
  auto waves = [&](int64_t n) {
    return llvm::divideCeil(n, multiprocessors);
  };
  // The cost of S segments per chunk of the sequence, scaled by 100 x
  // kMaxSegments so that it stays an integer.
  auto cost = [&](int64_t segments) -> int64_t {
    int64_t scale = 100 * kMaxSegments / segments;
    if (segments == 1)
      return waves(blocks) * 100 * scale;
    int64_t partialBlocks =
        blocks + (segments - 2) * (blocks + transitionBlocks);
    return (waves(partialBlocks) * kPartialCost +
            waves(segments * blocks) * 100) *
           scale;
  };
  int64_t best = 1;
  for (int64_t segments = 2; segments <= kMaxSegments; segments *= 2)
    if (cost(segments) < cost(best))
      best = segments;
  return best;
}

ScanStrategyAttr gdn::chooseScanStrategy(DeltaRuleOp op, int64_t valueTile,
                                         int64_t warps, int64_t multiprocessors,
                                         int64_t f32MinTokens,
                                         int64_t contextSegments) {
  auto q = cast<RankedTensorType>(op.getQ().getType());
  Type element = q.getElementType();
  bool serving =
      op.getCuSeqlens() || op.getStateIndices() || op.getCheckpoints();
  // The scan has the state at chunk boundaries only.
  if (std::optional<int64_t> every = op.getCheckpointEvery();
      every && *every % kChunk != 0)
    return {};
  bool f32 = element.isF32() && f32MinTokens > 0 && !serving;
  // A static T below the threshold would only ever take the recurrence.
  if (f32 && !q.isDynamicDim(1) && q.getDimSize(1) < f32MinTokens)
    return {};
  if ((!element.isBF16() && !element.isF16() && !f32) ||
      cast<RankedTensorType>(op.getK().getType()).getElementType() != element ||
      cast<RankedTensorType>(op.getV().getType()).getElementType() != element)
    return {};
  ScanShape shape = shapeOf(op, 0);
  shape.warps = warps;
  shape.valueTile = std::min(valueTile, shape.valueDim);
  // Head dims that are no multiple of the tile (96, 160) take the largest
  // halving of it that divides them, so that they are chunked like 64 and
  // 128 rather than left to the recurrence.
  while (shape.valueDim % shape.valueTile != 0 && shape.valueTile % 16 == 0)
    shape.valueTile /= 2;
  if (shape.keyDim % 16 != 0 || shape.valueTile % 8 != 0 ||
      shape.valueDim % shape.valueTile != 0)
    return {};
  // Wide keys leave less workgroup memory for the state tile.
  while (shape.stateKernelBytes() > kMaxSharedBytes &&
         shape.valueTile % 16 == 0)
    shape.valueTile /= 2;
  if (!fitsWorkgroupMemory(shape))
    return {};
  // A narrower tile where the wide one's grid leaves multiprocessors idle:
  // half, at least 32 columns. It reads each chunk's Q, K, T diag(beta) and
  // P once for fewer value columns, so it only pays where it brings
  // blocks: measured on the H200 (K = V = 128, docs/performance.md), at
  // B = 1, Hv = 32, tile 32 with 128 blocks beats tile 64 with 64 blocks
  // by 18%; at B = 1, Hv = 16, tile 32 with 64 blocks beats 64 with 32 by
  // 26%.
  int64_t narrow = shape.valueTile / 2;
  if (narrow < 32 || shape.valueDim % narrow != 0)
    narrow = 0;
  MLIRContext *context = op.getContext();
  int64_t enoughBlocks = std::max<int64_t>(1, multiprocessors * 7 / 8);
  int64_t segments = chooseContextSegments(
      shape, narrow ? narrow : shape.valueTile,
      cast<RankedTensorType>(op.getV().getType()).getDimSize(2), enoughBlocks,
      multiprocessors, /*allowed=*/!serving && !f32, contextSegments);
  return ScanStrategyAttr::get(
      context, shape.chunk, shape.valueTile, narrow, enoughBlocks, shape.warps,
      shape.copyWarps, MmaKind::mma_sync, Staging::cp_async, /*stages=*/2,
      shape.stateInRegisters() ? StateHome::registers : StateHome::shared,
      segments, /*recurrenceBelow=*/f32 ? f32MinTokens : 0);
}

LogicalResult gdn::checkScanStrategyBuildable(DeltaRuleOp op) {
  ScanStrategyAttr strategy = op.getStrategyAttr();
  for (int64_t tile :
       {strategy.getValueTile(), strategy.getNarrowValueTile()}) {
    if (tile == 0)
      continue;
    ScanShape shape = shapeOf(op, tile);
    if (!fitsWorkgroupMemory(shape))
      return op.emitOpError()
             << "strategy: with a value tile of " << tile
             << " the scan's kernels need "
             << std::max(shape.chunkKernelBytes(), shape.stateKernelBytes())
             << " bytes of workgroup memory, more than the " << kMaxSharedBytes
             << " of a multiprocessor";
    if (tile == strategy.getValueTile() &&
        shape.stateInRegisters() !=
            (strategy.getState() == StateHome::registers))
      return op.emitOpError()
             << "strategy: state = " << stringifyStateHome(strategy.getState())
             << " does not match the kernel: the state product's tiles "
             << (shape.stateInRegisters() ? "divide" : "do not divide")
             << " among the " << shape.warps << " warps at a value tile of "
             << tile << " (state = "
             << (shape.stateInRegisters() ? "registers" : "shared") << ")";
  }
  return success();
}

llvm::Error mlir::gdn::checkScanStrategyOptions(
    const GdnChooseScanStrategyPassOptions &options) {
  if (options.valueTile < 8 || options.valueTile % 8 != 0)
    return llvm::createStringError(
        "value-tile must be a positive multiple of 8, but got " +
        llvm::Twine(options.valueTile));
  if (options.scanWarps != 4 && options.scanWarps != 8)
    return llvm::createStringError("scan-warps must be 4 or 8, but got " +
                                   llvm::Twine(options.scanWarps));
  if (options.f32MinTokens < 0)
    return llvm::createStringError("f32-min-tokens must be >= 0 (0: none), "
                                   "but got " +
                                   llvm::Twine(options.f32MinTokens));
  if (options.contextSegments < 0 || options.contextSegments > 64 ||
      !llvm::isPowerOf2_64(std::max<int64_t>(options.contextSegments, 1)))
    return llvm::createStringError(
        "context-segments must be 0 (chosen from the shapes) or a power of "
        "two in [1, 64], but got " +
        llvm::Twine(options.contextSegments));
  if (options.multiprocessors < 1 || options.multiprocessors > 4096)
    return llvm::createStringError("multiprocessors must be 1..4096, but "
                                   "got " +
                                   llvm::Twine(options.multiprocessors));
  return llvm::Error::success();
}

namespace {
struct GdnChooseScanStrategyPass
    : gdn::impl::GdnChooseScanStrategyPassBase<GdnChooseScanStrategyPass> {
  using Base::Base;

  void runOnOperation() override {
    if (llvm::Error error = checkScanStrategyOptions(
            {chunkedPrefill, f32MinTokens, valueTile, scanWarps,
             multiprocessors, contextSegments})) {
      getOperation().emitError()
          << "gdn-choose-scan-strategy: " << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    if (!chunkedPrefill)
      return;
    getOperation().walk([&](DeltaRuleOp op) {
      if (op.getStrategyAttr())
        return;
      if (ScanStrategyAttr strategy = chooseScanStrategy(
              op, valueTile, scanWarps, multiprocessors, f32MinTokens,
              contextSegments))
        op.setStrategyAttr(strategy);
    });
  }
};
} // namespace
