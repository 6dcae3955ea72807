//===- ChunkedScanToGPU.cpp - gdn.delta_rule as a chunked tensor-core scan ===//
//
// The chunkwise-parallel (WY) form of docs/chunked-delta-rule.md in two
// kernels. Per chunk of C tokens (G the inclusive cumulative log-decay
// inside the chunk):
//
//   A    = strict_lower(beta_i exp(G_i - G_j) k_i.k_j)        (C x C)
//   T    = (I + A)^-1                       (blocked forward substitution)
//   P    = lower(exp(G_i - G_j) q_i.k_j)
//   Vnew = T diag(beta) (V - diag(exp(G)) K S)
//   O    = scale (diag(exp(G)) Q S + P Vnew)
//   S    = exp(G_C) S + K^T diag(exp(G_C - G)) Vnew
//
// Vnew is the U - W S of the WY form (W = T diag(beta exp(G)) K, U =
// T diag(beta) V) with T diag(beta) factored out, so that W and U are never
// formed: the WY kernel computes A, T and P of every chunk at once and
// leaves T diag(beta), P and G in global scratch (at K = V = 128, 16 KiB a
// chunk instead of the 40 of -W, U and P); the state kernel, a block per
// (value head x value-column tile, batch), walks the chunks of its
// sequence in order with the state tile S [K, Vt] in f32 registers (in
// workgroup memory where the state product's tiles do not divide among the
// warps) and computes the last three lines from q, k and v as given (bf16
// copies of f32 inputs, made by the WY kernel). Packed sequences
// and pools of states are operands of the same two kernels
// (ScanSequences.cpp).
//
// Every matrix product runs on tensor cores (mma.sync m16n8k16, f32
// accumulation; f16 operands for f16 inputs, bf16 otherwise): each warp
// takes a fixed group of 16 x 8 output tiles, loads its fragments with
// ldmatrix from 16-bit tiles stored as they are produced (row-major, or
// depth-major and loaded transposed), and keeps the accumulators in
// registers; the epilogue of a product applies
// masks, decays and the destination, two neighbours per store. The solve
// stays in f32 on the CUDA cores. Rows past the end of the sequence
// are zero (beta = 0, g = 0, k = 0), so they change nothing.
//
//===----------------------------------------------------------------------===//

#include "ChunkedScan.h"

#include "gdn/Conversion/GdnToGPU/GdnToGPU.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::scan;

namespace {
/// Whether a launch of role `kernel` runs the state kernel (with copy
/// warps).
bool isStateKernel(StringRef kernel) {
  return kernel == "state" || kernel == "segment_partials" ||
         kernel == "segment_outputs";
}

/// gdn.delta_rule with a strategy to the chunked tensor-core scan.
struct ChunkedScanToGPU : OpRewritePattern<DeltaRuleOp> {
  ChunkedScanToGPU(MLIRContext *ctx, int64_t blockColumns, int64_t keySplits)
      : OpRewritePattern<DeltaRuleOp>(ctx, /*benefit=*/2),
        blockColumns(blockColumns), keySplits(keySplits) {}
  /// The recurrence's mapping, for the calls below recurrence_below.
  int64_t blockColumns, keySplits;

