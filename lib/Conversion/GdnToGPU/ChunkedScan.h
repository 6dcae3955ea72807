//===- ChunkedScan.h - the kernels of the chunked tensor-core scan --------===//
//
// The geometry, the operand tiles and the builder of the two kernels of the
// chunked scan (ChunkedScanToGPU.cpp describes the algorithm). Shared by the
// product and staging helpers (ScanKernel.cpp), the WY kernel
// (ScanWYKernel.cpp), the state kernel (ScanStateKernel.cpp) and the
// rewrite pattern (ChunkedScanToGPU.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_CONVERSION_GDNTOGPU_CHUNKEDSCAN_H
#define GDN_LIB_CONVERSION_GDNTOGPU_CHUNKEDSCAN_H

#include "KernelBuilders.h"

#include "gdn/Dialect/Gdn/IR/GdnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <functional>
#include <optional>

namespace mlir::gdn::scan {
/// Row padding of the f32 tiles, in floats, and of the bf16 tiles, in
/// halves: row strides of 4 (or 12, 20) mod 32 words put the eight rows an
/// ldmatrix phase reads, and the eight rows of an epilogue store, in
/// different banks.
constexpr int64_t kPad = 4;
constexpr int64_t kHalfPad = 8;
/// Hopper's largest dynamic workgroup memory per block.
constexpr int64_t kMaxSharedBytes = 227 * 1024;

/// The most output tiles a warp of the state kernel accumulates at once
/// (one block per multiprocessor leaves registers to spare), and of the
/// WY kernel.
constexpr int64_t kStateMaxGroup = 16;
constexpr int64_t kChunkMaxGroup = 4;

/// How a product deals its 16 x 8 output tiles to the warps: a rectangle
/// of regionRows x regionCols tiles per warp, accumulated in groups of
/// groupRows x groupCols.
struct ProductPlan {
  int64_t regionRows, regionCols, groupRows, groupCols, cost;
  bool operator==(const ProductPlan &other) const {
    return regionRows == other.regionRows && regionCols == other.regionCols &&
           groupRows == other.groupRows && groupCols == other.groupCols &&
           cost == other.cost;
  }
};
/// The plan for an [m, n] product with the fewest fragment bytes, groups
/// of at most `maxGroup` tiles; none where the tiles do not divide evenly
/// among the warps (the product then loops over tiles).
std::optional<ProductPlan> planProduct(int64_t m, int64_t n, int64_t warps,
                                       int64_t maxGroup);

/// Consumes two neighbouring f32 result elements (row, even col, the values
/// at col and col + 1): one wider store instead of two.
using PairEpilogue =
    std::function<void(OpBuilder &, Location, Value, Value, Value, Value)>;
/// Gives the initial accumulator element (row, col).
using Init = std::function<Value(OpBuilder &, Location, Value, Value)>;

/// A bf16 tile in workgroup memory, [rows, cols] with padded rows.
struct HalfTile {
  Value halves;
  /// For a tile of several slots ([slots, rows, cols]): the slot in use.
  Value slot;

  SmallVector<Value> at(Value row, Value col) const {
    if (slot)
      return {slot, row, col};
    return {row, col};
  }
};

/// One term A B^T of a product: A [M, depth] and B [N, depth], stored with
/// the depth (reduction) dimension contiguous unless marked depth-major.
struct Term {
  int64_t depth;
  HalfTile a, b;
  /// Whether A (or B) is stored depth-major, [depth, M] (or [depth, N]):
  /// its fragments are then loaded transposed (ldmatrix .trans), so that a
  /// producer can store rows instead of scattering a transpose.
  bool aDepthMajor = false, bDepthMajor = false;
};

/// The geometry of the kernel, decided when the pattern matches.
struct ScanShape {
  int64_t chunk, keyDim, valueDim, valueTile, warps;
  /// The tensor cores' operand type, of every 16-bit tile and scratch
  /// buffer: f16 for f16 inputs (whose 10-bit mantissas bf16 would round
  /// to 7), bf16 otherwise.
  Type operand;

