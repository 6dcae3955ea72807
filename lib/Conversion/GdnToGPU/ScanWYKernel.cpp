//===- ScanWYKernel.cpp - the WY kernel of the chunked scan ---------------===//
//
// One block per (chunk, value head, batch): A, P and the solve for T;
// T diag(beta), P and the cumulative log-decays G go to global scratch.
//
//===----------------------------------------------------------------------===//

#include "ChunkedScan.h"
#include "gdn/Utils/TensorBuilders.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::scan;

void ScanKernel::solve() {
  int64_t chunk = s.chunk, blocks = chunk / 16;
  Value zero = f(b, loc, 0.0f), one = f(b, loc, 1.0f);
  // The 16 x 16 diagonal blocks T_rr = (I + A_rr)^-1 into ds (other
  // threads still read A_rr): one thread per column of one block, by
  // forward substitution with the column in registers.
  Value diagonalThread = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ult, tid, c(b, loc, blocks * 16));
  scf::IfOp::create(b, loc, diagonalThread, [&](OpBuilder &nb, Location nl) {
    Value block = arith::DivUIOp::create(nb, nl, tid, c(nb, nl, 16));
    Value j = arith::RemUIOp::create(nb, nl, tid, c(nb, nl, 16));
    Value base = mul(nb, nl, block, c(nb, nl, 16));
    SmallVector<Value> x;
    for (int64_t i = 0; i < 16; ++i) {
      Value row = add(nb, nl, base, c(nb, nl, i));
      Value sum = f(nb, nl, 0.0f);
      for (int64_t m = 0; m < i; ++m)
        sum = multiplyAdd(
            nb, nl, load(nb, nl, ms, {row, add(nb, nl, base, c(nb, nl, m))}),
            x[m], sum);
      Value iv = c(nb, nl, i);
      Value below =
          arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, iv, j);
      Value diagonal =
          arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, iv, j);
      Value negated = arith::NegFOp::create(nb, nl, sum);
      Value value = arith::SelectOp::create(
          nb, nl, below, zero,
          arith::SelectOp::create(nb, nl, diagonal, one, negated));
      x.push_back(value);
      store(nb, nl, value, ds, {row, j});
    }
    scf::YieldOp::create(nb, nl);
  });
  barrier(b, loc);
  // ms holds T from here on, block row by block row: first its diagonal
  // blocks (A is zero above the diagonal blocks, and so is T).
  forEachThread(b, loc, chunk * 16, [&](OpBuilder &nb, Location nl, Value i) {
    Value row = arith::DivUIOp::create(nb, nl, i, c(nb, nl, 16));
    Value j = arith::RemUIOp::create(nb, nl, i, c(nb, nl, 16));
    Value base = mul(nb, nl, arith::DivUIOp::create(nb, nl, row, c(nb, nl, 16)),
                     c(nb, nl, 16));
    store(nb, nl, load(nb, nl, ds, {row, j}), ms, {row, add(nb, nl, base, j)});
  });
  barrier(b, loc);
  // Block row r: X_rk = sum_{m = k}^{r-1} A_rm T_mk, then T_rk = -T_rr X_rk,
  // each written over A_rk once every thread has read block row r of A.
  for (int64_t r = 1; r < blocks; ++r) {
    int64_t elements = r * 256;
    assert(elements % s.threads() == 0 && "block rows split evenly");
    auto coordinates = [&](OpBuilder &nb, Location nl, Value e) {
      Value k = arith::DivUIOp::create(nb, nl, e, c(nb, nl, 256));
      Value within = arith::RemUIOp::create(nb, nl, e, c(nb, nl, 256));
      Value i = arith::DivUIOp::create(nb, nl, within, c(nb, nl, 16));
      Value col = arith::RemUIOp::create(nb, nl, within, c(nb, nl, 16));
      Value row = add(nb, nl, c(nb, nl, r * 16), i);
      Value column = add(nb, nl, mul(nb, nl, k, c(nb, nl, 16)), col);
      return std::make_pair(row, column);
    };
    auto storeAll = [&](ArrayRef<Value> values) {
      for (int64_t it = 0; it < elements / s.threads(); ++it) {
        Value e = add(b, loc, tid, c(b, loc, it * s.threads()));
        auto [row, column] = coordinates(b, loc, e);
        store(b, loc, values[it], ms, {row, column});
      }
    };
    SmallVector<Value> partial;
    for (int64_t it = 0; it < elements / s.threads(); ++it) {
      Value e = add(b, loc, tid, c(b, loc, it * s.threads()));
      auto [row, column] = coordinates(b, loc, e);
      // m runs over the block rows k..r-1; T is zero above its diagonal
      // blocks, so the rows before block k add nothing and the sum can run
      // from 0 with independent, unrolled loads.
      Value sum = f(b, loc, 0.0f);
      for (int64_t m = 0; m < r * 16; ++m) {
        Value mv = c(b, loc, m);
        sum = multiplyAdd(b, loc, load(b, loc, ms, {row, mv}),
                          load(b, loc, ms, {mv, column}), sum);
      }
      partial.push_back(sum);
    }
    barrier(b, loc);
    storeAll(partial);
    barrier(b, loc);
    SmallVector<Value> solved;
    for (int64_t it = 0; it < elements / s.threads(); ++it) {
      Value e = add(b, loc, tid, c(b, loc, it * s.threads()));
      auto [row, column] = coordinates(b, loc, e);
      Value sum = f(b, loc, 0.0f);
      for (int64_t q = 0; q < 16; ++q) {
        Value qRow = c(b, loc, r * 16 + q);
        sum = multiplyAdd(b, loc, load(b, loc, ms, {row, qRow}),
                          load(b, loc, ms, {qRow, column}), sum);
      }
      solved.push_back(arith::NegFOp::create(b, loc, sum));
    }
    barrier(b, loc);
    storeAll(solved);
    barrier(b, loc);
  }
}

