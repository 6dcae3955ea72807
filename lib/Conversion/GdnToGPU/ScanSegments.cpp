//===- ScanSegments.cpp - context parallelism in the chunked scan ---------===//
//
// A batch too small to fill the multiprocessors (B x Hv x V / Vt blocks of
// the state kernel, each walking every chunk of its sequence in turn)
// splits each sequence into S segments of L tokens (a multiple of the
// chunk) that are scanned side by side and combined exactly. The state
// after a segment is affine in the state before it,
//
//   S_end = P S_start + L_s,
//
// with P [K, K] the segment's transition (the product of its tokens'
// exp(g) (I - beta k k^T)) and L_s the state it reaches from zero. Both
// come from the state kernel itself: a segment scanned from the
// state [0 | I] with the values [v | 0] ends in [L_s | P], so the columns
// past V are value tiles like the others whose initial state is the
// identity and whose values are zero. Three launches follow the WY kernel:
//
//   1. partial states: the first segment from the true initial state, the
//      middle ones (not the last) from [0 | I]; no outputs;
//   2. combine: S_start of segment s + 1 = P_s S_start(s) + L_s, in f32,
//      a block per (value head x 8 columns, batch entry);
//   3. outputs: every segment again from its true start state, writing o
//      and (the last segment) the final state.
//
// The outputs are those of the whole-sequence scan up to the order of f32
// sums; the partial pass costs less than an output pass (no Q S, no O
// product). A segment past the end of a short sequence has no chunk: its
// partial state is [0 | I] and it passes its start state through.
//
//===----------------------------------------------------------------------===//

#include "ChunkedScan.h"
#include "gdn/Utils/TensorBuilders.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::scan;

std::pair<SequenceSpan, Value>
ScanKernel::segmentSpan(OpBuilder &nb, Location nl, const ScanBuffers &m,
                        Value blockRow, const SegmentRole &role) {
  Value perEntry = c(nb, nl, role.perEntry);
  Value batch = arith::DivUIOp::create(nb, nl, blockRow, perEntry);
  Value segment =
      add(nb, nl, arith::RemUIOp::create(nb, nl, blockRow, perEntry),
          c(nb, nl, role.first));
  Value total = memref::DimOp::create(nb, nl, m.v, 1);
  Value start = arith::MinUIOp::create(
      nb, nl, mul(nb, nl, segment, m.segmentTokens), total);
  Value end = arith::MinUIOp::create(nb, nl, add(nb, nl, start, m.segmentTokens),
                                     total);
  Value firstChunk = arith::DivUIOp::create(nb, nl, start, c(nb, nl, s.chunk));
  return {SequenceSpan{batch, start, end, firstChunk}, segment};
}

void ScanKernel::buildSegmentCombineKernel(gpu::LaunchOp launch,
                                           const ScanBuffers &m) {
  Type f32 = b.getF32Type();
  int64_t keyDim = s.keyDim, valueDim = s.valueDim;
  int64_t columnTiles = valueDim / kCombineColumns;
  setUp(launch);
  Value blockX = launch.getBlockIds().x;
  Value head = arith::DivUIOp::create(b, loc, blockX, c(b, loc, columnTiles));
  Value firstColumn =
      mul(b, loc,
          arith::RemUIOp::create(b, loc, blockX, c(b, loc, columnTiles)),
          c(b, loc, kCombineColumns));
  Value entry =
      mul(b, loc, launch.getBlockIds().y, c(b, loc, m.segments));
  // Thread r owns state row r: the start state's block [K, 8] lives in
  // workgroup memory, where every thread reads all of its rows.
  Value row = tid;
  int64_t offset = 0;
  Value starts = carveFloats(keyDim, kCombineColumns, offset);
  auto column = [&](OpBuilder &nb, Location nl, int64_t j) {
    return add(nb, nl, firstColumn, c(nb, nl, j));
  };
  // Element j of this row of the start state of segment `startEntry`: kept
  // for the next product and stored for the output pass.
  auto keepStart = [&](OpBuilder &nb, Location nl, Value startEntry,
                       int64_t j, Value value) {
    store(nb, nl, value, starts, {row, c(nb, nl, j)});
    store(nb, nl, value, m.initials,
          {startEntry, head, row, column(nb, nl, j)});
  };
  // Segment 1 starts where segment 0 ended (it began from the true state).
  for (int64_t j = 0; j < kCombineColumns; ++j)
    keepStart(b, loc, add(b, loc, entry, c(b, loc, 1)), j,
              load(b, loc, m.partials, {entry, head, row, column(b, loc, j)}));
  barrier(b, loc);
  // Segment s + 1 starts at P_s S_start(s) + L_s.
  auto quad = VectorType::get({4}, f32);
  scf::ForOp::create(
      b, loc, c(b, loc, 1), c(b, loc, m.segments - 1), c(b, loc, 1),
      ValueRange{},
      [&](OpBuilder &lb, Location ll, Value segment, ValueRange) {
        Value partial = add(lb, ll, entry, segment);
        SmallVector<Value> sums;
        for (int64_t j = 0; j < kCombineColumns; ++j)
          sums.push_back(
              load(lb, ll, m.partials, {partial, head, row, column(lb, ll, j)}));
        auto dot = scf::ForOp::create(
            lb, ll, c(lb, ll, 0), c(lb, ll, keyDim), c(lb, ll, 4), sums,
            [&](OpBuilder &db, Location dl, Value depth, ValueRange acc) {
              // P_s[row, depth .. depth + 3], from the columns past V.
              Value transition = vector::LoadOp::create(
                  db, dl, quad, m.partials,
                  ValueRange{partial, head, row,
                             add(db, dl, depth, c(db, dl, valueDim))},
                  false, llvm::Align(16));
              SmallVector<Value> next(acc);
              for (int64_t d = 0; d < 4; ++d) {
                Value p = vector::ExtractOp::create(db, dl, transition, d);
                Value startRow = add(db, dl, depth, c(db, dl, d));
                for (int64_t j = 0; j < kCombineColumns; ++j)
                  // llvm.fma: fma.rn.f32, not libdevice's __nv_fmaf.
                  next[j] = LLVM::FMAOp::create(
                      db, dl, p,
                      load(db, dl, starts, {startRow, c(db, dl, j)}), next[j]);
              }
              scf::YieldOp::create(db, dl, next);
            });
        // Every thread has read the old start state before any writes the
        // new one.
        barrier(lb, ll);
        Value nextEntry = add(lb, ll, partial, c(lb, ll, 1));
        for (int64_t j = 0; j < kCombineColumns; ++j)
          keepStart(lb, ll, nextEntry, j, dot.getResult(j));
        barrier(lb, ll);
        scf::YieldOp::create(lb, ll);
      });
  gpu::TerminatorOp::create(b, loc);
}