  /// The threads that compute (products, epilogues).
  int64_t threads() const { return 32 * warps; }
  /// The state kernel adds copy warps: they alone issue the cp.async of
  /// the next chunk's operands, so that the compute warps never wait for
  /// room in the memory pipeline.
  int64_t copyWarps = 2;
  int64_t stateThreads() const { return threads() + 32 * copyWarps; }
  /// Whether the state kernel keeps the f32 state tile in the compute
  /// threads' registers across chunks: where the tiles of the state
  /// product divide evenly among the warps. Otherwise it stays in
  /// workgroup memory.
  bool stateInRegisters() const {
    return planProduct(keyDim, valueTile, warps, kStateMaxGroup).has_value();
  }
  /// Whether the state kernel keeps Y = exp(G) Q S in registers from the
  /// product that makes it (paired with K S) to the one that adds P Vnew:
  /// where both deal the output tiles to the lanes alike. Otherwise Y goes
  /// through workgroup memory.
  bool yInRegisters() const {
    std::optional<ProductPlan> paired =
        planProduct(chunk, valueTile, warps, kStateMaxGroup / 2);
    return paired &&
           paired == planProduct(chunk, valueTile, warps, kStateMaxGroup);
  }
  static int64_t floatBytes(int64_t rows, int64_t cols) {
    return rows * (cols + kPad) * 4;
  }
  static int64_t halfBytes(int64_t rows, int64_t cols) {
    return rows * (cols + kHalfPad) * 2;
  }
  /// The WY kernel: bf16 K [C, K]; Q [C, K], later f32 diagonal blocks of
  /// T [C, 17] in its place; f32 A, then T [C, C]; three chunk vectors.
  int64_t chunkKernelBytes() const {
    return halfBytes(chunk, keyDim) +
           std::max(halfBytes(chunk, keyDim), chunk * 17 * 4) +
           floatBytes(chunk, chunk) + 3 * chunk * 4;
  }
  /// The state pass, every operand of a chunk in two slots (the next
  /// chunk's arrive by cp.async during this chunk's products): bf16 Q and K
  /// [C, K], T diag(beta) and P [C, C], V [C, Vt]; the chunk's f32
  /// log-decays G [C] and row factors exp(G_C - G), exp(G) [2, C]; then
  /// bf16 X = V - diag(exp(G)) K S, Vnew and diag(exp(G_C - G)) Vnew [C,
  /// Vt], S [K, Vt]; f32 exp(G) Q S [C, Vt] and S [K, Vt] where they are
  /// not kept in registers.
  int64_t stateKernelBytes() const {
    return 2 * (2 * halfBytes(chunk, keyDim) + 2 * halfBytes(chunk, chunk) +
                halfBytes(chunk, valueTile) + 3 * chunk * 4) +
           3 * halfBytes(chunk, valueTile) + halfBytes(keyDim, valueTile) +
           (yInRegisters() ? 0 : floatBytes(chunk, valueTile)) +
           (stateInRegisters() ? 0 : floatBytes(keyDim, valueTile));
  }
};

/// The geometry of `op`'s scan with the chunk, warps and copy warps of its
/// strategy and `valueTile` state columns per block.
ScanShape shapeOf(DeltaRuleOp op, int64_t valueTile);

/// The operands, results and global scratch of the two kernels.
struct ScanBuffers {
  Value q, k, v, g, beta, state; // state may be null (zeros)
  Value o, finalState;
  /// Per chunk row, from the WY kernel to the state pass: T diag(beta)
  /// and P (bf16 [B, Hv, Tp, C]) and the cumulative log-decay G (f32 [B,
  /// Hv, Tp]); Tp is T rounded up to whole chunks. The state pass reads
  /// q, k and v as given and applies the decays to its own results.
  Value tb, p, gates;
  /// bf16 q, k [B, T, H, K] and v [B, T, Hv, V] for the state pass: the
  /// operands themselves, or copies that the WY kernel makes of other
  /// 16-bit types.
  Value qHalves, kHalves, vHalves;
  int64_t groupSize;
  float scale;
  /// Packed sequences: the offsets (i32 [N + 1]) and N; null for a batch
  /// of equal lengths. Chunk j of sequence n has the scratch rows from
  /// (start_n / C + n + j) x C: a layout that needs no table of the
  /// lengths, within ceil(total / C) + N chunk rows (packedChunkRows).
  Value offsets, sequences;
  /// A pool of states: `state` and `finalState` are one buffer, read at
  /// readIndices[n] and written in place at writeIndices[n]; null without.
  Value readIndices, writeIndices;
  /// Raw gates: g and beta hold a Qwen-style layer's a and b, and the WY
  /// kernel computes the gates from them and A_log, dt_bias (f32 [Hv]);
  /// null without.
  Value aLog, dtBias;
  /// Checkpoints: the state after every `checkpointEvery` tokens (a
  /// multiple of the chunk) of each sequence, [B, C, Hv, K, V], or [R, Hv,
  /// K, V] with the packed sequences' one after another; null without.
  Value checkpoints;
  int64_t checkpointEvery = 0;
  /// Context parallelism (ScanSegments.cpp): each batch entry's sequence in
  /// `segments` segments of `segmentTokens` tokens (a multiple of the
  /// chunk; the last ones may be short or empty). `partials` (f32 [B S, Hv,
  /// K, V + K]) holds each segment's state from [0 | I], the columns past V
  /// its transition; `initials` (f32 [B S, Hv, K, V]) the true state at
  /// each segment's start. 0 segments: none.
  int64_t segments = 0;
  Value segmentTokens, partials, initials;

