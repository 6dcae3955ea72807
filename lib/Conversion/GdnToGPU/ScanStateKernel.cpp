//===- ScanStateKernel.cpp - the state kernel of the chunked scan ---------===//
//
// One block per (value head x value tile, batch): the chunks of a
// sequence in order. Copy warps keep the next chunk's operands in flight
// while the compute warps run this chunk's products.
//
//===----------------------------------------------------------------------===//

#include "ChunkedScan.h"
#include "gdn/Utils/TensorBuilders.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::scan;

void ScanKernel::buildStateKernel(gpu::LaunchOp launch, const ScanBuffers &m,
                                  int64_t valueTiles) {
  Type f32 = b.getF32Type();
  int64_t chunk = s.chunk, keyDim = s.keyDim, tile = s.valueTile;
  setUp(launch);
  // One block per multiprocessor: registers to spare for larger groups.
  maxGroup = 16;
  Value blockX = launch.getBlockIds().x;
  Value batch = launch.getBlockIds().y;
  Value head = arith::DivUIOp::create(b, loc, blockX, c(b, loc, valueTiles));
  Value firstColumn = mul(
      b, loc, arith::RemUIOp::create(b, loc, blockX, c(b, loc, valueTiles)),
      c(b, loc, tile));
  Value tokens = memref::DimOp::create(b, loc, m.v, 1);

  int64_t offset = 0;
  qsB = carveHalfSlots(2, chunk, keyDim, offset);
  wB = carveHalfSlots(2, chunk, keyDim, offset);
  kS = carveHalfSlots(2, chunk, keyDim, offset);
  pB = carveHalfSlots(2, chunk, chunk, offset);
  uB = carveHalfSlots(2, chunk, tile, offset);
  decays = carve({2, 4}, f32, offset);
  vN = carveHalves(chunk, tile, offset);
  sB = carveHalves(keyDim, tile, offset);
  ss = carveFloats(keyDim, tile, offset);
  ys = carveFloats(chunk, tile, offset);
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
  Value chunks = arith::CeilDivUIOp::create(b, loc, tokens, c(b, loc, chunk));
  Value lastChunk = arith::SubIOp::create(b, loc, chunks, c(b, loc, 1));
  // The hand-over of chunk i: the copy warps have seen its operands land,
  // and the compute warps are done with chunk i - 1, whose slots the copy
  // warps fill next.
  auto handOver = [&](OpBuilder &nb, Location nl) {
    namedBarrier(nb, nl, /*id=*/1, s.stateThreads());
  };
  Value computes = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid,
                                         c(b, loc, s.threads()));
  auto roles = scf::IfOp::create(b, loc, TypeRange(), computes,
                                 /*withElseRegion=*/true);

  // The copy warps: every operand of chunk `index`, prepared by the WY
  // kernel, goes by cp.async straight into slot `slot` of its tile, a
  // whole chunk ahead of its use.
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(roles.elseBlock()->getTerminator());
    Dealing copyThreads{
        arith::SubIOp::create(b, loc, tid, c(b, loc, s.threads())),
        32 * s.copyWarps};
    Value firstLane = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            copyThreads.thread, c(b, loc, 0));
    auto copyChunkAsync = [&](Value index, Value slot) {
      Value start = mul(b, loc, index, c(b, loc, chunk));
      auto copy = [&](int64_t rows, int64_t width, const HalfTile &tileTo,
                      Value source, Value sourceColumn) {
        forEachVector(
            rows, width,
            [&](OpBuilder &nb, Location nl, Value r, Value col) {
              Value from = col;
              if (sourceColumn)
                from = add(nb, nl, sourceColumn, col);
              nvgpu::DeviceAsyncCopyOp::create(
                  nb, nl, tokenType, tileTo.halves, tileTo.at(r, col), source,
                  ValueRange{batch, head, add(nb, nl, start, r), from},
                  nb.getIndexAttr(8), Value(), nb.getUnitAttr());
            },
            copyThreads);
      };
      copy(chunk, keyDim, inSlot(wB, slot), m.w, Value());
      copy(chunk, keyDim, inSlot(qsB, slot), m.qs, Value());
      copy(chunk, keyDim, inSlot(kS, slot), m.kst, Value());
      copy(chunk, chunk, inSlot(pB, slot), m.p, Value());
      copy(chunk, tile, inSlot(uB, slot), m.u, firstColumn);
      // The chunk's total log-decay: one 4-byte copy.
      scf::IfOp::create(b, loc, firstLane, [&](OpBuilder &nb, Location nl) {
        Value lastRow = add(nb, nl, start, c(nb, nl, chunk - 1));
        nvgpu::DeviceAsyncCopyOp::create(
            nb, nl, tokenType, decays, ValueRange{slot, c(nb, nl, 0)}, m.gates,
            ValueRange{batch, head, lastRow}, nb.getIndexAttr(1), Value(),
            UnitAttr());
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
    Value firstGroup = copyChunkAsync(c(b, loc, 0), c(b, loc, 0));
    auto loop = scf::ForOp::create(
        b, loc, c(b, loc, 0), chunks, c(b, loc, 1), ValueRange{firstGroup},
        [&](OpBuilder &lb, Location ll, Value chunkIndex, ValueRange carried) {
          OpBuilder::InsertionGuard loopGuard(b);
          Value slot = arith::RemUIOp::create(lb, ll, chunkIndex, c(lb, ll, 2));
          Value nextSlot = arith::SubIOp::create(lb, ll, c(lb, ll, 1), slot);
          // The last iteration fetches its own chunk again (into slots
          // nobody reads afterwards) rather than branch.
          Value next = arith::MinUIOp::create(
              lb, ll, add(lb, ll, chunkIndex, c(lb, ll, 1)), lastChunk);
          auto yield = scf::YieldOp::create(lb, ll, carried);
          b.setInsertionPoint(yield);
          waitForCopies(carried[0]);
          handOver(b, loc);
          yield->setOperands(ValueRange{copyChunkAsync(next, nextSlot)});
        });
    waitForCopies(loop.getResult(0));
  }

  // The compute warps.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(roles.thenBlock()->getTerminator());
  // The state tile, in f32 and in bf16.
  forEachThread(b, loc, keyDim * tile, [&](OpBuilder &nb, Location nl,
                                            Value i) {
    Value r = arith::DivUIOp::create(nb, nl, i, c(nb, nl, tile));
    Value col = arith::RemUIOp::create(nb, nl, i, c(nb, nl, tile));
    Value value = zero;
    if (m.state)
      value = widen(nb, nl,
                    load(nb, nl, m.state,
                         {batch, head, r, add(nb, nl, firstColumn, col)}));
    store(nb, nl, value, ss, {r, col});
    storeHalf(nb, nl, value, sB, r, col);
  });
  auto computeBarrier = [&](OpBuilder &nb, Location nl) {
    namedBarrier(nb, nl, /*id=*/2, s.threads());
  };
  scf::ForOp::create(
      b, loc, c(b, loc, 0), chunks, c(b, loc, 1), ValueRange{},
      [&](OpBuilder &lb, Location ll, Value chunkIndex, ValueRange) {
        OpBuilder::InsertionGuard loopGuard(b);
        Value start = mul(lb, ll, chunkIndex, c(lb, ll, chunk));
        Value slot = arith::RemUIOp::create(lb, ll, chunkIndex, c(lb, ll, 2));
        auto yield = scf::YieldOp::create(lb, ll);
        b.setInsertionPoint(yield);
        handOver(b, loc);

        // Vnew = U - W S, kept in bf16, and Y = exp(G) Q S.
        product(chunk, tile,
                {Term{keyDim, inSlot(wB, slot), sB, false,
                      /*bDepthMajor=*/true}},
                [&](OpBuilder &nb, Location nl, Value r, Value col) {
                  return widen(nb, nl, load(nb, nl, uB.halves, {slot, r, col}));
                },
                [&](OpBuilder &nb, Location nl, Value r, Value col,
                    Value first, Value second) {
                  storePair(nb, nl, first, second, vN.halves, {r, col});
                });
        auto zeroInit = [&](OpBuilder &nb, Location nl, Value, Value) {
          return f(nb, nl, 0.0f);
        };
        product(chunk, tile,
                {Term{keyDim, inSlot(qsB, slot), sB, false,
                      /*bDepthMajor=*/true}},
                zeroInit,
                [&](OpBuilder &nb, Location nl, Value r, Value col,
                    Value first, Value second) {
                  storePair(nb, nl, first, second, ys, {r, col});
                });
        computeBarrier(b, loc);

        // S = exp(G_C) S + (diag(exp(G_C - G)) K)^T Vnew, in place (each
        // element is read, then written, by the same lane), and in bf16.
        Value chunkDecay =
            exponential(b, loc, load(b, loc, decays, {slot, c(b, loc, 0)}));
        product(keyDim, tile, {Term{chunk, inSlot(kS, slot), vN, true, true}},
                [&](OpBuilder &nb, Location nl, Value r, Value col) {
                  return arith::MulFOp::create(nb, nl,
                                               load(nb, nl, ss, {r, col}),
                                               chunkDecay)
                      .getResult();
                },
                [&](OpBuilder &nb, Location nl, Value r, Value col,
                    Value first, Value second) {
                  storePair(nb, nl, first, second, ss, {r, col});
                  storePair(nb, nl, first, second, sB.halves, {r, col});
                });
        // O = scale (Y + P Vnew), for the rows inside the sequence.
        Value scaleValue = f(b, loc, m.scale);
        product(
            chunk, tile,
            {Term{chunk, inSlot(pB, slot), vN, false,
                  /*bDepthMajor=*/true}},
            [&](OpBuilder &nb, Location nl, Value r, Value col) {
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
      });
  // The final state is stored with another thread mapping than the
  // products wrote it in.
  computeBarrier(b, loc);
  forEachThread(b, loc, keyDim * tile, [&](OpBuilder &nb, Location nl,
                                            Value i) {
    Value r = arith::DivUIOp::create(nb, nl, i, c(nb, nl, tile));
    Value col = arith::RemUIOp::create(nb, nl, i, c(nb, nl, tile));
    store(nb, nl, load(nb, nl, ss, {r, col}), m.finalState,
          {batch, head, r, add(nb, nl, firstColumn, col)});
  });
  b.setInsertionPointAfter(roles);
  gpu::TerminatorOp::create(b, loc);
}
