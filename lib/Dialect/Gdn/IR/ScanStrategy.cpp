//===- ScanStrategy.cpp - #gdn.scan_strategy ------------------------------===//
//
// The verifier of the chunked scan's strategy (GdnAttrs.td), and its check
// against the gdn.delta_rule that carries it.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnOps.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::gdn;

LogicalResult
ScanStrategyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t chunk, int64_t valueTile,
                         int64_t narrowValueTile, int64_t narrowBelowBlocks,
                         int64_t warps, int64_t copyWarps, MmaKind mma,
                         Staging staging, int64_t stages, StateHome state,
                         int64_t contextSegments, int64_t recurrenceBelow) {
  // What the kernels implement; the other values are named for the kernels
  // to come.
  if (chunk != 64)
    return emitError() << "chunk must be 64 (the scan's kernels are built "
                          "for chunks of 64 tokens), got "
                       << chunk;
  auto isTile = [](int64_t tile) { return tile >= 8 && tile % 8 == 0; };
  if (!isTile(valueTile) || valueTile > 1024)
    return emitError() << "value_tile must be a multiple of 8 in [8, 1024], "
                          "got "
                       << valueTile;
  if (narrowValueTile != 0 &&
      (!isTile(narrowValueTile) || narrowValueTile >= valueTile))
    return emitError() << "narrow_value_tile must be 0 (none) or a multiple "
                          "of 8 below value_tile ("
                       << valueTile << "), got " << narrowValueTile;
  if (narrowBelowBlocks < 0)
    return emitError() << "narrow_below_blocks must be >= 0, got "
                       << narrowBelowBlocks;
  if (warps != 4 && warps != 8)
    return emitError() << "warps must be 4 or 8, got " << warps;
  if (copyWarps != 2)
    return emitError() << "copy_warps must be 2 (the state kernel's staging "
                          "warps), got "
                       << copyWarps;
  if (mma != MmaKind::mma_sync)
    return emitError() << "mma = " << stringifyMmaKind(mma)
                       << " is not implemented by the scan's kernels "
                          "(mma_sync)";
  if (staging != Staging::cp_async)
    return emitError() << "staging = " << stringifyStaging(staging)
                       << " is not implemented by the scan's kernels "
                          "(cp_async)";
  if (stages != 2)
    return emitError() << "stages must be 2 (double buffering), got " << stages;
  (void)state;
  if (contextSegments < 1 || contextSegments > 64 ||
      !llvm::isPowerOf2_64(contextSegments))
    return emitError() << "context_segments must be a power of two in [1, "
                          "64], got "
                       << contextSegments;
  if (recurrenceBelow < 0)
    return emitError() << "recurrence_below must be >= 0 (0: never), got "
                       << recurrenceBelow;
  return success();
}

LogicalResult gdn::verifyScanStrategy(DeltaRuleOp op) {
  ScanStrategyAttr strategy = op.getStrategyAttr();
  if (!strategy)
    return success();
  if (std::optional<int64_t> every = op.getCheckpointEvery();
      every && *every % strategy.getChunk() != 0)
    return op.emitOpError()
           << "strategy: checkpoint_every must be a multiple of the chunk ("
           << strategy.getChunk() << "), got " << *every
           << " (the scan has the state at chunk boundaries only)";
  if (strategy.getRecurrenceBelow() != 0 &&
      (op.getCuSeqlens() || op.getStateIndices() || op.getCheckpoints()))
    return op.emitOpError()
           << "strategy: recurrence_below must be 0 with cu_seqlens, "
              "state_indices or checkpoints (the recurrence kernel takes "
              "none of them)";
  auto q = cast<RankedTensorType>(op.getQ().getType());
  auto v = cast<RankedTensorType>(op.getV().getType());
  // q, k and v of any type the op takes: f32 ones the scan rounds to bf16.
  int64_t keyDim = q.getDimSize(3), valueDim = v.getDimSize(3);
  if (keyDim % 16 != 0)
    return op.emitOpError() << "strategy: the chunked scan needs K to be a "
                               "multiple of 16, got "
                            << keyDim;
  for (int64_t tile : {strategy.getValueTile(), strategy.getNarrowValueTile()})
    if (tile != 0 && valueDim % tile != 0)
      return op.emitOpError() << "strategy: value tile " << tile
                              << " does not divide V = " << valueDim;
  if (strategy.getContextSegments() == 1)
    return success();
  if (strategy.getRecurrenceBelow() != 0 || op.getCuSeqlens() ||
      op.getStateIndices() || op.getCheckpoints())
    return op.emitOpError()
           << "strategy: context_segments must be 1 with recurrence_below, "
              "cu_seqlens, state_indices or checkpoints (segments are "
              "scanned for equal-length sequences with their own states)";
  // The segments' transitions are K more state columns, in the tile the
  // segments use.
  int64_t tile = strategy.getNarrowValueTile() ? strategy.getNarrowValueTile()
                                               : strategy.getValueTile();
  if (keyDim % tile != 0)
    return op.emitOpError()
           << "strategy: context_segments needs the value tile the segments "
              "use ("
           << tile << ") to divide K = " << keyDim
           << " (the transitions are K more state columns)";
  return success();
}
