//===- GdnToGPU.cpp - gdn delta-rule ops to GPU kernels -------------------===//
//
// The column recurrence: one thread per state column, the column in
// registers across tokens, q and k staged in workgroup memory.
//
//===----------------------------------------------------------------------===//

#include "gdn/Conversion/GdnToGPU/GdnToGPU.h"
#include "gdn/Conversion/Passes.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Utils/TensorBuilders.h"

#include "KernelBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::gdn {
#define GEN_PASS_DEF_CONVERTGDNTOGPUPASS
#include "gdn/Conversion/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// The pieces of either delta-rule op the kernel needs. Token-indexed
/// operands have a T dimension only for the prefill op.
struct RecurrenceOperands {
  Value q, k, v, g, beta, state; // state may be null (zeros)
  RankedTensorType oType, stateType;
  float scale;
  bool hasTokens;
  int64_t groupSize;
  // A pool of states: `state` is the pool [S, Hv, K, V], read at
  // readIndices[b] and written in place at writeIndices[b].
  Value readIndices = {}, writeIndices = {};
  // Raw gates: g and beta are a Qwen-style layer's a and b, the gates
  // computed from them and A_log, dt_bias ([Hv]) as they are read.
  Value aLog = {}, dtBias = {};
  // Speculative verify: the second result is the state after every token
  // ([B, T, Hv, K, V]), and a pool is only read.
  bool everyState = false;
};