void ScanKernel::buildChunkKernel(gpu::LaunchOp launch, const ScanBuffers &m) {
  Type f32 = b.getF32Type();
  int64_t chunk = s.chunk, keyDim = s.keyDim, valueDim = s.valueDim;
  setUp(launch);
  Type half = s.operand;
  // The block's chunk row of the scratch: with a batch, chunk x of every
  // sequence (tokens from x C); packed, the chunk row of one sequence's
  // chunk, if any (ScanSequences.cpp).
  Value chunkRow = launch.getBlockIds().x;
  Value head = launch.getBlockIds().y;
  Value batch = launch.getBlockIds().z;
  Value keyHead = arith::DivUIOp::create(b, loc, head, c(b, loc, m.groupSize));
  Value tokens = memref::DimOp::create(b, loc, m.v, 1);
  Value scratchStart = mul(b, loc, chunkRow, c(b, loc, chunk));
  Value start = scratchStart;

  int64_t offset = 0;
  kB = carveHalves(chunk, keyDim, offset);
  // The solve's diagonal blocks take Q's place: the P product, Q's last
  // reader, is done by then. Rows of 17 floats: the 16 threads of two
  // diagonal blocks store to different banks.
  int64_t qOffset = offset, diagonalOffset = offset;
  qB = carveHalves(chunk, keyDim, qOffset);
  ds = carve({chunk, 17}, f32, diagonalOffset);
  offset = std::max(qOffset, diagonalOffset);
  ms = carveFloats(chunk, chunk, offset);
  gRaw = carve({chunk}, f32, offset);
  betas = carve({chunk}, f32, offset);
  gCum = carve({chunk}, f32, offset);
  assert(offset == s.chunkKernelBytes() && "layout and size disagree");

  // Packed: the rest runs where the chunk row is a sequence's chunk (a
  // uniform branch: the whole block takes it or none).
  std::optional<OpBuilder::InsertionGuard> outsideBody;
  scf::IfOp body;
  if (m.packed()) {
    zeroRowsOutsideSequences(m, scratchStart, head);
    outsideBody.emplace(b);
    Value anySequence = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ugt, m.sequences, c(b, loc, 0));
    auto lookup = scf::IfOp::create(b, loc, TypeRange(), anySequence, false);
    b.setInsertionPoint(lookup.thenBlock()->getTerminator());
    Value n = sequenceOfChunkRow(m, chunkRow);
    SequenceSpan sequence = packedSequence(b, loc, m, n);
    Value index = arith::SubIOp::create(b, loc, chunkRow, sequence.firstChunk);
    Value chunks = arith::CeilDivUIOp::create(
        b, loc, arith::SubIOp::create(b, loc, sequence.end, sequence.start),
        c(b, loc, chunk));
    Value isChunk = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, chunkRow,
                              sequence.firstChunk),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, index,
                              chunks));
    body = scf::IfOp::create(b, loc, TypeRange(), isChunk, false);
    b.setInsertionPoint(body.thenBlock()->getTerminator());
    batch = sequence.batch;
    tokens = sequence.end;
    start = add(b, loc, sequence.start, mul(b, loc, index, c(b, loc, chunk)));
  }

  Value zero = f(b, loc, 0.0f);
  auto widen = [&](OpBuilder &nb, Location nl, Value x) {
    return convertFloat(nb, nl, x, f32);
  };
  // The gates' loads first (a thread per row, zeros past the end of the
  // sequence): they are in flight while the copies issue, and only their
  // stores, after the copies, wait for them.
  Value rowThread = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          tid, c(b, loc, chunk));
  auto rawGates = scf::IfOp::create(
      b, loc, rowThread,
      [&](OpBuilder &nb, Location nl) {
        auto [t, inside] = token(nb, nl, start, tokens, tid);
        Value g = widen(nb, nl, load(nb, nl, m.g, {batch, t, head}));
        Value beta = widen(nb, nl, load(nb, nl, m.beta, {batch, t, head}));
        if (m.aLog)
          std::tie(g, beta) =
              gatesFromRaw(nb, nl, g, beta, load(nb, nl, m.aLog, {head}),
                           load(nb, nl, m.dtBias, {head}));
        scf::YieldOp::create(
            nb, nl,
            ValueRange{arith::SelectOp::create(nb, nl, inside, g, zero),
                       arith::SelectOp::create(nb, nl, inside, beta, zero)});
      },
      [&](OpBuilder &nb, Location nl) {
        scf::YieldOp::create(nb, nl, ValueRange{zero, zero});
      });
  // q and k of the operand type (bf16, or f16) go by cp.async straight into
  // their tiles (zeros past the end of the sequence), in flight while the
  // gates are loaded and summed; f32 goes through registers to be rounded.
  bool copyInputs =
      cast<MemRefType>(m.q.getType()).getElementType() == s.operand;
  Value inputCopies;
  if (copyInputs) {
    Type tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
    wholeOrPartialChunk(start, tokens, [&](bool partial) {
      copyTokenRows(qB, keyDim, {m.q, batch, keyHead, Value()}, start, tokens,
                    partial);
      copyTokenRows(kB, keyDim, {m.k, batch, keyHead, Value()}, start, tokens,
                    partial);
    });
    inputCopies = nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, tokenType,
                                                          ValueRange{});
  }
  scf::IfOp::create(b, loc, rowThread, [&](OpBuilder &nb, Location nl) {
    store(nb, nl, rawGates.getResult(0), gRaw, {tid});
    store(nb, nl, rawGates.getResult(1), betas, {tid});
    scf::YieldOp::create(nb, nl);
  });
  barrier(b, loc);
  // Inclusive cumulative log-decay G (all loads at once, masked to
  // j <= tid), kept for the state pass.
  scf::IfOp::create(b, loc, rowThread, [&](OpBuilder &nb, Location nl) {
    Value sum = f(nb, nl, 0.0f);
    for (int64_t j = 0; j < chunk; ++j) {
      Value jv = c(nb, nl, j);
      Value gj = load(nb, nl, gRaw, {jv});
      Value upTo =
          arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ule, jv, tid);
      sum = arith::AddFOp::create(
          nb, nl, sum,
          arith::SelectOp::create(nb, nl, upTo, gj, f(nb, nl, 0.0f)));
    }
    store(nb, nl, sum, gCum, {tid});
    store(nb, nl, sum, m.gates,
          {batch, head, add(nb, nl, scratchStart, tid)});
    scf::YieldOp::create(nb, nl);
  });
  if (inputCopies)
    nvgpu::DeviceAsyncWaitOp::create(b, loc, inputCopies,
                                     b.getI32IntegerAttr(0));
  barrier(b, loc);

  auto halves = VectorType::get({8}, half);
  auto storeVector = [&](OpBuilder &nb, Location nl, Value x, Value memory,
                         ValueRange indices) {
    vector::StoreOp::create(nb, nl, x, memory, indices, false, llvm::Align(16));
  };
  // Other 16-bit types than bf16 are staged through registers, 8 elements
  // at a time (zeros past the end of the sequence), rounded to bf16; the
  // first value head of a group also leaves the rounded rows in `copy`
  // for the state pass, and every value head its rows of v (which this
  // kernel does not use).
  Value firstOfGroup = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, loc, head, c(b, loc, m.groupSize)),
      c(b, loc, 0));
  auto stage = [&](Value source, Value sourceHead, int64_t width,
                   const HalfTile *to, Value copy, Value copyCondition) {
    Type element = cast<MemRefType>(source.getType()).getElementType();
    auto vectorType = VectorType::get({8}, element);
    stageVectors(
        chunk, width,
        [&](OpBuilder &nb, Location nl, Value r, Value col) {
          auto [t, inside] = token(nb, nl, start, tokens, r);
          Value x = vector::LoadOp::create(
              nb, nl, vectorType, source, ValueRange{batch, t, sourceHead, col},
              false, llvm::Align(16));
          Value zeros = arith::ConstantOp::create(
              nb, nl,
              DenseElementsAttr::get(vectorType, nb.getZeroAttr(element)));
          return arith::SelectOp::create(nb, nl, inside, x, zeros).getResult();
        },
        [&](OpBuilder &nb, Location nl, Value r, Value col, Value x) {
          Value wide =
              element.isF32()
                  ? x
                  : arith::ExtFOp::create(nb, nl, VectorType::get({8}, f32), x)
                        .getResult();
          Value rounded = arith::TruncFOp::create(nb, nl, halves, wide);
          if (to)
            storeVector(nb, nl, rounded, to->halves, {r, col});
          std::pair<Value, Value> position = token(nb, nl, start, tokens, r);
          Value leaves = position.second;
          if (copyCondition)
            leaves = arith::AndIOp::create(nb, nl, leaves, copyCondition);
          scf::IfOp::create(nb, nl, leaves, [&](OpBuilder &ib, Location il) {
            storeVector(ib, il, rounded, copy,
                        {batch, position.first, sourceHead, col});
            scf::YieldOp::create(ib, il);
          });
        });
  };
  if (!copyInputs) {
    stage(m.q, keyHead, keyDim, &qB, m.qHalves, firstOfGroup);
    stage(m.k, keyHead, keyDim, &kB, m.kHalves, firstOfGroup);
    stage(m.v, head, valueDim, nullptr, m.vHalves, Value());
    barrier(b, loc);
  }

  auto zeroInit = [&](OpBuilder &nb, Location nl, Value, Value) {
    return f(nb, nl, 0.0f);
  };
  // dot x exp(G_r - G_c) (x beta_r with `rowScale`) where `keep(c, r)`,
  // else 0: the exponent is non-positive where kept.
  auto maskedDecay = [&](OpBuilder &nb, Location nl, Value r, Value col,
                         Value dot, arith::CmpIPredicate keep, Value rowScale) {
    Value inside = arith::CmpIOp::create(nb, nl, keep, col, r);
    if (rowScale)
      dot = arith::MulFOp::create(nb, nl, dot, load(nb, nl, rowScale, {r}));
    Value decay =
        exponential(nb, nl,
                    arith::SubFOp::create(nb, nl, load(nb, nl, gCum, {r}),
                                          load(nb, nl, gCum, {col})));
    Value decayed = arith::MulFOp::create(nb, nl, dot, decay);
    return arith::SelectOp::create(nb, nl, inside, decayed, zero).getResult();
  };
  auto rowOf = [&](OpBuilder &nb, Location nl, Value r) {
    return add(nb, nl, scratchStart, r);
  };
  // The pair epilogue that applies maskedDecay to both elements.
  auto masked =
      [&](arith::CmpIPredicate keep, Value rowScale,
          function_ref<void(OpBuilder &, Location, Value, Value, Value, Value)>
              storeTo) -> PairEpilogue {
    return [&, keep, rowScale, storeTo](OpBuilder &nb, Location nl, Value r,
                                        Value col, Value first, Value second) {
      Value next = add(nb, nl, col, c(nb, nl, 1));
      storeTo(nb, nl, r, col,
              maskedDecay(nb, nl, r, col, first, keep, rowScale),
              maskedDecay(nb, nl, r, next, second, keep, rowScale));
    };
  };
  // A = strict_lower(beta_r exp(G_r - G_c) k_r.k_c), f32 for the solve.
  product(chunk, chunk, {Term{keyDim, kB, kB}}, zeroInit,
          masked(arith::CmpIPredicate::ult, betas,
                 [&](OpBuilder &nb, Location nl, Value r, Value col,
                     Value first, Value second) {
                   storePair(nb, nl, first, second, ms, {r, col});
                 }));
  // P = lower(exp(G_r - G_c) q_r.k_c), to global memory.
  product(chunk, chunk, {Term{keyDim, qB, kB}}, zeroInit,
          masked(arith::CmpIPredicate::ule, Value(),
                 [&](OpBuilder &nb, Location nl, Value r, Value col,
                     Value first, Value second) {
                   storePair(nb, nl, first, second, m.p,
                             {batch, head, rowOf(nb, nl, r), col});
                 }));
  barrier(b, loc);
  solve();
  // T diag(beta) in bf16 to global memory, 8 columns per step: 16-byte
  // loads of T's row and of beta, one 16-byte store.
  auto floats = VectorType::get({8}, f32);
  for (const VectorPosition &position : vectorPositions(chunk, chunk))
    ifValid(position, [&](OpBuilder &nb, Location nl) {
      auto loadFloats = [&](Value memory, ValueRange indices) {
        return vector::LoadOp::create(nb, nl, floats, memory, indices, false,
                                      llvm::Align(16))
            .getResult();
      };
      Value scaled = arith::MulFOp::create(
          nb, nl, loadFloats(ms, {position.row, position.col}),
          loadFloats(betas, {position.col}));
      storeVector(nb, nl, arith::TruncFOp::create(nb, nl, halves, scaled), m.tb,
                  {batch, head, rowOf(nb, nl, position.row), position.col});
    });
  outsideBody.reset();
  gpu::TerminatorOp::create(b, loc);
}