  LogicalResult matchAndRewrite(DeltaRuleOp op,
                                PatternRewriter &rewriter) const override {
    ScanStrategyAttr strategy = op.getStrategyAttr();
    if (!strategy)
      return rewriter.notifyMatchFailure(op, "no scan strategy");
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    auto vType = cast<RankedTensorType>(op.getV().getType());
    auto oType = cast<RankedTensorType>(op.getO().getType());
    auto stateType = cast<RankedTensorType>(op.getFinalState().getType());
    Type element = qType.getElementType();
    ScanShape shape = shapeOf(op, strategy.getValueTile());
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value qm = toBuffer(b, loc, op.getQ()), km = toBuffer(b, loc, op.getK());
    Value vm = toBuffer(b, loc, op.getV()), gm = toBuffer(b, loc, op.getG());
    Value betam = toBuffer(b, loc, op.getBeta());
    // A pool is updated in place: its buffer is written (one-shot
    // bufferization copies it first unless the caller's buffer is
    // writable).
    bool pooled = static_cast<bool>(op.getStateIndices());
    Value statem = op.getInitialState()
                       ? toBuffer(b, loc, op.getInitialState(),
                                  /*readOnly=*/!pooled)
                       : Value();
    Value batch = memref::DimOp::create(b, loc, vm, 0);
    Value tokens = memref::DimOp::create(b, loc, vm, 1);
    // Packed sequences: N = max(entries - 1, 0) sequences, each a block row
    // of the state kernel and a state row.
    Value offsetsm, sequences;
    if (Value offsets = op.getCuSeqlens()) {
      offsetsm = toBuffer(b, loc, offsets);
      Value entries = memref::DimOp::create(b, loc, offsetsm, 0);
      sequences = arith::MaxSIOp::create(
          b, loc,
          arith::SubIOp::create(b, loc, entries, indexConstant(b, loc, 1)),
          indexConstant(b, loc, 0));
    }
    Value stateRows = sequences ? sequences : batch;
    // The dynamic sizes of a [B, T, ...] type (o, and the bf16 copies of q,
    // k and v).
    auto tokenSizes = [&](RankedTensorType type) {
      SmallVector<Value> sizes;
      if (type.isDynamicDim(0))
        sizes.push_back(batch);
      if (type.isDynamicDim(1))
        sizes.push_back(tokens);
      return sizes;
    };
    SmallVector<Value> sSizes;
    if (stateType.isDynamicDim(0))
      sSizes.push_back(stateRows);
    Value om = memref::AllocOp::create(
        b, loc, MemRefType::get(oType.getShape(), oType.getElementType()),
        tokenSizes(oType));
    Value sm = pooled ? statem
                      : memref::AllocOp::create(
                            b, loc,
                            MemRefType::get(stateType.getShape(),
                                            stateType.getElementType()),
                            sSizes)
                            .getResult();
    // Checkpoints: [B, T / N, Hv, K, V], or [floor(total / N), Hv, K, V]
    // for packed sequences.
    Value checkpointsm;
    int64_t every = op.getCheckpointEvery().value_or(0);
    if (Value checkpoints = op.getCheckpoints()) {
      auto type = cast<RankedTensorType>(checkpoints.getType());
      Value perSequence = arith::DivUIOp::create(
          b, loc, tokens, indexConstant(b, loc, every));
      SmallVector<Value> sizes;
      if (offsetsm) {
        if (type.isDynamicDim(0))
          sizes.push_back(perSequence);
      } else {
        if (type.isDynamicDim(0))
          sizes.push_back(batch);
        if (type.isDynamicDim(1))
          sizes.push_back(perSequence);
      }
      checkpointsm = memref::AllocOp::create(
          b, loc, MemRefType::get(type.getShape(), type.getElementType()),
          sizes);
    }
    // Calls of fewer tokens than recurrence_below (f32 q, k and v, which
    // the scan rounds to bf16) run the f32 recurrence into the same
    // buffers, and the scan's kernels return at once; longer calls the
    // other way round (runOnlyIf says why not an scf.if).
    Value scanRuns;
    if (int64_t below = strategy.getRecurrenceBelow()) {
      assert(!offsetsm && !pooled && !op.getCheckpoints() &&
             "verifyScanStrategy said no");
      Value few = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                        tokens, indexConstant(b, loc, below));
      runOnlyIf(
          buildDeltaRuleRecurrence(b, op, om, sm, blockColumns, keySplits),
          few);
      scanRuns = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                       tokens, indexConstant(b, loc, below));
    }
    auto whenScanRuns = [&](Value condition) {
      if (!scanRuns)
        return condition;
      if (!condition)
        return scanRuns;
      return arith::AndIOp::create(b, loc, condition, scanRuns).getResult();
    };