  bool packed() const { return static_cast<bool>(offsets); }
  bool pooled() const { return static_cast<bool>(readIndices); }
};

/// The chunk rows of the WY scratch for packed sequences: ceil(total / C)
/// + N, enough for every sequence's first row (start_n / C + n) plus its
/// ceil(length_n / C) chunks, whatever the lengths.
Value packedChunkRows(OpBuilder &b, Location loc, Value total, Value sequences,
                      int64_t chunk);

/// Where a block's sequence lies: its batch entry in the token operands,
/// its tokens [start, end), and the first of its chunk rows in the WY
/// scratch.
struct SequenceSpan {
  Value batch, start, end, firstChunk;
};

/// A row of the state operand (or of the pool) and whether there is one
/// (null: always).
struct StateRow {
  Value row, valid;
};

/// Which segments a launch of the state kernel walks (ScanSegments.cpp):
/// block row y is batch entry y / perEntry and segment first + y %
/// perEntry. With `outputs` it writes o and, for the last segment, the
/// final state, starting from the true state; without, it writes the
/// partial states, starting from [0 | I] (the first segment from the true
/// state). perEntry 0: whole sequences, no segments.
struct SegmentRole {
  int64_t first = 0, perEntry = 0;
  bool outputs = true;
  bool segmented() const { return perEntry > 0; }
};

/// State columns per block of the segments' combine kernel.
constexpr int64_t kCombineColumns = 8;
/// The fewest chunks per segment for which a call is split into segments:
/// below, the scan's walk is short anyway and the two extra passes cost
/// more than they save.
constexpr int64_t kMinSegmentChunks = 4;

/// The threads that a block's vectors are dealt to: `count` of them, this
/// one numbered `thread`; all compute threads where left empty.
struct Dealing {
  Value thread;
  int64_t count = 0;
};

/// Builds the body of one of the two kernels; `b` is inside the gpu.launch.
class ScanKernel {
public:
  ScanKernel(OpBuilder &b, Location loc, const ScanShape &shape)
      : b(b), loc(loc), s(shape) {}

