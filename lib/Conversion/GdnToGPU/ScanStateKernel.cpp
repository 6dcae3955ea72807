//===- ScanStateKernel.cpp - the state kernel of the chunked scan ---------===//
//
// One block per (value head x value tile, batch): the chunks of a
// sequence in order, the next chunk's operands in flight during this
// chunk's products.
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
  Value blockX = launch.getBlockIds().x;
  Value batch = launch.getBlockIds().y;
  Value head = arith::DivUIOp::create(b, loc, blockX, c(b, loc, valueTiles));
  Value firstColumn = mul(
      b, loc, arith::RemUIOp::create(b, loc, blockX, c(b, loc, valueTiles)),
      c(b, loc, tile));
  Value tokens = memref::DimOp::create(b, loc, m.v, 1);

  int64_t offset = 0;
  qsB = carveHalves(chunk, keyDim, offset);
  wB = carveHalves(chunk, keyDim, offset);
  kS = carveHalfSlots(2, chunk, keyDim, offset);
  pB = carveHalves(chunk, chunk, offset);
  vN = carveHalves(chunk, tile, offset);
  sB = carveHalves(keyDim, tile, offset);
  ss = carveFloats(keyDim, tile, offset);
  us = carveFloats(chunk, tile, offset);
  assert(offset == s.stateKernelBytes() && "layout and size disagree");

  Value zero = f(b, loc, 0.0f);
  auto widen = [&](OpBuilder &nb, Location nl, Value x) {
    return convertFloat(nb, nl, x, f32);
  };
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

  // The operands of chunk `index`, prepared by the WY kernel, arrive in two
  // ways: -W, exp(G) Q and exp(G_C - G) K (into slot `slot` of its two)
  // by cp.async straight into workgroup memory; U, P and the chunk's total
  // decay through registers (loadChunkRest), stored once the chunk before
  // has used the tiles (storeChunkRest).
  auto bf16Vector = VectorType::get({8}, b.getBF16Type());
  auto f32Vector = VectorType::get({8}, f32);
  Type tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  auto copyChunkAsync = [&](Value index, Value slot) {
    Value start = mul(b, loc, index, c(b, loc, chunk));
    auto copy = [&](int64_t rows, int64_t width, HalfTile tileTo,
                    function_ref<SmallVector<Value>(OpBuilder &, Location,
                                                    Value, Value)>
                        sourceIndex,
                    Value source) {
      forEachVector(rows, width,
                    [&](OpBuilder &nb, Location nl, Value r, Value col) {
                      nvgpu::DeviceAsyncCopyOp::create(
                          nb, nl, tokenType, tileTo.halves,
                          tileTo.at(r, col), source,
                          sourceIndex(nb, nl, r, col), nb.getIndexAttr(8),
                          Value(), nb.getUnitAttr());
                    });
    };
    auto chunkRow = [&](OpBuilder &nb, Location nl, Value r, Value col) {
      return SmallVector<Value>{batch, head, add(nb, nl, start, r), col};
    };
    copy(chunk, keyDim, wB, chunkRow, m.w);
    copy(chunk, keyDim, qsB, chunkRow, m.qs);
    HalfTile slotTile = kS;
    slotTile.slot = slot;
    copy(chunk, keyDim, slotTile, chunkRow, m.kst);
    // The group's token only orders the IR: cp.async.wait_group counts the
    // thread's groups.
    return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType,
                                                   ValueRange{})
        .getResult();
  };
  struct ChunkRest {
    SmallVector<LoadedVector> u, p;
    Value decay;
  };
  auto loadChunkRest = [&](Value index) {
    Value start = mul(b, loc, index, c(b, loc, chunk));
    ChunkRest rest;
    rest.u = loadVectors(chunk, tile, [&](OpBuilder &nb, Location nl, Value r,
                                          Value col) {
      return vector::LoadOp::create(
                 nb, nl, bf16Vector, m.u,
                 ValueRange{batch, head, add(nb, nl, start, r),
                            add(nb, nl, firstColumn, col)},
                 false, llvm::Align(16))
          .getResult();
    });
    rest.p = loadVectors(chunk, chunk, [&](OpBuilder &nb, Location nl,
                                           Value r, Value col) {
      return vector::LoadOp::create(nb, nl, bf16Vector, m.p,
                                    ValueRange{batch, head,
                                               add(nb, nl, start, r), col},
                                    false, llvm::Align(16))
          .getResult();
    });
    Value lastRow = add(b, loc, start, c(b, loc, chunk - 1));
    rest.decay =
        exponential(b, loc, load(b, loc, m.gates, {batch, head, lastRow}));
    return rest;
  };
  auto storeChunkRest = [&](const ChunkRest &rest) {
    storeVectors(rest.u, [&](OpBuilder &nb, Location nl, Value r, Value col,
                             Value x) {
      vector::StoreOp::create(nb, nl,
                              arith::ExtFOp::create(nb, nl, f32Vector, x), us,
                              ValueRange{r, col}, false, llvm::Align(16));
    });
    storeVectors(rest.p, [&](OpBuilder &nb, Location nl, Value r, Value col,
                             Value x) {
      vector::StoreOp::create(nb, nl, x, pB.halves, ValueRange{r, col}, false,
                              llvm::Align(16));
    });
  };
  auto waitForCopies = [&](Value group) {
    nvgpu::DeviceAsyncWaitOp::create(b, loc, group, b.getI32IntegerAttr(0));
  };

  // Chunk 0 before the loop; each iteration then starts the next chunk's
  // transfers as soon as its tiles are free, so that they overlap this
  // chunk's products.
  Value chunks = arith::CeilDivUIOp::create(b, loc, tokens, c(b, loc, chunk));
  Value lastChunk = arith::SubIOp::create(b, loc, chunks, c(b, loc, 1));
  Value firstGroup = copyChunkAsync(c(b, loc, 0), c(b, loc, 0));
  ChunkRest first = loadChunkRest(c(b, loc, 0));
  storeChunkRest(first);
  auto loop = scf::ForOp::create(
      b, loc, c(b, loc, 0), chunks, c(b, loc, 1),
      ValueRange{first.decay, firstGroup},
      [&](OpBuilder &lb, Location ll, Value chunkIndex, ValueRange carried) {
        OpBuilder::InsertionGuard guard(b);
        Value chunkDecay = carried[0];
        Value start = mul(lb, ll, chunkIndex, c(lb, ll, chunk));
        Value slot = arith::RemUIOp::create(lb, ll, chunkIndex, c(lb, ll, 2));
        Value nextSlot = arith::SubIOp::create(lb, ll, c(lb, ll, 1), slot);
        // The last iteration fetches its own chunk again (into tiles nobody
        // reads afterwards) rather than branch.
        Value next = arith::MinUIOp::create(
            lb, ll, add(lb, ll, chunkIndex, c(lb, ll, 1)), lastChunk);
        auto yield = scf::YieldOp::create(lb, ll, carried);
        b.setInsertionPoint(yield);
        waitForCopies(carried[1]);
        barrier(b, loc);

        // Vnew = U - W S, kept in bf16, and Y = exp(G) Q S in place
        // of U (the same lane owns the same element in both products).
        product(chunk, tile,
                {Term{keyDim, wB, sB, false, /*bDepthMajor=*/true}},
                [&](OpBuilder &nb, Location nl, Value r, Value col) {
                  return load(nb, nl, us, {r, col});
                },
                [&](OpBuilder &nb, Location nl, Value r, Value col,
                    Value first, Value second) {
                  storePair(nb, nl, first, second, vN.halves, {r, col});
                });
        auto zeroInit = [&](OpBuilder &nb, Location nl, Value, Value) {
          return f(nb, nl, 0.0f);
        };
        product(chunk, tile,
                {Term{keyDim, qsB, sB, false, /*bDepthMajor=*/true}}, zeroInit,
                [&](OpBuilder &nb, Location nl, Value r, Value col,
                    Value first, Value second) {
                  storePair(nb, nl, first, second, us, {r, col});
                });
        barrier(b, loc);
        // -W, exp(G) Q and the other slot of K are free now.
        Value group = copyChunkAsync(next, nextSlot);
        ChunkRest rest = loadChunkRest(next);

        // S = exp(G_C) S + (diag(exp(G_C - G)) K)^T Vnew, in place (each
        // element is read, then written, by the same lane), and in bf16.
        HalfTile kTile = kS;
        kTile.slot = slot;
        product(keyDim, tile, {Term{chunk, kTile, vN, true, true}},
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
        product(chunk, tile, {Term{chunk, pB, vN, false, /*bDepthMajor=*/true}},
                [&](OpBuilder &nb, Location nl, Value r, Value col) {
                  return load(nb, nl, us, {r, col});
                },
                [&](OpBuilder &nb, Location nl, Value r, Value col,
                    Value first, Value second) {
                  std::pair<Value, Value> position =
                      token(nb, nl, start, tokens, r);
                  Value t = position.first;
                  auto storeRow = [&](OpBuilder &ib, Location il) {
                    storePair(ib, il,
                              arith::MulFOp::create(ib, il, first, scaleValue),
                              arith::MulFOp::create(ib, il, second, scaleValue),
                              m.o,
                              {batch, t, head, add(ib, il, firstColumn, col)});
                    scf::YieldOp::create(ib, il);
                  };
                  scf::IfOp::create(nb, nl, position.second, storeRow);
                });
        barrier(b, loc);
        storeChunkRest(rest);
        yield->setOperands(ValueRange{rest.decay, group});
      });
  waitForCopies(loop.getResult(1));

  forEachThread(b, loc, keyDim * tile, [&](OpBuilder &nb, Location nl,
                                            Value i) {
    Value r = arith::DivUIOp::create(nb, nl, i, c(nb, nl, tile));
    Value col = arith::RemUIOp::create(nb, nl, i, c(nb, nl, tile));
    store(nb, nl, load(nb, nl, ss, {r, col}), m.finalState,
          {batch, head, r, add(nb, nl, firstColumn, col)});
  });
  gpu::TerminatorOp::create(b, loc);
}