/// Emits the launch; returns the result buffers {o, final state}: `om`
/// and `sm` where given, else new ones.
std::pair<Value, Value>
buildRecurrenceLaunch(OpBuilder &b, Location loc, const RecurrenceOperands &in,
                      int64_t blockColumns, int64_t keySplits, Value om = {},
                      Value sm = {}, gpu::LaunchOp *built = nullptr) {
  Type f32 = b.getF32Type();
  int64_t rank = in.oType.getRank();
  int64_t valueHeads = in.oType.getDimSize(rank - 2);
  int64_t valueDim = in.oType.getDimSize(rank - 1);
  int64_t keyDim = cast<RankedTensorType>(in.q.getType()).getShape().back();
  int64_t columnTiles = (valueDim + blockColumns - 1) / blockColumns;
  // Each column's K rows are split over `keySplits` groups of threads; a
  // thread holds keyDim / keySplits state values.
  if (keyDim % keySplits != 0)
    keySplits = 1;
  int64_t rowsPerThread = keyDim / keySplits;
  int64_t threads = blockColumns * keySplits;

  Value qm = toBuffer(b, loc, in.q), km = toBuffer(b, loc, in.k);
  Value vm = toBuffer(b, loc, in.v), gm = toBuffer(b, loc, in.g);
  Value betam = toBuffer(b, loc, in.beta);
  Value aLogm = in.aLog ? toBuffer(b, loc, in.aLog) : Value();
  Value dtBiasm = in.dtBias ? toBuffer(b, loc, in.dtBias) : Value();
  bool pooled = static_cast<bool>(in.readIndices);
  // A pool is updated in place (unless every token's state is a result):
  // its buffer is written (one-shot bufferization copies it first unless
  // the caller's buffer is writable).
  bool inPlace = pooled && !in.everyState;
  Value statem = in.state ? toBuffer(b, loc, in.state, /*readOnly=*/!inPlace)
                          : Value();
  Value readm, writem, slots;
  if (pooled) {
    readm = toBuffer(b, loc, in.readIndices);
    writem = toBuffer(b, loc, in.writeIndices ? in.writeIndices
                                              : in.readIndices);
    slots = memref::DimOp::create(b, loc, statem, 0);
  }
  if (inPlace)
    sm = statem;

  Value batch = memref::DimOp::create(b, loc, vm, 0);
  Value tokens = in.hasTokens ? memref::DimOp::create(b, loc, vm, 1).getResult()
                              : indexConstant(b, loc, 1);
  // The results have the op's declared types; their dynamic sizes are the
  // batch and token counts of the inputs.
  SmallVector<Value> oSizes, sSizes;
  if (in.oType.isDynamicDim(0))
    oSizes.push_back(batch);
  if (in.hasTokens && in.oType.isDynamicDim(1))
    oSizes.push_back(tokens);
  if (in.stateType.isDynamicDim(0) && !inPlace)
    sSizes.push_back(batch);
  if (in.everyState && in.stateType.isDynamicDim(1))
    sSizes.push_back(tokens);
  auto oMemref =
      MemRefType::get(in.oType.getShape(), in.oType.getElementType());
  // A bf16 state is storage: read widened, the final state rounded.
  Type stateElement = in.stateType.getElementType();
  auto sMemref = MemRefType::get(in.stateType.getShape(), stateElement);
  if (!om)
    om = memref::AllocOp::create(b, loc, oMemref, oSizes);
  if (!sm)
    sm = memref::AllocOp::create(b, loc, sMemref, sSizes);

  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto stagedType =
      MemRefType::get({keyDim}, f32, MemRefLayoutAttrInterface(), workgroup);
  auto partialType =
      MemRefType::get({threads}, f32, MemRefLayoutAttrInterface(), workgroup);
  Value one = indexConstant(b, loc, 1);
  auto launch = gpu::LaunchOp::create(
      b, loc, indexConstant(b, loc, valueHeads * columnTiles), batch, one,
      indexConstant(b, loc, threads), one, one, nullptr, nullptr, ValueRange{},
      TypeRange{stagedType, stagedType, partialType});

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value qs = launch.getWorkgroupAttributions()[0];
  Value ks = launch.getWorkgroupAttributions()[1];
  Value partials = launch.getWorkgroupAttributions()[2];
  Value blockX = launch.getBlockIds().x;
  Value bIdx = launch.getBlockIds().y;
  Value threadId = launch.getThreadIds().x;
  Value thread = arith::RemUIOp::create(b, loc, threadId,
                                        indexConstant(b, loc, blockColumns));
  Value split = arith::DivUIOp::create(b, loc, threadId,
                                       indexConstant(b, loc, blockColumns));
  Value firstRow = arith::MulIOp::create(b, loc, split,
                                         indexConstant(b, loc, rowsPerThread));
  auto rowIndex = [&](OpBuilder &nb, Location nl, int64_t j) {
    return arith::AddIOp::create(nb, nl, firstRow, indexConstant(nb, nl, j))
        .getResult();
  };
  Value head = arith::DivUIOp::create(b, loc, blockX,
                                      indexConstant(b, loc, columnTiles));
  Value tile = arith::RemUIOp::create(b, loc, blockX,
                                      indexConstant(b, loc, columnTiles));
  Value column = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, tile, indexConstant(b, loc, blockColumns)),
      thread);
  Value keyHead =
      arith::DivUIOp::create(b, loc, head, indexConstant(b, loc, in.groupSize));
  // Threads past V (when V is not a multiple of the block) still stage q/k
  // and meet the barriers; they load column 0 and store nothing.
  Value active = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       column, indexConstant(b, loc, valueDim));
  Value safeColumn =
      arith::SelectOp::create(b, loc, active, column, indexConstant(b, loc, 0));
  Value zeroF = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));

  auto tokenIndices = [&](Value t, Value h, ArrayRef<Value> rest) {
    SmallVector<Value> idx = {bIdx};
    if (in.hasTokens)
      idx.push_back(t);
    idx.push_back(h);
    idx.append(rest.begin(), rest.end());
    return idx;
  };
  auto loadF32 = [&](OpBuilder &nb, Location nl, Value m, ArrayRef<Value> idx) {
    Value x = memref::LoadOp::create(nb, nl, m, idx);
    return convertFloat(nb, nl, x, f32);
  };

  // The entry's slot of a pool, and whether it names one: -1 and anything
  // outside [0, S) read zeros and write nothing.
  auto slotOf = [&](Value indices) {
    return poolSlot(b, loc,
                    memref::LoadOp::create(b, loc, indices, ValueRange{bIdx}),
                    slots);
  };
  SmallVector<Value> initial;
  if (pooled) {
    auto [slot, valid] = slotOf(readm);
    SmallVector<Type> types(rowsPerThread, f32);
    auto read = scf::IfOp::create(b, loc, types, valid, /*withElse=*/true);
    OpBuilder::InsertionGuard readGuard(b);
    b.setInsertionPointToStart(read.thenBlock());
    SmallVector<Value> values;
    for (int64_t j = 0; j < rowsPerThread; ++j)
      values.push_back(loadF32(b, loc, statem,
                               {slot, head, rowIndex(b, loc, j), safeColumn}));
    scf::YieldOp::create(b, loc, values);
    b.setInsertionPointToStart(read.elseBlock());
    scf::YieldOp::create(b, loc, SmallVector<Value>(rowsPerThread, zeroF));
    initial.assign(read.getResults().begin(), read.getResults().end());
  }
  for (int64_t j = 0; j < rowsPerThread && !pooled; ++j) {
    if (!statem) {
      initial.push_back(zeroF);
      continue;
    }
    initial.push_back(
        loadF32(b, loc, statem, {bIdx, head, rowIndex(b, loc, j), safeColumn}));
  }
  // Sums a per-thread value over the key splits of each column, through
  // workgroup memory; every thread of the column gets the total.
  auto sumOverSplits = [&](OpBuilder &nb, Location nl, Value value) {
    if (keySplits == 1)
      return value;
    memref::StoreOp::create(nb, nl, value, partials, ValueRange{threadId});
    gpu::BarrierOp::create(nb, nl);
    Value total = memref::LoadOp::create(nb, nl, partials, ValueRange{thread});
    for (int64_t i = 1; i < keySplits; ++i) {
      Value index = arith::AddIOp::create(
          nb, nl, thread, indexConstant(nb, nl, i * blockColumns));
      total = arith::AddFOp::create(
          nb, nl, total,
          memref::LoadOp::create(nb, nl, partials, ValueRange{index}));
    }
    // The buffer is reused by the next sum.
    gpu::BarrierOp::create(nb, nl);
    return total;
  };

  auto body = [&](OpBuilder &nb, Location nl, Value t, ValueRange held) {
    // Stage q_t and k_t of the key head in workgroup memory, widened.
    scf::ForOp::create(
        nb, nl, threadId, indexConstant(nb, nl, keyDim),
        indexConstant(nb, nl, threads), ValueRange{},
        [&](OpBuilder &lb, Location ll, Value i, ValueRange) {
          memref::StoreOp::create(
              lb, ll, loadF32(lb, ll, qm, tokenIndices(t, keyHead, {i})), qs,
              ValueRange{i});
          memref::StoreOp::create(
              lb, ll, loadF32(lb, ll, km, tokenIndices(t, keyHead, {i})), ks,
              ValueRange{i});
          scf::YieldOp::create(lb, ll);
        });
    gpu::BarrierOp::create(nb, nl);
    Value gate = loadF32(nb, nl, gm, tokenIndices(t, head, {}));
    Value beta = loadF32(nb, nl, betam, tokenIndices(t, head, {}));
    if (aLogm)
      std::tie(gate, beta) = gatesFromRaw(
          nb, nl, gate, beta,
          memref::LoadOp::create(nb, nl, aLogm, ValueRange{head}),
          memref::LoadOp::create(nb, nl, dtBiasm, ValueRange{head}));
    Value decay = exponential(nb, nl, gate);
    Value value = loadF32(nb, nl, vm, tokenIndices(t, head, {safeColumn}));

    // Four partial sums shorten the dependent chain of FMAs.
    constexpr int kPartials = 4;
    auto dot = [&](ArrayRef<Value> lhs, ArrayRef<Value> rhs) {
      SmallVector<Value> partial(kPartials, zeroF);
      for (auto [i, pair] : llvm::enumerate(llvm::zip_equal(lhs, rhs)))
        partial[i % kPartials] =
            multiplyAdd(nb, nl, std::get<0>(pair), std::get<1>(pair),
                        partial[i % kPartials]);
      Value sum = arith::AddFOp::create(nb, nl, partial[0], partial[1]);
      Value sum2 = arith::AddFOp::create(nb, nl, partial[2], partial[3]);
      return arith::AddFOp::create(nb, nl, sum, sum2).getResult();
    };
    // Phase 1: the read under the key. Phase 2, after a barrier (which also
    // keeps the compiler from holding all K key values in registers across
    // the phases): the update and the read with the query, element by
    // element, so that only the state column stays live.
    auto staged = [&](Value buffer, int64_t j) {
      return memref::LoadOp::create(nb, nl, buffer,
                                    ValueRange{rowIndex(nb, nl, j)})
          .getResult();
    };
    SmallVector<Value> old(held.begin(), held.end());
    SmallVector<Value> keys;
    for (int64_t j = 0; j < rowsPerThread; ++j)
      keys.push_back(staged(ks, j));
    Value read = sumOverSplits(nb, nl, dot(old, keys));
    Value decayedRead = arith::MulFOp::create(nb, nl, decay, read);
    Value error = arith::SubFOp::create(nb, nl, value, decayedRead);
    Value delta = arith::MulFOp::create(nb, nl, beta, error);
    if (keySplits == 1)
      gpu::BarrierOp::create(nb, nl);
    SmallVector<Value> updated;
    SmallVector<Value> partial(kPartials, zeroF);
    for (int64_t j = 0; j < rowsPerThread; ++j) {
      Value write = arith::MulFOp::create(nb, nl, staged(ks, j), delta);
      updated.push_back(multiplyAdd(nb, nl, decay, old[j], write));
      partial[j % kPartials] = multiplyAdd(
          nb, nl, updated.back(), staged(qs, j), partial[j % kPartials]);
    }
    Value out = sumOverSplits(
        nb, nl,
        arith::AddFOp::create(
            nb, nl, arith::AddFOp::create(nb, nl, partial[0], partial[1]),
            arith::AddFOp::create(nb, nl, partial[2], partial[3])));
    Value scaled = arith::MulFOp::create(
        nb, nl, out,
        arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(in.scale)));
    Value stored = convertFloat(nb, nl, scaled, in.oType.getElementType());
    Value firstSplit = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq,
                                             split, indexConstant(nb, nl, 0));
    Value writes = arith::AndIOp::create(nb, nl, active, firstSplit);
    scf::IfOp::create(nb, nl, writes, [&](OpBuilder &ib, Location il) {
      memref::StoreOp::create(ib, il, stored, om,
                              tokenIndices(t, head, {column}));
      scf::YieldOp::create(ib, il);
    });
    if (in.everyState)
      scf::IfOp::create(nb, nl, active, [&](OpBuilder &ib, Location il) {
        for (int64_t j = 0; j < rowsPerThread; ++j)
          memref::StoreOp::create(
              ib, il, convertFloat(ib, il, updated[j], stateElement), sm,
              tokenIndices(t, head, {rowIndex(ib, il, j), column}));
        scf::YieldOp::create(ib, il);
      });
    // Staging of the next token must wait for every thread's reads.
    gpu::BarrierOp::create(nb, nl);
    return updated;
  };

  SmallVector<Value> final;
  if (in.hasTokens) {
    auto loop = scf::ForOp::create(
        b, loc, indexConstant(b, loc, 0), tokens, one, initial,
        [&](OpBuilder &nb, Location nl, Value t, ValueRange iterArgs) {
          scf::YieldOp::create(nb, nl, body(nb, nl, t, iterArgs));
        });
    final.assign(loop.getResults().begin(), loop.getResults().end());
  } else {
    final = body(b, loc, Value(), initial);
  }
  Value stateRow = bIdx, writes = active;
  if (inPlace) {
    auto [slot, valid] = slotOf(writem);
    stateRow = slot;
    writes = arith::AndIOp::create(b, loc, active, valid);
  }
  if (!in.everyState)
    scf::IfOp::create(b, loc, writes, [&](OpBuilder &ib, Location il) {
      for (int64_t j = 0; j < rowsPerThread; ++j)
        memref::StoreOp::create(
            ib, il, convertFloat(ib, il, final[j], stateElement), sm,
            ValueRange{stateRow, head, rowIndex(ib, il, j), column});
      scf::YieldOp::create(ib, il);
    });
  gpu::TerminatorOp::create(b, loc);
  if (built)
    *built = launch;
  return {om, sm};
}