  /// Grid (chunks, Hv, B): the state-independent part of every chunk (A,
  /// T and P; T diag(beta), P and G to scratch), all chunks at once.
  void buildChunkKernel(gpu::LaunchOp launch, const ScanBuffers &m);
  /// Grid (Hv x V / Vt, B): the chunks of one sequence in order, with the
  /// f32 state tile in registers (stateInRegisters) or workgroup memory.
  void buildStateKernel(gpu::LaunchOp launch, const ScanBuffers &m,
                        int64_t valueTiles, SegmentRole role = {});
  /// Grid (Hv x V / kCombineColumns, B), K threads: the start state of
  /// every segment from the partial states (ScanSegments.cpp).
  void buildSegmentCombineKernel(gpu::LaunchOp launch, const ScanBuffers &m);
  /// Grid (R, Hv): zeros the rows of packed checkpoints past the last
  /// sequence's (ScanSequences.cpp).
  void buildCheckpointTailKernel(gpu::LaunchOp launch, const ScanBuffers &m);

private:
  Value c(OpBuilder &nb, Location nl, int64_t v) {
    return indexConstant(nb, nl, v);
  }
  Value f(OpBuilder &nb, Location nl, float v) {
    return arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(v));
  }
  static Value add(OpBuilder &nb, Location nl, Value x, Value y) {
    return arith::AddIOp::create(nb, nl, x, y);
  }
  static Value mul(OpBuilder &nb, Location nl, Value x, Value y) {
    return arith::MulIOp::create(nb, nl, x, y);
  }
  static Value load(OpBuilder &nb, Location nl, Value m, ValueRange idx) {
    return memref::LoadOp::create(nb, nl, m, idx);
  }
  static void store(OpBuilder &nb, Location nl, Value v, Value m,
                    ValueRange idx) {
    memref::StoreOp::create(nb, nl, v, m, idx);
  }
  /// Rounds an f32 value to bf16 and stores it into a half tile.
  static void storeHalf(OpBuilder &nb, Location nl, Value v,
                        const HalfTile &tile, Value row, Value col) {
    Type element = cast<MemRefType>(tile.halves.getType()).getElementType();
    store(nb, nl, arith::TruncFOp::create(nb, nl, element, v), tile.halves,
          {row, col});
  }
  void barrier(OpBuilder &nb, Location nl) { gpu::BarrierOp::create(nb, nl); }
  /// bar.sync `id` for `threads` threads: a barrier that only some warps
  /// take part in (the others run elsewhere and never reach it).
  /// A named barrier that warps reach from different code (the copy and
  /// the compute warps' hand-over): the unaligned `barrier.sync`. The
  /// aligned `bar.sync` of namedBarrier promises that every warp of one
  /// barrier generation runs the same instruction; broken, the barrier's
  /// behaviour is undefined (synccheck: "divergent thread(s) in block").
  void rolesBarrier(OpBuilder &nb, Location nl, int64_t id, int64_t threads) {
    Type i32 = nb.getI32Type();
    LLVM::CallIntrinsicOp::create(
        nb, nl, nb.getStringAttr("llvm.nvvm.barrier.cta.sync.count"),
        ValueRange{
            arith::ConstantOp::create(nb, nl, nb.getIntegerAttr(i32, id)),
            arith::ConstantOp::create(nb, nl,
                                      nb.getIntegerAttr(i32, threads))});
  }
  void namedBarrier(OpBuilder &nb, Location nl, int64_t id, int64_t threads) {
    Type i32 = nb.getI32Type();
    NVVM::BarrierOp::create(
        nb, nl, Type(),
        arith::ConstantOp::create(nb, nl, nb.getIntegerAttr(i32, id)),
        arith::ConstantOp::create(nb, nl, nb.getIntegerAttr(i32, threads)),
        nullptr, Value());
  }
  /// Stores two f32 values, converted to the element type of `memory`, at
  /// `indices` and the next column: one store instruction.
  static void storePair(OpBuilder &nb, Location nl, Value first, Value second,
                        Value memory, ValueRange indices) {
    Type element = cast<MemRefType>(memory.getType()).getElementType();
    auto pairType = VectorType::get({2}, nb.getF32Type());
    Value pair = vector::FromElementsOp::create(nb, nl, pairType,
                                                ValueRange{first, second});
    if (!element.isF32())
      pair =
          arith::TruncFOp::create(nb, nl, VectorType::get({2}, element), pair);
    vector::StoreOp::create(
        nb, nl, pair, memory, indices, false,
        llvm::Align(2 * element.getIntOrFloatBitWidth() / 8));
  }

  /// A view of workgroup memory at `offset` bytes (advanced past it).
  Value carve(ArrayRef<int64_t> shape, Type element, int64_t &offset);
  /// An f32 [rows, cols] tile with padded rows.
  Value carveFloats(int64_t rows, int64_t cols, int64_t &offset) {
    return carve({rows, cols + kPad}, b.getF32Type(), offset);
  }
  /// A bf16 [rows, cols] tile with padded rows.
  HalfTile carveHalves(int64_t rows, int64_t cols, int64_t &offset);
  /// `slots` such tiles in a row ([slots, rows, cols]); set `slot` to use
  /// one.
  HalfTile carveHalfSlots(int64_t slots, int64_t rows, int64_t cols,
                          int64_t &offset);

