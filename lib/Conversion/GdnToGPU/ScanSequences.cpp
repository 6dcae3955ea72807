//===- ScanSequences.cpp - packed sequences and pools in the chunked scan -===//
//
// The serving forms of gdn.delta_rule inside the two kernels of the chunked
// scan, without a host-side table that depends on the lengths (so that a
// call can be captured in a CUDA graph and replayed with new lengths):
// every block finds its sequence from the offsets on the device. The WY
// kernel's grid has a chunk row per possible chunk (packedChunkRows), and
// a block whose row is no sequence's chunk only zeros o's rows that lie
// outside every sequence; the state kernel has a block row per sequence.
//
//===----------------------------------------------------------------------===//

#include "ChunkedScan.h"
#include "gdn/Utils/TensorBuilders.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::scan;

Value scan::packedChunkRows(OpBuilder &b, Location loc, Value total,
                            Value sequences, int64_t chunk) {
  Value whole =
      arith::CeilDivUIOp::create(b, loc, total, indexConstant(b, loc, chunk));
  return arith::AddIOp::create(b, loc, whole, sequences);
}

/// offsets[i] as an index (sign-extended: a negative offset stays negative
/// for the clamps).
static Value loadOffset(OpBuilder &b, Location loc, Value offsets, Value i) {
  return arith::IndexCastOp::create(
      b, loc, b.getIndexType(),
      memref::LoadOp::create(b, loc, offsets, ValueRange{i}));
}

SequenceSpan ScanKernel::packedSequence(OpBuilder &nb, Location nl,
                                        const ScanBuffers &m, Value n) {
  Value total = memref::DimOp::create(nb, nl, m.v, 1);
  Value zero = c(nb, nl, 0);
  Value start = arith::MinSIOp::create(
      nb, nl,
      arith::MaxSIOp::create(nb, nl, loadOffset(nb, nl, m.offsets, n), zero),
      total);
  Value end = arith::MinSIOp::create(
      nb, nl,
      arith::MaxSIOp::create(
          nb, nl, loadOffset(nb, nl, m.offsets, add(nb, nl, n, c(nb, nl, 1))),
          start),
      total);
  Value firstChunk = add(
      nb, nl, arith::DivUIOp::create(nb, nl, start, c(nb, nl, s.chunk)), n);
  return {zero, start, end, firstChunk};
}

Value ScanKernel::sequenceOfChunkRow(const ScanBuffers &m, Value chunkRow) {
  // The last n in [0, N) whose first chunk row is at most chunkRow: the
  // search keeps first(low) <= chunkRow < first(high), with N >= 1.
  Type index = b.getIndexType();
  auto search = scf::WhileOp::create(
      b, loc, TypeRange{index, index}, ValueRange{c(b, loc, 0), m.sequences},
      [&](OpBuilder &nb, Location nl, ValueRange bounds) {
        Value width = arith::SubIOp::create(nb, nl, bounds[1], bounds[0]);
        Value more = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ugt,
                                           width, c(nb, nl, 1));
        scf::ConditionOp::create(nb, nl, more, bounds);
      },
      [&](OpBuilder &nb, Location nl, ValueRange bounds) {
        Value middle = arith::DivUIOp::create(
            nb, nl, add(nb, nl, bounds[0], bounds[1]), c(nb, nl, 2));
        Value first = packedSequence(nb, nl, m, middle).firstChunk;
        Value atOrBefore = arith::CmpIOp::create(
            nb, nl, arith::CmpIPredicate::ule, first, chunkRow);
        scf::YieldOp::create(
            nb, nl,
            ValueRange{
                arith::SelectOp::create(nb, nl, atOrBefore, middle, bounds[0]),
                arith::SelectOp::create(nb, nl, atOrBefore, bounds[1],
                                        middle)});
      });
  return search.getResult(0);
}

StateRow ScanKernel::stateRow(OpBuilder &nb, Location nl, const ScanBuffers &m,
                              Value n, bool write) {
  if (!m.pooled())
    return {n, Value()};
  Value indices = write && m.writeIndices ? m.writeIndices : m.readIndices;
  auto [slot, valid] = poolSlot(
      nb, nl, memref::LoadOp::create(nb, nl, indices, ValueRange{n}),
      memref::DimOp::create(nb, nl, m.finalState, 0));
  return {slot, valid};
}