template <typename OpTy>
LogicalResult replaceWithLaunch(OpTy op, PatternRewriter &rewriter,
                                const RecurrenceOperands &in,
                                int64_t blockColumns, int64_t keySplits) {
  Location loc = op.getLoc();
  auto [om, sm] =
      buildRecurrenceLaunch(rewriter, loc, in, blockColumns, keySplits);
  UnitAttr unit = rewriter.getUnitAttr();
  Value o = bufferization::ToTensorOp::create(rewriter, loc, in.oType, om, unit,
                                              unit);
  Value s = bufferization::ToTensorOp::create(rewriter, loc, in.stateType, sm,
                                              unit, unit);
  rewriter.replaceOp(op, {o, s});
  return success();
}

RecurrenceOperands recurrenceOperands(DeltaRuleOp op) {
  return {op.getQ(),
          op.getK(),
          op.getV(),
          op.getG(),
          op.getBeta(),
          op.getInitialState(),
          cast<RankedTensorType>(op.getO().getType()),
          cast<RankedTensorType>(op.getFinalState().getType()),
          op.getScale().convertToFloat(),
          /*hasTokens=*/true,
          op.getGroupSize(),
          /*readIndices=*/Value(),
          /*writeIndices=*/Value(),
          op.getALog(),
          op.getDtBias()};
}