  /// out[M, N] = init + sum of terms A B^T, on tensor cores: each warp
  /// takes a fixed rectangle of the 16 x 8 output tiles; `epilogue` gets
  /// every pair of neighbouring elements. Where planProduct has a plan,
  /// each lane calls `init` for its elements and then `epilogue` for the
  /// same elements, in the same order, a fixed number of times: a caller
  /// can hand out and collect per-lane values (such as accumulators kept
  /// in registers across products) by position.
  void product(int64_t m, int64_t n, ArrayRef<Term> terms, Init init,
               PairEpilogue epilogue);
  /// One output of products().
  struct ProductOutput {
    ArrayRef<Term> terms;
    Init init;
    PairEpilogue epilogue;
  };
  /// Several [M, N] products whose terms share their B operands (and
  /// differ in A), in one pass where planProduct has a plan: each warp
  /// loads a B fragment once for all of them and has their independent
  /// mma.sync chains in flight at once (one tile loop per output
  /// otherwise).
  void products(int64_t m, int64_t n, ArrayRef<ProductOutput> outputs);
  /// ldmatrix of `count` 8 x 8 bf16 matrices of `tile`, this lane giving
  /// the address of (row, col): one 32-bit fragment register per matrix.
  SmallVector<Value> loadMatrices(OpBuilder &nb, Location nl,
                                  const HalfTile &tile, Value row, Value col,
                                  int64_t count, bool transpose);
  /// The A fragment (four registers) of output rows `m0`..+15 and the B
  /// fragment (two) of output columns `n0`..+7, at k-step `step` of `term`.
  SmallVector<Value> fragmentA(OpBuilder &nb, Location nl, const Term &term,
                               Value m0, int64_t step);
  SmallVector<Value> fragmentB(OpBuilder &nb, Location nl, const Term &term,
                               Value n0, int64_t step);
  /// The same with the tiles in a loop (tile counts that do not divide
  /// evenly among the warps): no fragment is shared.
  void productTileLoop(int64_t m, int64_t n, ArrayRef<Term> terms, Init init,
                       PairEpilogue epilogue);

  /// for (i = tid; i < count; i += threads) body(i)
  void forEachThread(OpBuilder &nb, Location nl, int64_t count,
                     function_ref<void(OpBuilder &, Location, Value)> body);

  /// T = (I + A)^-1 for the unit lower-triangular chunk matrix A in ms
  /// (f32, in place).
  void solve();