    int64_t valueHeads = vType.getDimSize(2);
    int64_t chunk = shape.chunk;
    // Global scratch between the kernels, per chunk row (Tp = whole chunks).
    Value chunkCount =
        offsetsm ? packedChunkRows(b, loc, tokens, sequences, chunk)
                 : arith::CeilDivUIOp::create(b, loc, tokens,
                                              indexConstant(b, loc, chunk))
                       .getResult();
    Value paddedTokens =
        arith::MulIOp::create(b, loc, chunkCount, indexConstant(b, loc, chunk));
    auto scratchType = [&](ArrayRef<int64_t> inner, Type element) {
      SmallVector<int64_t> dims = {ShapedType::kDynamic, valueHeads,
                                   ShapedType::kDynamic};
      dims.append(inner.begin(), inner.end());
      return MemRefType::get(dims, element);
    };
    // Temporaries like any other: gdn-gpu-device-buffers makes them device
    // allocations freed after their last launch, and gpu-async-region puts
    // them in the stream order of the host code (no synchronization here).
    SmallVector<Value> scratch;
    for (MemRefType type : {scratchType({chunk}, shape.operand),
                            scratchType({chunk}, shape.operand),
                            scratchType({}, b.getF32Type())})
      scratch.push_back(memref::AllocOp::create(
          b, loc, type, ValueRange{batch, paddedTokens}));
    // The state pass copies q, k and v rows straight into the operand
    // type's tiles: other types (f32) get copies, made by the WY kernel.
    Value qHalves = qm, kHalves = km, vHalves = vm;
    if (element != shape.operand) {
      auto copyOf = [&](RankedTensorType type) {
        Value copy = memref::AllocOp::create(
            b, loc, MemRefType::get(type.getShape(), shape.operand),
            tokenSizes(type));
        scratch.push_back(copy);
        return copy;
      };
      qHalves = copyOf(qType);
      kHalves = copyOf(cast<RankedTensorType>(op.getK().getType()));
      vHalves = copyOf(vType);
    }
    ScanBuffers buffers;
    buffers.q = qm;
    buffers.k = km;
    buffers.v = vm;
    buffers.g = gm;
    buffers.beta = betam;
    buffers.state = statem;
    buffers.o = om;
    buffers.finalState = sm;
    buffers.tb = scratch[0];
    buffers.p = scratch[1];
    buffers.gates = scratch[2];
    buffers.qHalves = qHalves;
    buffers.kHalves = kHalves;
    buffers.vHalves = vHalves;
    buffers.groupSize = op.getGroupSize();
    buffers.scale = op.getScale().convertToFloat();
    buffers.offsets = offsetsm;
    buffers.sequences = sequences;
    if (Value aLog = op.getALog()) {
      buffers.aLog = toBuffer(b, loc, aLog);
      buffers.dtBias = toBuffer(b, loc, op.getDtBias());
    }
    buffers.checkpoints = checkpointsm;
    buffers.checkpointEvery = every;
    if (pooled) {
      buffers.readIndices = toBuffer(b, loc, op.getStateIndices());
      if (Value write = op.getWriteIndices())
        buffers.writeIndices = toBuffer(b, loc, write);
    }
    auto mapping = [&](OpBuilder &lb, const ScanShape &tiled, StringRef role) {
      return lb.getDictionaryAttr({
          lb.getNamedAttr("kernel", lb.getStringAttr(role)),
          lb.getNamedAttr("chunk", lb.getI64IntegerAttr(tiled.chunk)),
          lb.getNamedAttr("value_tile", lb.getI64IntegerAttr(tiled.valueTile)),
          lb.getNamedAttr("warps", lb.getI64IntegerAttr(tiled.warps)),
          lb.getNamedAttr(
              "copy_warps",
              lb.getI64IntegerAttr(isStateKernel(role) ? tiled.copyWarps
                                                        : 0)),
          lb.getNamedAttr(
              "mma", lb.getStringAttr(tiled.operand.isF16() ? "m16n8k16.f16"
                                                             : "m16n8k16.bf16")),
      });
    };
    // A launch over (x, y, z) blocks of `threads` threads with `bytes` of
    // workgroup memory, its mapping visible in the IR, and a kernel builder
    // at the start of its body.
    // The outlined kernel is named after its role (`name`, else the
    // role), so that profilers and compute-sanitizer tell them apart.
    auto launchKernel = [&](OpBuilder &lb, Location ll, Value x, Value y,
                            Value z, const ScanShape &mapped, StringRef role,
                            int64_t threads, int64_t bytes,
                            StringRef name = {}) {
      Value one = indexConstant(lb, ll, 1);
      Value sharedBytes =
          arith::ConstantOp::create(lb, ll, lb.getI32IntegerAttr(bytes));
      auto launch =
          gpu::LaunchOp::create(lb, ll, x, y, z, indexConstant(lb, ll, threads),
                                one, one, sharedBytes);
      launch.setFunctionAttr(FlatSymbolRefAttr::get(
          lb.getContext(), ("gdn_scan_" + (name.empty() ? role : name)).str()));
      launch->setAttr("gdn.chunked_scan", mapping(lb, mapped, role));
      OpBuilder kb(lb.getContext());
      kb.setInsertionPointToStart(&launch.getBody().front());
      return std::make_pair(launch, kb);
    };
    {
      // The state-independent part of every chunk, all chunks at once.
      ScanShape whole = shape;
      whole.valueTile = shape.valueDim;
      Value run = whenScanRuns(Value());
      // Packed sequences share the one batch entry.
      auto [launch, kb] = launchKernel(
          b, loc, chunkCount, indexConstant(b, loc, valueHeads),
          offsetsm ? indexConstant(b, loc, 1) : batch, whole, "wy",
          whole.threads(), shape.chunkKernelBytes());
      ScanKernel(kb, loc, shape).buildChunkKernel(launch, buffers);
      if (run)
        runOnlyIf(launch, run);
    }
    // The strategy's narrow tile, for grids that would leave
    // multiprocessors idle, chosen at run time from B (ScanStrategy.cpp
    // says why).
    SmallVector<ScanShape> tilings = {shape};
    if (strategy.getNarrowValueTile() != 0)
      tilings.push_back(shapeOf(op, strategy.getNarrowValueTile()));
    int64_t enoughBlocks = strategy.getNarrowBelowBlocks();
    // Context parallelism (ScanSegments.cpp), chosen at run time: where
    // the batch leaves multiprocessors idle and every segment has at least
    // kMinSegmentChunks chunks. The launches of the path not taken get
    // empty grids, which the runtime skips.
    int64_t segments = strategy.getContextSegments();
    Value segmented, stateGridRows = stateRows;
    auto rowsIfSegmented = [&](Value rows) -> Value {
      return arith::SelectOp::create(b, loc, segmented, rows,
                                     indexConstant(b, loc, 0));
    };
    if (segments > 1) {
      assert(!offsetsm && !pooled && !checkpointsm && !scanRuns &&
             "verifyScanStrategy said no");
      const ScanShape &tiled = tilings.back();
      Value blocks = arith::MulIOp::create(
          b, loc, batch,
          indexConstant(b, loc,
                        valueHeads * (tiled.valueDim / tiled.valueTile)));
      segmented = arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, blocks,
                                indexConstant(b, loc, enoughBlocks)),
          arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::uge, tokens,
              indexConstant(b, loc, segments * kMinSegmentChunks * chunk)));
      stateGridRows = arith::SelectOp::create(
          b, loc, segmented, indexConstant(b, loc, 0), stateRows);
      Value perSegment = arith::CeilDivUIOp::create(
          b, loc, tokens, indexConstant(b, loc, segments));
      buffers.segments = segments;
      buffers.segmentTokens = arith::MulIOp::create(
          b, loc,
          arith::CeilDivUIOp::create(b, loc, perSegment,
                                     indexConstant(b, loc, chunk)),
          indexConstant(b, loc, chunk));
      Value entries = rowsIfSegmented(arith::MulIOp::create(
          b, loc, batch, indexConstant(b, loc, segments)));
      int64_t keyDim = shape.keyDim, valueDim = shape.valueDim;
      buffers.partials = memref::AllocOp::create(
          b, loc,
          MemRefType::get({ShapedType::kDynamic, valueHeads, keyDim,
                           valueDim + keyDim},
                          b.getF32Type()),
          ValueRange{entries});
      buffers.initials = memref::AllocOp::create(
          b, loc,
          MemRefType::get({ShapedType::kDynamic, valueHeads, keyDim, valueDim},
                          b.getF32Type()),
          ValueRange{entries});
    }
    auto buildLaunch = [&](const ScanShape &tiled, Value condition,
                           int64_t valueTiles, Value rows, SegmentRole role,
                           StringRef kernel, StringRef name = {}) {
      Value run = whenScanRuns(condition);
      auto [launch, kb] =
          launchKernel(b, loc, indexConstant(b, loc, valueHeads * valueTiles),
                       rows, indexConstant(b, loc, 1), tiled, kernel,
                       tiled.stateThreads(), tiled.stateKernelBytes(), name);
      ScanKernel(kb, loc, tiled)
          .buildStateKernel(launch, buffers, valueTiles, role);
      if (run)
        runOnlyIf(launch, run);
    };
    auto buildWholeLaunch = [&](const ScanShape &tiled, Value condition) {
      buildLaunch(tiled, condition, tiled.valueDim / tiled.valueTile,
                  stateGridRows, SegmentRole{}, "state");
    };
    if (tilings.size() == 1) {
      buildWholeLaunch(shape, Value());
    } else {
      // Both launches; the one not chosen returns at once.
      Value blocks = arith::MulIOp::create(
          b, loc, stateRows,
          indexConstant(b, loc,
                        valueHeads * (shape.valueDim / shape.valueTile)));
      Value busy =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, blocks,
                                indexConstant(b, loc, enoughBlocks));
      Value idle =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, blocks,
                                indexConstant(b, loc, enoughBlocks));
      buildWholeLaunch(tilings[0], busy);
      buildWholeLaunch(tilings[1], idle);
    }
    if (segments > 1) {
      const ScanShape &tiled = tilings.back();
      int64_t valueTiles = tiled.valueDim / tiled.valueTile;
      int64_t transitionTiles = tiled.keyDim / tiled.valueTile;
      // 1. The partial states: the first segment's from the true initial
      // state, the middle ones' [L | P] from [0 | I] (the last segment's
      // are never needed).
      buildLaunch(tiled, Value(), valueTiles, rowsIfSegmented(batch),
                  SegmentRole{0, 1, false}, "segment_partials");
      if (segments > 2)
        buildLaunch(tiled, Value(), valueTiles + transitionTiles,
                    rowsIfSegmented(arith::MulIOp::create(
                        b, loc, batch, indexConstant(b, loc, segments - 2))),
                    SegmentRole{1, segments - 2, false}, "segment_partials",
                    "segment_transitions");
      // 2. Every segment's start state.
      {
        auto [launch, kb] = launchKernel(
            b, loc,
            indexConstant(b, loc,
                          valueHeads * (shape.valueDim / kCombineColumns)),
            rowsIfSegmented(batch), indexConstant(b, loc, 1), tiled,
            "segment_combine", shape.keyDim,
            ScanShape::floatBytes(shape.keyDim, kCombineColumns));
        ScanKernel(kb, loc, tiled).buildSegmentCombineKernel(launch, buffers);
      }
      // 3. The outputs and the final state.
      buildLaunch(tiled, Value(), valueTiles,
                  rowsIfSegmented(arith::MulIOp::create(
                      b, loc, batch, indexConstant(b, loc, segments))),
                  SegmentRole{0, segments, true}, "segment_outputs");
    }
    if (checkpointsm && offsetsm) {
      // The rows past the last sequence's checkpoints are zero.
      Value rows = memref::DimOp::create(b, loc, checkpointsm, 0);
      auto [launch, kb] =
          launchKernel(b, loc, rows, indexConstant(b, loc, valueHeads),
                       indexConstant(b, loc, 1), shape, "checkpoint_tail",
                       shape.threads(), /*bytes=*/0);
      ScanKernel(kb, loc, shape).buildCheckpointTailKernel(launch, buffers);
    }
    UnitAttr unit = b.getUnitAttr();
    SmallVector<Value> results = {
        bufferization::ToTensorOp::create(b, loc, oType, om, unit, unit),
        bufferization::ToTensorOp::create(b, loc, stateType, sm, unit, unit)};
    if (checkpointsm)
      results.push_back(bufferization::ToTensorOp::create(
          b, loc, op.getCheckpoints().getType(), checkpointsm, unit, unit));
    rewriter.replaceOp(op, results);
    return success();
  }
};
} // namespace

void mlir::gdn::populateGdnToGPUChunkedScanPatterns(RewritePatternSet &patterns,
                                                    int64_t blockColumns,
                                                    int64_t keySplits) {
  patterns.add<ChunkedScanToGPU>(patterns.getContext(), blockColumns,
                                 keySplits);
}
