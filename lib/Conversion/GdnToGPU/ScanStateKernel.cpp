//===- ScanStateKernel.cpp - the state kernel of the chunked scan ---------===//
//
// One block per (value head x value tile, sequence): the chunks of a
// sequence in order. Copy warps keep the next chunk's operands in flight
// while the compute warps run this chunk's products.
//
//===----------------------------------------------------------------------===//

#include "ChunkedScan.h"
#include "gdn/Utils/TensorBuilders.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::scan;

namespace {
/// The rows of a slot of the row factors.
enum RowFactor : int64_t {
  /// exp(G_C - G): decays Vnew's rows to the chunk's end.
  kToChunkEnd = 0,
  /// exp(G): decays the rows of K S and Q S; its last entry, exp(G_C),
  /// decays the state.
  kFromChunkStart = 1,
};
} // namespace

void ScanKernel::buildStateKernel(gpu::LaunchOp launch, const ScanBuffers &m,
                                  int64_t valueTiles, SegmentRole role) {
  Type f32 = b.getF32Type();
  int64_t chunk = s.chunk, keyDim = s.keyDim, tile = s.valueTile;
  setUp(launch);
  // One block per multiprocessor: registers to spare for larger groups. The
  // register-resident state and Y (stateInRegisters, yInRegisters) rely on
  // the plans that this group size gives.
  maxGroup = kStateMaxGroup;
  bool stateInRegisters = s.stateInRegisters();
  bool yInRegisters = s.yInRegisters();
  Value blockX = launch.getBlockIds().x;
  // The block's sequence: a batch entry, or a packed sequence.
  Value sequenceIndex = launch.getBlockIds().y;
  Value head = arith::DivUIOp::create(b, loc, blockX, c(b, loc, valueTiles));
  Value firstColumn = mul(
      b, loc, arith::RemUIOp::create(b, loc, blockX, c(b, loc, valueTiles)),
      c(b, loc, tile));
  Value keyHead = arith::DivUIOp::create(b, loc, head, c(b, loc, m.groupSize));
  SequenceSpan sequence{sequenceIndex, c(b, loc, 0),
                        memref::DimOp::create(b, loc, m.v, 1), c(b, loc, 0)};
  // A segment of a batch entry's sequence (ScanSegments.cpp), or null.
  Value segment;
  if (m.packed())
    sequence = packedSequence(b, loc, m, sequenceIndex);
  else if (role.segmented())
    std::tie(sequence, segment) =
        segmentSpan(b, loc, m, sequenceIndex, role);
  Value batch = sequence.batch, tokens = sequence.end;
  // The row of the state operands: the packed sequence's, or the batch
  // entry's.
  Value stateIndex = m.packed() ? sequenceIndex : batch;
  // Columns past V: the segment's transition, whose values are zero
  // (null: every block's columns are v's).
  Value transition;
  if (valueTiles * tile > s.valueDim)
    transition = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                       firstColumn, c(b, loc, s.valueDim));
  // Chunk i's first token, and its first row of the WY scratch.
  auto chunkStart = [&](OpBuilder &nb, Location nl, Value i) {
    return add(nb, nl, sequence.start, mul(nb, nl, i, c(nb, nl, chunk)));
  };
  auto scratchStart = [&](OpBuilder &nb, Location nl, Value i) {
    return mul(nb, nl, add(nb, nl, sequence.firstChunk, i), c(nb, nl, chunk));
  };

  int64_t offset = 0;
  qB = carveHalfSlots(2, chunk, keyDim, offset);
  kB = carveHalfSlots(2, chunk, keyDim, offset);
  tB = carveHalfSlots(2, chunk, chunk, offset);
  pB = carveHalfSlots(2, chunk, chunk, offset);
  vB = carveHalfSlots(2, chunk, tile, offset);
  gateRows = carve({2, chunk}, f32, offset);
  rowFactors = carve({2, 2, chunk}, f32, offset);
  xB = carveHalves(chunk, tile, offset);
  vN = carveHalves(chunk, tile, offset);
  vD = carveHalves(chunk, tile, offset);
  sB = carveHalves(keyDim, tile, offset);
  if (!yInRegisters)
    ys = carveFloats(chunk, tile, offset);
  if (!stateInRegisters)
    ss = carveFloats(keyDim, tile, offset);
  assert(offset == s.stateKernelBytes() && "layout and size disagree");

  Value zero = f(b, loc, 0.0f);
  auto widen = [&](OpBuilder &nb, Location nl, Value x) {
    return convertFloat(nb, nl, x, f32);
  };
  Type tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  auto inSlot = [](HalfTile tile, Value slot) {
    tile.slot = slot;
    return tile;
  };
  Value chunks = arith::CeilDivUIOp::create(
      b, loc, arith::SubIOp::create(b, loc, tokens, sequence.start),
      c(b, loc, chunk));
  Value lastChunk = arith::SubIOp::create(b, loc, chunks, c(b, loc, 1));
  // The hand-over of chunk i: the copy warps have seen its operands land,
  // and the compute warps are done with chunk i - 1, whose slots the copy
  // warps fill next.
  auto handOver = [&](OpBuilder &nb, Location nl) {
    rolesBarrier(nb, nl, /*id=*/1, s.stateThreads());
  };
  Value computes = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid,
                                         c(b, loc, s.threads()));
  auto roles = scf::IfOp::create(b, loc, TypeRange(), computes,
                                 /*withElseRegion=*/true);

  // The copy warps: every operand of chunk `index` (q, k and v as given,
  // the rest prepared by the WY kernel) goes by cp.async straight into
  // slot `slot` of its tile, a whole chunk ahead of its use.
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(roles.elseBlock()->getTerminator());
    Dealing copyThreads{
        arith::SubIOp::create(b, loc, tid, c(b, loc, s.threads())),
        32 * s.copyWarps};
    // The chunk's log-decays go 4 floats (16 bytes) per copy.
    Value gateThread = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ult, copyThreads.thread,
        c(b, loc, chunk / 4));
    auto copyChunkAsync = [&](Value index, Value slot) {
      Value start = chunkStart(b, loc, index);
      Value rows = scratchStart(b, loc, index);
      // The chunk's rows of WY scratch ([B, Hv, Tp, C]).
      auto copyChunkRows = [&](const HalfTile &tileTo, Value source) {
        forEachVector(
            chunk, chunk,
            [&](OpBuilder &nb, Location nl, Value r, Value col) {
              nvgpu::DeviceAsyncCopyOp::create(
                  nb, nl, tokenType, tileTo.halves, tileTo.at(r, col), source,
                  ValueRange{batch, head, add(nb, nl, rows, r), col},
                  nb.getIndexAttr(8), Value(), nb.getUnitAttr());
            },
            copyThreads);
      };
      // Partial states need neither Q nor P (no outputs).
      wholeOrPartialChunk(start, tokens, [&](bool partial) {
        if (role.outputs)
          copyTokenRows(inSlot(qB, slot), keyDim,
                        {m.qHalves, batch, keyHead, Value()}, start, tokens,
                        partial, copyThreads);
        copyTokenRows(inSlot(kB, slot), keyDim,
                      {m.kHalves, batch, keyHead, Value()}, start, tokens,
                      partial, copyThreads);
        auto copyValues = [&] {
          copyTokenRows(inSlot(vB, slot), tile,
                        {m.vHalves, batch, head, firstColumn}, start, tokens,
                        partial, copyThreads);
        };
        if (!transition)
          return copyValues();
        // Only the columns of v have values to copy.
        OpBuilder::InsertionGuard valuesGuard(b);
        auto guarded =
            scf::IfOp::create(b, loc, transition, /*withElse=*/true);
        b.setInsertionPointToStart(guarded.elseBlock());
        copyValues();
      });
      copyChunkRows(inSlot(tB, slot), m.tb);
      if (role.outputs)
        copyChunkRows(inSlot(pB, slot), m.p);
      scf::IfOp::create(b, loc, gateThread, [&](OpBuilder &nb, Location nl) {
        Value first = mul(nb, nl, copyThreads.thread, c(nb, nl, 4));
        nvgpu::DeviceAsyncCopyOp::create(
            nb, nl, tokenType, gateRows, ValueRange{slot, first}, m.gates,
            ValueRange{batch, head, add(nb, nl, rows, first)},
            nb.getIndexAttr(4), Value(), nb.getUnitAttr());
        scf::YieldOp::create(nb, nl);
      });
      // The group's token only orders the IR: cp.async.wait_group counts
      // the thread's groups.
      return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType,
                                                     ValueRange{})
          .getResult();
    };
    auto waitForCopies = [&](Value group) {
      nvgpu::DeviceAsyncWaitOp::create(b, loc, group, b.getI32IntegerAttr(0));
    };
    // No chunk (T = 0) copies nothing: the empty operands may have no
    // memory at all, and the block only writes the initial state back.
    Value anyChunk = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                           chunks, c(b, loc, 0));
    auto first = scf::IfOp::create(b, loc, TypeRange{tokenType}, anyChunk,
                                   /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard firstGuard(b);
      b.setInsertionPointToStart(first.thenBlock());
      scf::YieldOp::create(b, loc, copyChunkAsync(c(b, loc, 0), c(b, loc, 0)));
      b.setInsertionPointToStart(first.elseBlock());
      scf::YieldOp::create(b, loc,
                           nvgpu::DeviceAsyncCreateGroupOp::create(
                               b, loc, tokenType, ValueRange{})
                               .getResult());
    }
    Value firstGroup = first.getResult(0);
    auto loop = scf::ForOp::create(
        b, loc, c(b, loc, 0), chunks, c(b, loc, 1), ValueRange{firstGroup},
        [&](OpBuilder &lb, Location ll, Value chunkIndex, ValueRange carried) {
          OpBuilder::InsertionGuard loopGuard(b);
          Value slot = arith::RemUIOp::create(lb, ll, chunkIndex, c(lb, ll, 2));
          Value nextSlot = arith::SubIOp::create(lb, ll, c(lb, ll, 1), slot);
          // The last iteration fetches nothing: a copy after the last
          // hand-over would write slots whose readers no barrier orders it
          // after (racecheck: a write-after-read hazard).
          Value more = arith::CmpIOp::create(
              lb, ll, arith::CmpIPredicate::ult, chunkIndex, lastChunk);
          auto yield = scf::YieldOp::create(lb, ll, carried);
          b.setInsertionPoint(yield);
          waitForCopies(carried[0]);
          handOver(b, loc);
          auto fetch = scf::IfOp::create(b, loc, TypeRange{tokenType}, more,
                                         /*withElseRegion=*/true);
          b.setInsertionPointToStart(fetch.thenBlock());
          scf::YieldOp::create(
              b, loc,
              copyChunkAsync(add(b, loc, chunkIndex, c(b, loc, 1)), nextSlot));
          b.setInsertionPointToStart(fetch.elseBlock());
          scf::YieldOp::create(b, loc, carried[0]);
          yield->setOperands(fetch.getResults());
        });
    waitForCopies(loop.getResult(0));
  }

  // The compute warps.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(roles.thenBlock()->getTerminator());
  // The state tile in bf16, and in f32: in workgroup memory, or in
  // registers, where each lane holds the elements that the state product
  // gives it. A product of no terms (only init and epilogue) hands the
  // elements out in the product's order; the chunk loop carries them.
  // The state row read and the one written: the sequence's, or its slots
  // of the pool (none outside it: zeros read, nothing written).
  StateRow readRow = stateRow(b, loc, m, stateIndex, /*write=*/false);
  StateRow writeRow = stateRow(b, loc, m, stateIndex, /*write=*/true);
  // Segments: only the last one's state is the final state.
  if (role.segmented() && role.outputs)
    writeRow.valid =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, segment,
                              c(b, loc, m.segments - 1));
  // The true initial state of the sequence.
  auto sequenceInitial = [&](OpBuilder &nb, Location nl, Value r,
                             Value col) -> Value {
    if (!m.state)
      return zero;
    auto read = [&](OpBuilder &ib, Location il) {
      return widen(ib, il,
                   load(ib, il, m.state,
                        {readRow.row, head, r, add(ib, il, firstColumn, col)}));
    };
    if (!readRow.valid)
      return read(nb, nl);
    return scf::IfOp::create(
               nb, nl, readRow.valid,
               [&](OpBuilder &ib, Location il) {
                 scf::YieldOp::create(ib, il, read(ib, il));
               },
               [&](OpBuilder &ib, Location il) {
                 scf::YieldOp::create(ib, il, zero);
               })
        .getResult(0);
  };
  auto initialElement = [&](OpBuilder &nb, Location nl, Value r,
                            Value col) -> Value {
    if (!role.segmented() || (!role.outputs && role.first == 0))
      return sequenceInitial(nb, nl, r, col);
    Value column = add(nb, nl, firstColumn, col);
    if (!role.outputs) {
      // [0 | I]: one in the transition's diagonal.
      Value diagonal =
          arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, column,
                                add(nb, nl, r, c(nb, nl, s.valueDim)));
      return arith::SelectOp::create(nb, nl, diagonal, f(nb, nl, 1.0f), zero);
    }
    // The first segment starts from the sequence's state, the others from
    // the combine kernel's.
    Value first = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq,
                                        segment, c(nb, nl, 0));
    return scf::IfOp::create(
               nb, nl, first,
               [&](OpBuilder &ib, Location il) {
                 scf::YieldOp::create(ib, il,
                                      sequenceInitial(ib, il, r, col));
               },
               [&](OpBuilder &ib, Location il) {
                 Value entry = add(ib, il, mul(ib, il, batch,
                                               c(ib, il, m.segments)),
                                   segment);
                 scf::YieldOp::create(
                     ib, il,
                     load(ib, il, m.initials, {entry, head, r, column}));
               })
        .getResult(0);
  };
  // The partial states' row.
  Value partialRow;
  if (role.segmented() && !role.outputs)
    partialRow =
        add(b, loc, mul(b, loc, batch, c(b, loc, m.segments)), segment);
  // Stores the final state's elements through `store`, where it has a row.
  auto ifWritten = [&](OpBuilder &nb, Location nl,
                       function_ref<void(OpBuilder &, Location)> store) {
    if (!writeRow.valid)
      return store(nb, nl);
    scf::IfOp::create(nb, nl, writeRow.valid, [&](OpBuilder &ib, Location il) {
      store(ib, il);
      scf::YieldOp::create(ib, il);
    });
  };
  SmallVector<Value> initialState;
  if (stateInRegisters) {
    product(keyDim, tile, {}, initialElement,
            [&](OpBuilder &nb, Location nl, Value r, Value col, Value first,
                Value second) {
              initialState.append({first, second});
              storePair(nb, nl, first, second, sB.halves, {r, col});
            });
  } else {
    forEachThread(
        b, loc, keyDim * tile, [&](OpBuilder &nb, Location nl, Value i) {
          Value r = arith::DivUIOp::create(nb, nl, i, c(nb, nl, tile));
          Value col = arith::RemUIOp::create(nb, nl, i, c(nb, nl, tile));
          Value value = initialElement(nb, nl, r, col);
          store(nb, nl, value, ss, {r, col});
          storeHalf(nb, nl, value, sB, r, col);
        });
  }
  // Packed sequences' checkpoints follow one another: this sequence's
  // first row.
  Value checkpointBase;
  if (m.checkpoints && m.packed())
    checkpointBase = checkpointsBefore(b, loc, m, sequenceIndex);
  auto computeBarrier = [&](OpBuilder &nb, Location nl) {
    namedBarrier(nb, nl, /*id=*/2, s.threads());
  };
  auto chunkLoop = scf::ForOp::create(
      b, loc, c(b, loc, 0), chunks, c(b, loc, 1), initialState,
      [&](OpBuilder &lb, Location ll, Value chunkIndex, ValueRange state) {
        OpBuilder::InsertionGuard loopGuard(b);
        Value start = chunkStart(lb, ll, chunkIndex);
        Value slot = arith::RemUIOp::create(lb, ll, chunkIndex, c(lb, ll, 2));
        auto yield = scf::YieldOp::create(lb, ll);
        b.setInsertionPoint(yield);
        handOver(b, loc);
        // The chunk's row factors (RowFactor), one per compute thread, from
        // its log-decays G. They are computed here rather than by the copy
        // warps, so that no plain store of one role is read by the other:
        // only the copies' cp.async data crosses the hand-over.
        Value total = load(b, loc, gateRows, {slot, c(b, loc, chunk - 1)});
        forEachThread(b, loc, 2 * chunk,
                      [&](OpBuilder &nb, Location nl, Value i) {
                        Value toEnd = arith::CmpIOp::create(
                            nb, nl, arith::CmpIPredicate::ult, i,
                            c(nb, nl, chunk));
                        Value r = arith::RemUIOp::create(nb, nl, i,
                                                         c(nb, nl, chunk));
                        Value g = load(nb, nl, gateRows, {slot, r});
                        Value exponent = arith::SelectOp::create(
                            nb, nl, toEnd,
                            arith::SubFOp::create(nb, nl, total, g), g);
                        Value kind = arith::SelectOp::create(
                            nb, nl, toEnd, c(nb, nl, kToChunkEnd),
                            c(nb, nl, kFromChunkStart));
                        store(nb, nl, exponential(nb, nl, exponent),
                              rowFactors, {slot, kind, r});
                      });
        computeBarrier(b, loc);

        // X = V - diag(exp(G)) K S in bf16, and Y = exp(G) Q S.
        auto factor = [&](OpBuilder &nb, Location nl, int64_t kind, Value r) {
          return load(nb, nl, rowFactors, {slot, c(nb, nl, kind), r});
        };
        auto scaledPair = [&](OpBuilder &nb, Location nl, Value by,
                              Value first, Value second, Value memory,
                              ValueRange indices) {
          storePair(nb, nl, arith::MulFOp::create(nb, nl, first, by),
                    arith::MulFOp::create(nb, nl, second, by), memory,
                    indices);
        };
        auto zeroInit = [&](OpBuilder &nb, Location nl, Value, Value) {
          return f(nb, nl, 0.0f);
        };
        // One pass over S's fragments for both (products()).
        Term keysTimesState{keyDim, inSlot(kB, slot), sB, false,
                            /*bDepthMajor=*/true};
        Term queriesTimesState{keyDim, inSlot(qB, slot), sB, false,
                               /*bDepthMajor=*/true};
        PairEpilogue storeX = [&](OpBuilder &nb, Location nl, Value r,
                                  Value col, Value first, Value second) {
          Value decay = factor(nb, nl, kFromChunkStart, r);
          // v's two elements in one 4-byte load.
          Value pair = vector::LoadOp::create(
              nb, nl, VectorType::get({2}, s.operand), vB.halves,
              ValueRange{slot, r, col}, false, llvm::Align(4));
          if (transition)
            pair = arith::SelectOp::create(
                nb, nl, transition,
                arith::ConstantOp::create(
                    nb, nl,
                    DenseElementsAttr::get(
                        VectorType::get({2}, s.operand),
                        nb.getZeroAttr(s.operand))),
                pair);
          auto minusDecayed = [&](Value dot, int64_t e) {
            Value v = widen(nb, nl, vector::ExtractOp::create(nb, nl, pair, e));
            return arith::SubFOp::create(
                nb, nl, v, arith::MulFOp::create(nb, nl, decay, dot));
          };
          storePair(nb, nl, minusDecayed(first, 0), minusDecayed(second, 1),
                    xB.halves, {r, col});
        };
        // Y's elements stay with the lanes that O's product gives them to
        // (yInRegisters), in the same order.
        SmallVector<Value> outputStart;
        PairEpilogue storeY = [&](OpBuilder &nb, Location nl, Value r,
                                  Value col, Value first, Value second) {
          Value decay = factor(nb, nl, kFromChunkStart, r);
          if (!yInRegisters) {
            scaledPair(nb, nl, decay, first, second, ys, {r, col});
            return;
          }
          outputStart.append({arith::MulFOp::create(nb, nl, first, decay),
                              arith::MulFOp::create(nb, nl, second, decay)});
        };
        // Partial states need no outputs: no Q S.
        SmallVector<ProductOutput> stateProducts = {
            ProductOutput{keysTimesState, zeroInit, storeX}};
        if (role.outputs)
          stateProducts.push_back(
              ProductOutput{queriesTimesState, zeroInit, storeY});
        products(chunk, tile, stateProducts);
        computeBarrier(b, loc);

        // Vnew = T diag(beta) X (= U - W S), in bf16 and with its rows
        // decayed to the chunk's end (for the state update).
        product(chunk, tile,
                {Term{chunk, inSlot(tB, slot), xB, false,
                      /*bDepthMajor=*/true}},
                zeroInit,
                [&](OpBuilder &nb, Location nl, Value r, Value col, Value first,
                    Value second) {
                  storePair(nb, nl, first, second, vN.halves, {r, col});
                  scaledPair(nb, nl, factor(nb, nl, kToChunkEnd, r), first,
                             second, vD.halves, {r, col});
                });
        computeBarrier(b, loc);

        // S = exp(G_C) S + K^T diag(exp(G_C - G)) Vnew, in place (each
        // element is read, then written, by the same lane), and in bf16.
        Value stateDecay =
            factor(b, loc, kFromChunkStart, c(b, loc, chunk - 1));
        // Chunk i ends after (i + 1) C tokens of the sequence: where that is
        // inside it and a multiple of N, the state after the chunk is
        // checkpoint (i + 1) C / N - 1.
        Value atCheckpoint;
        SmallVector<Value> checkpointRow;
        if (m.checkpoints) {
          Value done = mul(b, loc, add(b, loc, chunkIndex, c(b, loc, 1)),
                           c(b, loc, chunk));
          Value every = c(b, loc, m.checkpointEvery);
          Value length =
              arith::SubIOp::create(b, loc, tokens, sequence.start);
          Value index = arith::SubIOp::create(
              b, loc, arith::DivUIOp::create(b, loc, done, every),
              c(b, loc, 1));
          checkpointRow = {batch, index};
          Value rows = memref::DimOp::create(b, loc, m.checkpoints, 1);
          if (m.packed()) {
            checkpointRow = {add(b, loc, checkpointBase, index)};
            rows = memref::DimOp::create(b, loc, m.checkpoints, 0);
          }
          auto all = [&](ArrayRef<Value> conditions) {
            Value result = conditions.front();
            for (Value condition : conditions.drop_front())
              result = arith::AndIOp::create(b, loc, result, condition);
            return result;
          };
          atCheckpoint = all(
              {arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, done,
                                     length),
               arith::CmpIOp::create(
                   b, loc, arith::CmpIPredicate::eq,
                   arith::RemUIOp::create(b, loc, done, every), c(b, loc, 0)),
               arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                     checkpointRow.back(), rows)});
        }
        size_t element = 0;
        SmallVector<Value> nextState;
        product(
            keyDim, tile, {Term{chunk, inSlot(kB, slot), vD, true, true}},
            [&](OpBuilder &nb, Location nl, Value r, Value col) {
              Value old = stateInRegisters ? state[element++]
                                           : load(nb, nl, ss, {r, col});
              return arith::MulFOp::create(nb, nl, old, stateDecay).getResult();
            },
            [&](OpBuilder &nb, Location nl, Value r, Value col, Value first,
                Value second) {
              if (stateInRegisters)
                nextState.append({first, second});
              else
                storePair(nb, nl, first, second, ss, {r, col});
              storePair(nb, nl, first, second, sB.halves, {r, col});
              if (!atCheckpoint)
                return;
              scf::IfOp::create(
                  nb, nl, atCheckpoint, [&](OpBuilder &ib, Location il) {
                    SmallVector<Value> at(checkpointRow);
                    at.append({head, r, add(ib, il, firstColumn, col)});
                    storePair(ib, il, first, second, m.checkpoints, at);
                    scf::YieldOp::create(ib, il);
                  });
            });
        assert((!stateInRegisters || (element == state.size() &&
                                      nextState.size() == state.size())) &&
               "the state product hands every element out and back");
        yield->setOperands(nextState);
        // The compute warps leave a chunk together. The next hand-over
        // alone orders their reads of the chunk's slots before the copy
        // warps' next writes into them, but racecheck reported
        // write-after-read hazards between the two when the compute warps
        // reached the hand-over one by one (in the segment kernels, whose
        // chunks end in the state product); with the warps converged here
        // it reports none (docs/performance.md).
        auto leaveChunk = [&] { computeBarrier(b, loc); };
        if (!role.outputs)
          return leaveChunk();
        // O = scale (Y + P Vnew), for the rows inside the sequence.
        Value scaleValue = f(b, loc, m.scale);
        size_t outputElement = 0;
        product(
            chunk, tile,
            {Term{chunk, inSlot(pB, slot), vN, false,
                  /*bDepthMajor=*/true}},
            [&](OpBuilder &nb, Location nl, Value r, Value col) {
              if (yInRegisters)
                return outputStart[outputElement++];
              return load(nb, nl, ys, {r, col});
            },
            [&](OpBuilder &nb, Location nl, Value r, Value col, Value first,
                Value second) {
              std::pair<Value, Value> position =
                  token(nb, nl, start, tokens, r);
              Value t = position.first;
              auto storeRow =
                  [&](OpBuilder &ib, Location il) {
                    storePair(ib, il,
                              arith::MulFOp::create(ib, il, first, scaleValue),
                              arith::MulFOp::create(ib, il, second, scaleValue),
                              m.o,
                              {batch, t, head, add(ib, il, firstColumn, col)});
                    scf::YieldOp::create(ib, il);
                  };
              scf::IfOp::create(nb, nl, position.second, storeRow);
            });
        assert(outputElement == outputStart.size() &&
               "O's product takes every element of Y");
        leaveChunk();
      });
  if (stateInRegisters) {
    // Each lane stores the elements it holds, in the product's order.
    size_t element = 0;
    ValueRange finalState = chunkLoop.getResults();
    product(
        keyDim, tile, {},
        [&](OpBuilder &, Location, Value, Value) {
          return finalState[element++];
        },
        [&](OpBuilder &nb, Location nl, Value r, Value col, Value first,
            Value second) {
          if (partialRow)
            return storePair(nb, nl, first, second, m.partials,
                             {partialRow, head, r,
                              add(nb, nl, firstColumn, col)});
          ifWritten(nb, nl, [&](OpBuilder &ib, Location il) {
            storePair(ib, il, first, second, m.finalState,
                      {writeRow.row, head, r, add(ib, il, firstColumn, col)});
          });
        });
    assert(element == finalState.size() && "every element is stored");
  } else {
    // The final state is stored with another thread mapping than the
    // products wrote it in.
    computeBarrier(b, loc);
    forEachThread(
        b, loc, keyDim * tile, [&](OpBuilder &nb, Location nl, Value i) {
          Value r = arith::DivUIOp::create(nb, nl, i, c(nb, nl, tile));
          Value col = arith::RemUIOp::create(nb, nl, i, c(nb, nl, tile));
          Value column = add(nb, nl, firstColumn, col);
          if (partialRow)
            return store(nb, nl, load(nb, nl, ss, {r, col}), m.partials,
                         {partialRow, head, r, column});
          // A bf16 state is storage: rounded as it is stored.
          Value value = convertFloat(
              nb, nl, load(nb, nl, ss, {r, col}),
              cast<MemRefType>(m.finalState.getType()).getElementType());
          ifWritten(nb, nl, [&](OpBuilder &ib, Location il) {
            store(ib, il, value, m.finalState, {writeRow.row, head, r, column});
          });
        });
  }
  b.setInsertionPointAfter(roles);
  gpu::TerminatorOp::create(b, loc);
}