  /// Thread coordinates and the dynamic workgroup memory.
  void setUp(gpu::LaunchOp launch);
  /// Packed sequence n (ScanSequences.cpp): its offsets clamped into [0,
  /// total] with end >= start, as gdn-unpack-sequences reads them.
  SequenceSpan packedSequence(OpBuilder &nb, Location nl, const ScanBuffers &m,
                              Value n);
  /// Segment role.first + blockRow % role.perEntry of batch entry blockRow
  /// / role.perEntry: its tokens clamped into [0, T], and its index.
  std::pair<SequenceSpan, Value> segmentSpan(OpBuilder &nb, Location nl,
                                             const ScanBuffers &m,
                                             Value blockRow,
                                             const SegmentRole &role);
  /// The packed sequence whose chunk rows include `chunkRow`, if the
  /// offsets increase (a binary search over the sequences' first rows;
  /// the caller checks that the row is one of the sequence's chunks).
  Value sequenceOfChunkRow(const ScanBuffers &m, Value chunkRow);
  /// The state row that sequence (or batch entry) n reads, or writes:
  /// n, or its slot of the pool, valid inside [0, S).
  StateRow stateRow(OpBuilder &nb, Location nl, const ScanBuffers &m, Value n,
                    bool write);
  /// The checkpoints of the packed sequences before sequence n: the row
  /// of its first.
  Value checkpointsBefore(OpBuilder &nb, Location nl, const ScanBuffers &m,
                          Value n);
  /// Zeros o's rows of the chunk from token `start` that lie outside
  /// every packed sequence, for value head `head`.
  void zeroRowsOutsideSequences(const ScanBuffers &m, Value start, Value head);
  /// Token `start + r` clamped into the sequence, and whether it is inside.
  std::pair<Value, Value> token(OpBuilder &nb, Location nl, Value start,
                                Value tokens, Value r);
  /// Copies a [rows, width] block into workgroup memory in vectors of 8
  /// elements (16 bytes of bf16: one load instruction each), all loads of a
  /// thread issued before its stores: `loadVector(row, col)` reads the 8
  /// elements from `col`, `storeVector(row, col, vector)` stores them in
  /// every form a product needs. Consecutive threads take consecutive
  /// vectors of a row: coalesced loads.
  void stageVectors(
      int64_t rows, int64_t width,
      function_ref<Value(OpBuilder &, Location, Value, Value)> loadVector,
      function_ref<void(OpBuilder &, Location, Value, Value, Value)>
          storeVector);
  /// `copy(row, col)` for every vector of 8 elements of a [rows, width]
  /// block, dealt to the threads as in stageVectors (for cp.async, which
  /// needs no registers).
  void
  forEachVector(int64_t rows, int64_t width,
                function_ref<void(OpBuilder &, Location, Value, Value)> copy,
                Dealing dealing = {});
  /// The vectors of 8 elements of a [rows, width] block that this thread
  /// takes (consecutive threads, consecutive vectors of a row); `valid` is
  /// null where every thread's vector is inside the block.
  struct VectorPosition {
    Value valid, row, col;
  };
  SmallVector<VectorPosition> vectorPositions(int64_t rows, int64_t width,
                                              Dealing dealing = {});
  /// The rows of a token-indexed operand for the chunk from token `start`
  /// ([B, T, heads, width] at `batch` and `sourceHead`, from column
  /// `firstCol` if given) into `to` by cp.async, 16 bytes per copy, dealt
  /// as in forEachVector. With `partial`, rows are clamped into the
  /// sequence and zero-filled past its end.
  struct TokenRows {
    Value source, batch, sourceHead, firstCol;
  };
  void copyTokenRows(const HalfTile &to, int64_t width, const TokenRows &rows,
                     Value start, Value tokens, bool partial,
                     Dealing dealing = {});
  /// `body(partial)` twice, under scf.if (the chunk from token `start` lies
  /// inside the sequence): only the last chunk can be partial, and the
  /// others' copies then move by constants (one address register per
  /// operand instead of a clamp, a select and an address per copy).
  void wholeOrPartialChunk(Value start, Value tokens,
                           function_ref<void(bool partial)> body);
  /// `body` where `position` is inside its block.
  void ifValid(const VectorPosition &position,
               function_ref<void(OpBuilder &, Location)> body);

  OpBuilder &b;
  Location loc;
  ScanShape s;
  /// The most output tiles a warp accumulates at once (four accumulator
  /// registers each).
  int64_t maxGroup = kChunkMaxGroup;
  Value tid, warp, group, quad, sharedBase;
  /// The row (lane % 8) and column (8 x (lane / 8 % 2), 8 x (lane / 16))
  /// offsets of the address this lane gives ldmatrix.
  Value matrixRow, matrixColumn, matrixHalf;
  // WY kernel: bf16 K and Q; f32 A, overwritten by T in the solve, and
  // T's diagonal blocks; the chunk vectors.
  HalfTile kB, qB;
  Value ms, ds;
  Value gRaw, betas, gCum;
  // State kernel: two slots of bf16 Q (qB), K (kB), T diag(beta), P, V and of
  // the f32 log-decays and row factors; bf16 X, Vnew, its rows decayed to
  // the chunk's end, and S; f32 exp(G) Q S and S.
  HalfTile tB, pB, vB, xB, vN, vD, sB;
  Value gateRows, rowFactors, ys, ss;
};

} // namespace mlir::gdn::scan

#endif // GDN_LIB_CONVERSION_GDNTOGPU_CHUNKEDSCAN_H