RecurrenceOperands recurrenceOperands(DeltaRuleStepOp op) {
  return {op.getQ(),
          op.getK(),
          op.getV(),
          op.getG(),
          op.getBeta(),
          op.getState(),
          cast<RankedTensorType>(op.getO().getType()),
          cast<RankedTensorType>(op.getNewState().getType()),
          op.getScale().convertToFloat(),
          /*hasTokens=*/false,
          op.getGroupSize(),
          op.getStateIndices(),
          op.getWriteIndices(),
          op.getALog(),
          op.getDtBias()};
}

RecurrenceOperands recurrenceOperands(DeltaRuleVerifyOp op) {
  RecurrenceOperands in{op.getQ(),
                        op.getK(),
                        op.getV(),
                        op.getG(),
                        op.getBeta(),
                        op.getState(),
                        cast<RankedTensorType>(op.getO().getType()),
                        cast<RankedTensorType>(op.getStates().getType()),
                        op.getScale().convertToFloat(),
                        /*hasTokens=*/true,
                        op.getGroupSize(),
                        op.getStateIndices(),
                        /*writeIndices=*/Value(),
                        op.getALog(),
                        op.getDtBias()};
  in.everyState = true;
  return in;
}

/// Any delta-rule op to one launch of the column recurrence.
template <typename OpTy> struct DeltaRuleToGPU : OpRewritePattern<OpTy> {
  DeltaRuleToGPU(MLIRContext *ctx, int64_t blockColumns, int64_t keySplits)
      : OpRewritePattern<OpTy>(ctx), blockColumns(blockColumns),
        keySplits(keySplits) {}
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    return replaceWithLaunch(op, rewriter, recurrenceOperands(op), blockColumns,
                             keySplits);
  }
  int64_t blockColumns;
  int64_t keySplits;
};