void ScanKernel::zeroRowsOutsideSequences(const ScanBuffers &m, Value start,
                                          Value head) {
  // Every token in [offsets[0], offsets[N]) (clamped) lies in some
  // sequence, whatever the offsets in between: the rows outside are the
  // ones before and after. With no offsets at all, every row is outside.
  Value total = memref::DimOp::create(b, loc, m.v, 1);
  Value entries = memref::DimOp::create(b, loc, m.offsets, 0);
  Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, entries,
                                    c(b, loc, 0));
  auto ends = scf::IfOp::create(
      b, loc, any,
      [&](OpBuilder &nb, Location nl) {
        auto clamped = [&](Value i) -> Value {
          return arith::MinSIOp::create(
              nb, nl,
              arith::MaxSIOp::create(nb, nl, loadOffset(nb, nl, m.offsets, i),
                                     c(nb, nl, 0)),
              total);
        };
        scf::YieldOp::create(
            nb, nl,
            ValueRange{clamped(c(nb, nl, 0)),
                       clamped(arith::SubIOp::create(nb, nl, entries,
                                                     c(nb, nl, 1)))});
      },
      [&](OpBuilder &nb, Location nl) {
        scf::YieldOp::create(nb, nl, ValueRange{c(nb, nl, 0), c(nb, nl, 0)});
      });
  Value first = ends.getResult(0), last = ends.getResult(1);
  Type element = cast<MemRefType>(m.o.getType()).getElementType();
  auto vectorType = VectorType::get({8}, element);
  forEachVector(
      s.chunk, s.valueDim, [&](OpBuilder &nb, Location nl, Value r, Value col) {
        Value t = add(nb, nl, start, r);
        Value outside = arith::OrIOp::create(
            nb, nl,
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::slt, t, first),
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sge, t, last));
        Value zeroes = arith::AndIOp::create(
            nb, nl, outside,
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::slt, t,
                                  total));
        scf::IfOp::create(nb, nl, zeroes, [&](OpBuilder &ib, Location il) {
          Value zeros = arith::ConstantOp::create(
              ib, il,
              DenseElementsAttr::get(vectorType, ib.getZeroAttr(element)));
          vector::StoreOp::create(ib, il, zeros, m.o,
                                  ValueRange{c(ib, il, 0), t, head, col},
                                  false, llvm::Align(16));
          scf::YieldOp::create(ib, il);
        });
      });
}

Value ScanKernel::checkpointsBefore(OpBuilder &nb, Location nl,
                                    const ScanBuffers &m, Value n) {
  Value every = c(nb, nl, m.checkpointEvery);
  auto loop = scf::ForOp::create(
      nb, nl, c(nb, nl, 0), n, c(nb, nl, 1), ValueRange{c(nb, nl, 0)},
      [&](OpBuilder &lb, Location ll, Value j, ValueRange sum) {
        SequenceSpan span = packedSequence(lb, ll, m, j);
        Value length = arith::SubIOp::create(lb, ll, span.end, span.start);
        scf::YieldOp::create(
            lb, ll,
            add(lb, ll, sum[0],
                arith::DivUIOp::create(lb, ll, length, every).getResult()));
      });
  return loop.getResult(0);
}

void ScanKernel::buildCheckpointTailKernel(gpu::LaunchOp launch,
                                           const ScanBuffers &m) {
  // Only the rows past every sequence's checkpoints: the state kernel
  // writes the others, and R = floor(total / N) rows may exceed them where
  // lengths are not multiples of N.
  tid = launch.getThreadIds().x;
  Value row = launch.getBlockIds().x;
  Value head = launch.getBlockIds().y;
  Value used = checkpointsBefore(b, loc, m, m.sequences);
  Value past =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, row, used);
  scf::IfOp::create(b, loc, past, [&](OpBuilder &nb, Location nl) {
    Type element =
        cast<MemRefType>(m.checkpoints.getType()).getElementType();
    Value zero = arith::ConstantOp::create(nb, nl, nb.getZeroAttr(element));
    forEachThread(nb, nl, s.keyDim * s.valueDim,
                  [&](OpBuilder &lb, Location ll, Value i) {
                    Value r = arith::DivUIOp::create(lb, ll, i,
                                                     c(lb, ll, s.valueDim));
                    Value col = arith::RemUIOp::create(lb, ll, i,
                                                       c(lb, ll, s.valueDim));
                    store(lb, ll, zero, m.checkpoints, {row, head, r, col});
                  });
    scf::YieldOp::create(nb, nl);
  });
  gpu::TerminatorOp::create(b, loc);
}