struct ConvertGdnToGPUPass
    : gdn::impl::ConvertGdnToGPUPassBase<ConvertGdnToGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    if (llvm::Error error = checkGdnToGPUOptions({blockColumns, keySplits})) {
      getOperation().emitError()
          << "convert-gdn-to-gpu: " << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    // A strategy the kernels cannot be built for is an error, not a quiet
    // fall-back to the recurrence.
    WalkResult unbuildable = getOperation().walk([](DeltaRuleOp op) {
      if (op.getStrategyAttr() && failed(checkScanStrategyBuildable(op)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (unbuildable.wasInterrupted())
      return signalPassFailure();
    // Packed sequences, pools and checkpoints are unpacked for the CPU by
    // loops whose bounds are device data here: on CUDA they are operands
    // of the chunked scan (pools also of the decode and verify kernels).
    WalkResult serving = getOperation().walk([](DeltaRuleOp op) {
      if (op.getStrategyAttr() ||
          !(op.getCuSeqlens() || op.getStateIndices() || op.getCheckpoints()))
        return WalkResult::advance();
      if (std::optional<int64_t> every = op.getCheckpointEvery();
          every && *every % 64 != 0) {
        op.emitOpError()
            << "with checkpoint_every = " << *every
            << " has no CUDA lowering: the chunked scan has the state at "
               "chunk boundaries, so on CUDA checkpoints come every multiple "
               "of 64 tokens; compile it with --target=cpu";
        return WalkResult::interrupt();
      }
      op.emitOpError()
          << "with cu_seqlens, state_indices or checkpoint_every runs on "
             "CUDA as the chunked scan, which needs bf16 or f16 q, k and v, "
             "K a multiple of 16 and a state tile that fits a "
             "multiprocessor (gdn-choose-scan-strategy gave it none); "
             "compile it with --target=cpu";
      return WalkResult::interrupt();
    });
    if (serving.wasInterrupted())
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateGdnToGPURecurrencePatterns(patterns, blockColumns, keySplits);
    populateGdnToGPUChunkedScanPatterns(patterns, blockColumns, keySplits);
    populateGdnToGPUAttentionPatterns(patterns, splitAttentionOperands,
                                      attentionVectorRows);
    // The walk driver neither folds nor hoists constants: the greedy driver
    // would move the kernel's index constants into the host function.
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    // What is left of the dialect has no GPU lowering yet (the layer ops):
    // said here, instead of as "op was not bufferized" two stages later.
    WalkResult left = getOperation().walk([&](Operation *op) {
      if (!isa<GdnDialect>(op->getDialect()))
        return WalkResult::advance();
      if (auto attention = dyn_cast<CausalAttentionOp>(op)) {
        op->emitOpError()
            << "has no CUDA lowering for heads of "
            << cast<RankedTensorType>(attention.getQ().getType()).getDimSize(3)
            << " query/key and "
            << cast<RankedTensorType>(attention.getV().getType()).getDimSize(3)
            << " value elements: the tensor-core kernel takes at most 256 "
               "and 128 (gdn-decompose-layers decomposes the others)";
        return WalkResult::interrupt();
      }
      op->emitOpError()
          << "has no CUDA lowering: the CUDA pipeline lowers gdn.delta_rule "
             "and gdn.delta_rule_step; layer ops compile for the CPU "
             "(gdn-lower-to-cpu, gdn-compile --target=cpu)";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace

gpu::LaunchOp mlir::gdn::buildDeltaRuleRecurrence(OpBuilder &b, DeltaRuleOp op,
                                                  Value om, Value sm,
                                                  int64_t blockColumns,
                                                  int64_t keySplits) {
  gpu::LaunchOp launch;
  buildRecurrenceLaunch(b, op.getLoc(), recurrenceOperands(op), blockColumns,
                        keySplits, om, sm, &launch);
  return launch;
}

void mlir::gdn::populateGdnToGPURecurrencePatterns(RewritePatternSet &patterns,
                                                   int64_t blockColumns,
                                                   int64_t keySplits) {
  patterns.add<DeltaRuleToGPU<DeltaRuleOp>, DeltaRuleToGPU<DeltaRuleStepOp>,
               DeltaRuleToGPU<DeltaRuleVerifyOp>>(patterns.getContext(),
                                                  blockColumns, keySplits);
}

llvm::Error
mlir::gdn::checkGdnToGPUOptions(const ConvertGdnToGPUPassOptions &options) {
  if (options.blockColumns < 1 || options.blockColumns > 1024)
    return llvm::createStringError("block-columns must be in [1, 1024], but "
                                   "got " +
                                   llvm::Twine(options.blockColumns));
  if (options.keySplits < 1 || options.blockColumns * options.keySplits > 1024)
    return llvm::createStringError(
        "key-splits must be positive and block-columns x key-splits at most "
        "1024, but got key-splits = " +
        llvm::Twine(options.keySplits) +
        " with block-columns = " + llvm::Twine(options.blockColumns));
  return llvm::Error::success();
}
