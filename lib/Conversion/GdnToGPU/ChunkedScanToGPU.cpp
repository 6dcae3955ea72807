//===- ChunkedScanToGPU.cpp - gdn.delta_rule as a chunked tensor-core scan ===//
//
// The chunkwise-parallel (WY) form of docs/chunked-delta-rule.md in two
// kernels. Per chunk of C tokens (G the inclusive cumulative log-decay
// inside the chunk):
//
//   A    = strict_lower(beta_i exp(G_i - G_j) k_i.k_j)        (C x C)
//   T    = (I + A)^-1                       (blocked forward substitution)
//   W    = T diag(beta exp(G)) K,   U = T diag(beta) V
//   P    = lower(exp(G_i - G_j) q_i.k_j)
//   Vnew = U - W S
//   O    = scale (diag(exp(G)) Q S + P Vnew)
//   S    = exp(G_C) S + (diag(exp(G_C - G)) K)^T Vnew
//
// The WY kernel computes the state-independent lines (A to P) of every
// chunk at once and leaves them in global scratch; the state kernel, a
// block per (value head x value-column tile, batch), walks the chunks of
// its sequence in order with the state tile S [K, Vt] in f32 workgroup
// memory and computes the last three.
//
// Every matrix product runs on tensor cores (mma.sync m16n8k16, bf16
// operands, f32 accumulation): each warp takes a fixed group of 16 x 8
// output tiles, loads its fragments with ldmatrix from bf16 tiles stored as
// they are produced (row-major, or depth-major and loaded transposed), and
// keeps the accumulators in registers; the epilogue of a product applies
// masks, decays and the destination, two neighbours per store. The solve
// stays in f32 on the CUDA cores. Rows past the end of the sequence
// are zero (beta = 0, g = 0, k = 0), so they change nothing.
//
//===----------------------------------------------------------------------===//

#include "gdn/Conversion/GdnToGPU/GdnToGPU.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Utils/TensorBuilders.h"

#include "KernelBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::gdn;

namespace {
/// Row padding of the f32 tiles, in floats, and of the bf16 tiles, in
/// halves: row strides of 4 (or 12, 20) mod 32 words put the eight rows an
/// ldmatrix phase reads, and the eight rows of an epilogue store, in
/// different banks.
constexpr int64_t kPad = 4;
constexpr int64_t kHalfPad = 8;
/// Hopper's largest dynamic workgroup memory per block.
constexpr int64_t kMaxSharedBytes = 227 * 1024;

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

/// One term A B^T of a product: A [M, depth] and B [N, depth], both stored
/// with the depth (reduction) dimension contiguous.
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

  int64_t threads() const { return 32 * warps; }
  static int64_t floatBytes(int64_t rows, int64_t cols) {
    return rows * (cols + kPad) * 4;
  }
  static int64_t halfBytes(int64_t rows, int64_t cols) {
    return rows * (cols + kHalfPad) * 2;
  }
  /// The WY kernel: bf16 K [C, K]; Q [C, K] and later, in the same place,
  /// T diag(beta exp(G)) and T diag(beta) [C, C]; V [C, V]; f32 A, then T
  /// [C, C]; six chunk vectors; f32 diagonal blocks of T [C, 17]. Under 75
  /// KiB (K = V = 128) lets three blocks share a multiprocessor.
  int64_t chunkKernelBytes() const {
    return halfBytes(chunk, keyDim) +
           std::max(halfBytes(chunk, keyDim), 2 * halfBytes(chunk, chunk)) +
           halfBytes(chunk, valueDim) + floatBytes(chunk, chunk) +
           6 * chunk * 4 + chunk * 17 * 4;
  }
  /// The state pass: bf16 exp(G) Q, -W [C, K]; two exp(G_C - G) K
  /// [C, K]; P [C, C]; Vnew [C, Vt]; S [K, Vt]; f32 S [K, Vt], U (then
  /// exp(G) Q S) [C, Vt].
  int64_t stateKernelBytes() const {
    return 4 * halfBytes(chunk, keyDim) + halfBytes(chunk, chunk) +
           halfBytes(chunk, valueTile) + halfBytes(keyDim, valueTile) +
           floatBytes(keyDim, valueTile) + floatBytes(chunk, valueTile);
  }
};

/// The operands, results and global scratch of the two kernels.
struct ScanBuffers {
  Value q, k, v, g, beta, state; // state may be null (zeros)
  Value o, finalState;
  /// Per chunk row, from the WY kernel to the state pass: -W (bf16
  /// [B, Hv, Tp, K]), U (bf16 [B, Hv, Tp, V]), P (bf16 [B, Hv, Tp, C]),
  /// the cumulative log-decay G (f32 [B, Hv, Tp]), exp(G) Q (bf16
  /// [B, Hv, Tp, K]) and exp(G_C - G) K (bf16 [B, Hv, Tp, K]);
  /// Tp is T rounded up to whole chunks.
  Value w, u, p, gates, qs, kst;
  int64_t groupSize;
  float scale;
};

/// Builds the body of one of the two kernels; `b` is inside the gpu.launch.
class ScanKernel {
public:
  ScanKernel(OpBuilder &b, Location loc, const ScanShape &shape)
      : b(b), loc(loc), s(shape) {}

  /// Grid (chunks, Hv, B): the state-independent part of every chunk (A,
  /// T, -W, U, P and G), all chunks at once.
  void buildChunkKernel(gpu::LaunchOp launch, const ScanBuffers &m);
  /// Grid (Hv x V / Vt, B): the chunks of one sequence in order, with the
  /// state tile in workgroup memory.
  void buildStateKernel(gpu::LaunchOp launch, const ScanBuffers &m,
                        int64_t valueTiles);

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
    store(nb, nl, arith::TruncFOp::create(nb, nl, nb.getBF16Type(), v),
          tile.halves, {row, col});
  }
  void barrier(OpBuilder &nb, Location nl) { gpu::BarrierOp::create(nb, nl); }
  /// Stores two f32 values, converted to the element type of `memory`, at
  /// `indices` and the next column: one store instruction.
  static void storePair(OpBuilder &nb, Location nl, Value first, Value second,
                        Value memory, ValueRange indices) {
    Type element = cast<MemRefType>(memory.getType()).getElementType();
    auto pairType = VectorType::get({2}, nb.getF32Type());
    Value pair = vector::FromElementsOp::create(nb, nl, pairType,
                                                ValueRange{first, second});
    if (!element.isF32())
      pair = arith::TruncFOp::create(nb, nl, VectorType::get({2}, element),
                                     pair);
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
  /// A bf16 [rows, cols] tile with padded rows, and its word view.
  HalfTile carveHalves(int64_t rows, int64_t cols, int64_t &offset);
  /// `slots` such tiles in a row ([slots, rows, cols]); set `slot` to use
  /// one.
  HalfTile carveHalfSlots(int64_t slots, int64_t rows, int64_t cols,
                          int64_t &offset);

  /// out[M, N] = init + sum of terms A B^T, on tensor cores: the 16 x 8
  /// output tiles are dealt to the warps in turn; `epilogue` gets every
  /// element.
  void product(int64_t m, int64_t n, ArrayRef<Term> terms, Init init,
               PairEpilogue epilogue);
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
  /// acc (four f32) += A B on one mma.sync m16n8k16 (bf16 operands).
  static void multiplyAccumulate(OpBuilder &nb, Location nl, ArrayRef<Value> a,
                                 ArrayRef<Value> bFragment,
                                 SmallVectorImpl<Value> &acc) {
    Type f32 = nb.getF32Type();
    auto accType = LLVM::LLVMStructType::getLiteral(nb.getContext(),
                                                    {f32, f32, f32, f32});
    Value result = NVVM::MmaOp::create(
        nb, nl, accType, a, bFragment, acc, {16, 8, 16}, std::nullopt,
        std::nullopt,
        std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                      NVVM::MMATypes::bf16},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    for (int64_t e = 0; e < 4; ++e)
      acc[e] = LLVM::ExtractValueOp::create(nb, nl, result, e);
  }
  /// The same with the tiles in a loop (tile counts that do not divide
  /// evenly among the warps): no fragment is shared.
  void productTileLoop(int64_t m, int64_t n, ArrayRef<Term> terms, Init init,
                       PairEpilogue epilogue);

  /// for (i = tid; i < count; i += threads) body(i)
  void forEachThread(OpBuilder &nb, Location nl, int64_t count,
                     function_ref<void(OpBuilder &, Location, Value)> body);


  /// T = (I + A)^-1 for the unit lower-triangular chunk matrix A in ms
  /// (f32, in place), then T's bf16 copies with scaled columns, tW and tU.
  void solve();

  /// Thread coordinates and the dynamic workgroup memory.
  void setUp(gpu::LaunchOp launch);
  /// Token `start + r` clamped into the sequence, and whether it is inside.
  std::pair<Value, Value> token(OpBuilder &nb, Location nl, Value start,
                                Value tokens, Value r);
  /// Copies a [rows, width] block into workgroup memory in vectors of 8
  /// elements (16 bytes of bf16: one load instruction each), all loads of a
  /// thread issued before its stores: `loadVector(row, col)` reads the 8
  /// elements from `col`, `storeVector(row, col, vector)` stores them in
  /// every form a product needs. Consecutive threads take consecutive
  /// vectors of a row: coalesced loads.
  void stageVectors(int64_t rows, int64_t width,
                    function_ref<Value(OpBuilder &, Location, Value, Value)>
                        loadVector,
                    function_ref<void(OpBuilder &, Location, Value, Value,
                                      Value)>
                        storeVector);
  /// The two halves of stageVectors, for loads issued long before their
  /// stores (the next chunk's operands, in flight during this chunk's
  /// products).
  struct LoadedVector {
    Value valid, row, col, vector;
  };
  SmallVector<LoadedVector>
  loadVectors(int64_t rows, int64_t width,
              function_ref<Value(OpBuilder &, Location, Value, Value)>
                  loadVector);
  void storeVectors(ArrayRef<LoadedVector> loaded,
                    function_ref<void(OpBuilder &, Location, Value, Value,
                                      Value)>
                        storeVector);
  /// `copy(row, col)` for every vector of 8 elements of a [rows, width]
  /// block, dealt to the threads as in stageVectors (for cp.async, which
  /// needs no registers).
  void forEachVector(int64_t rows, int64_t width,
                     function_ref<void(OpBuilder &, Location, Value, Value)>
                         copy);

  OpBuilder &b;
  Location loc;
  ScanShape s;
  Value tid, warp, group, quad, sharedBase;
  /// The row (lane % 8) and column (8 x (lane / 8 % 2), 8 x (lane / 16))
  /// offsets of the address this lane gives ldmatrix.
  Value matrixRow, matrixColumn, matrixHalf;
  // bf16 operand tiles.
  // WY kernel: K, Q, V and T with its columns scaled for W and for U.
  HalfTile kB, qB, vB, tW, tU;
  // State kernel: exp(G) Q, -W, exp(G_C - G) K (two slots), P, Vnew, S.
  HalfTile qsB, wB, kS, pB, vN, sB;
  // f32 tiles and chunk vectors.
  // WY kernel: A, overwritten by T in the solve, and T's diagonal blocks.
  Value ms, ds;
  Value ss, us;
  Value gRaw, betas, gCum, decayQ, decayW, decayS;
};

Value ScanKernel::carve(ArrayRef<int64_t> shape, Type element,
                        int64_t &offset) {
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                              gpu::AddressSpace::Workgroup);
  auto type =
      MemRefType::get(shape, element, MemRefLayoutAttrInterface(), workgroup);
  Value view = memref::ViewOp::create(b, loc, type, sharedBase,
                                      c(b, loc, offset), ValueRange{});
  offset += type.getNumElements() * element.getIntOrFloatBitWidth() / 8;
  return view;
}

HalfTile ScanKernel::carveHalves(int64_t rows, int64_t cols,
                                 int64_t &offset) {
  Value halves = carve({rows, cols + kHalfPad}, b.getBF16Type(), offset);
  return {halves, Value()};
}

HalfTile ScanKernel::carveHalfSlots(int64_t slots, int64_t rows,
                                    int64_t cols, int64_t &offset) {
  Value halves =
      carve({slots, rows, cols + kHalfPad}, b.getBF16Type(), offset);
  return {halves, Value()};
}

SmallVector<Value> ScanKernel::loadMatrices(OpBuilder &nb, Location nl,
                                            const HalfTile &tile, Value row,
                                            Value col, int64_t count,
                                            bool transpose) {
  Type half = nb.getBF16Type();
  Value matrices = nvgpu::LdMatrixOp::create(
      nb, nl, VectorType::get({count, 2}, half), tile.halves,
      tile.at(row, col), transpose, count);
  auto wordType = VectorType::get({1}, nb.getI32Type());
  SmallVector<Value> registers;
  for (int64_t i = 0; i < count; ++i) {
    Value pair = vector::ExtractOp::create(nb, nl, matrices, i);
    Value word = vector::BitCastOp::create(nb, nl, wordType, pair);
    registers.push_back(vector::ExtractOp::create(nb, nl, word, 0));
  }
  return registers;
}

// The PTX ISA's fragment layouts of mma.m16n8k16: A registers are the 8 x 8
// quarters (rows +0/+8, depth +0/+8) in the order (0,0), (8,0), (0,8),
// (8,8); B registers the depth halves +0/+8. Lane l gives the address of row
// l % 8 of matrix l / 8.
SmallVector<Value> ScanKernel::fragmentA(OpBuilder &nb, Location nl,
                                         const Term &term, Value m0,
                                         int64_t step) {
  Value k0 = c(nb, nl, step * 16);
  if (term.aDepthMajor)
    return loadMatrices(nb, nl, term.a,
                        add(nb, nl, k0, add(nb, nl, matrixRow, matrixHalf)),
                        add(nb, nl, m0, matrixColumn), 4, /*transpose=*/true);
  return loadMatrices(nb, nl, term.a,
                      add(nb, nl, m0, add(nb, nl, matrixRow, matrixColumn)),
                      add(nb, nl, k0, matrixHalf), 4, /*transpose=*/false);
}

SmallVector<Value> ScanKernel::fragmentB(OpBuilder &nb, Location nl,
                                         const Term &term, Value n0,
                                         int64_t step) {
  Value k0 = c(nb, nl, step * 16);
  if (term.bDepthMajor)
    return loadMatrices(nb, nl, term.b,
                        add(nb, nl, k0, add(nb, nl, matrixRow, matrixColumn)),
                        n0, 2, /*transpose=*/true);
  return loadMatrices(nb, nl, term.b, add(nb, nl, n0, matrixRow),
                      add(nb, nl, k0, matrixColumn), 2, /*transpose=*/false);
}

void ScanKernel::product(int64_t m, int64_t n, ArrayRef<Term> terms,
                         Init init, PairEpilogue epilogue) {
  int64_t tilesN = n / 8, tiles = (m / 16) * tilesN;
  int64_t perWarp = tiles / s.warps;
  // A warp's tiles are one static group: a run of one tile row (the A
  // fragments are shared) or whole tile rows (the B fragments are shared).
  bool grouped = tiles % s.warps == 0 &&
                 (tilesN % perWarp == 0 || perWarp % tilesN == 0);
  if (!grouped) {
    productTileLoop(m, n, terms, init, epilogue);
    return;
  }
  // Tile i of this warp is (rowBase + rowOffset[i], colBase + colOffset[i]).
  Value first = mul(b, loc, warp, c(b, loc, perWarp));
  Value rowBase, colBase;
  SmallVector<int64_t> rowOffset, colOffset;
  if (tilesN % perWarp == 0) {
    rowBase = arith::DivUIOp::create(b, loc, first, c(b, loc, tilesN));
    colBase = arith::RemUIOp::create(b, loc, first, c(b, loc, tilesN));
    for (int64_t i = 0; i < perWarp; ++i) {
      rowOffset.push_back(0);
      colOffset.push_back(i);
    }
  } else {
    rowBase = mul(b, loc, warp, c(b, loc, perWarp / tilesN));
    colBase = c(b, loc, 0);
    for (int64_t i = 0; i < perWarp; ++i) {
      rowOffset.push_back(i / tilesN);
      colOffset.push_back(i % tilesN);
    }
  }
  // Accumulator coordinates of this lane (PTX ISA, mma.m16n8k16): rows g
  // and g + 8, columns 2t and 2t + 1.
  auto aRow = [&](int64_t offset) {
    return add(b, loc,
               mul(b, loc, add(b, loc, rowBase, c(b, loc, offset)),
                   c(b, loc, 16)),
               group);
  };
  // The first of this lane's two output columns of tile column `offset`.
  auto outputColumn = [&](int64_t offset) {
    return add(b, loc,
               mul(b, loc, add(b, loc, colBase, c(b, loc, offset)),
                   c(b, loc, 8)),
               mul(b, loc, quad, c(b, loc, 2)));
  };
  auto accumulateGroup = [&](ArrayRef<int64_t> groupRows,
                             ArrayRef<int64_t> groupCols, int64_t chains) {
    SmallVector<SmallVector<Value>> acc;
    for (int64_t i = 0; i < static_cast<int64_t>(groupRows.size()); ++i) {
      Value row0 = aRow(groupRows[i]);
      Value row1 = add(b, loc, row0, c(b, loc, 8));
      Value col0 = outputColumn(groupCols[i]);
      Value col1 = add(b, loc, col0, c(b, loc, 1));
      for (int64_t chain = 0; chain < chains; ++chain) {
        if (chain == 0) {
          acc.push_back({init(b, loc, row0, col0), init(b, loc, row0, col1),
                         init(b, loc, row1, col0), init(b, loc, row1, col1)});
          continue;
        }
        Value zero = f(b, loc, 0.0f);
        acc.push_back({zero, zero, zero, zero});
      }
    }
    int64_t stepIndex = 0;
    for (const Term &term : terms) {
      for (int64_t step = 0; step < term.depth / 16; ++step, ++stepIndex) {
        DenseMap<int64_t, SmallVector<Value>> aFragments, bFragments;
        for (int64_t i = 0; i < static_cast<int64_t>(groupRows.size()); ++i) {
          SmallVector<Value> &a = aFragments[groupRows[i]];
          if (a.empty())
            a = fragmentA(b, loc, term,
                          mul(b, loc,
                              add(b, loc, rowBase, c(b, loc, groupRows[i])),
                              c(b, loc, 16)),
                          step);
          SmallVector<Value> &bFrag = bFragments[groupCols[i]];
          if (bFrag.empty())
            bFrag = fragmentB(b, loc, term,
                              mul(b, loc,
                                  add(b, loc, colBase,
                                      c(b, loc, groupCols[i])),
                                  c(b, loc, 8)),
                              step);
          multiplyAccumulate(b, loc, a, bFrag,
                             acc[i * chains + stepIndex % chains]);
        }
      }
    }
    for (int64_t i = 0; i < static_cast<int64_t>(groupRows.size()); ++i) {
      SmallVector<Value> sum = acc[i * chains];
      for (int64_t chain = 1; chain < chains; ++chain)
        for (int64_t e = 0; e < 4; ++e)
          sum[e] = arith::AddFOp::create(b, loc, sum[e],
                                         acc[i * chains + chain][e]);
      Value row0 = aRow(groupRows[i]);
      Value row1 = add(b, loc, row0, c(b, loc, 8));
      Value col0 = outputColumn(groupCols[i]);
      epilogue(b, loc, row0, col0, sum[0], sum[1]);
      epilogue(b, loc, row1, col0, sum[2], sum[3]);
    }
  };
  // At most kMaxGroup tiles are accumulated at once (more would hold too
  // many registers for two blocks per multiprocessor); a single tile per warp
  // would be one chain of dependent mma.sync: two accumulators (even and odd
  // k-steps) halve its latency.
  constexpr int64_t kMaxGroup = 4;
  int64_t chains = perWarp == 1 ? 2 : 1;
  for (int64_t groupStart = 0; groupStart < perWarp;
       groupStart += kMaxGroup) {
    int64_t groupSize = std::min(kMaxGroup, perWarp - groupStart);
    ArrayRef<int64_t> groupRows =
        ArrayRef<int64_t>(rowOffset).slice(groupStart, groupSize);
    ArrayRef<int64_t> groupCols =
        ArrayRef<int64_t>(colOffset).slice(groupStart, groupSize);
    accumulateGroup(groupRows, groupCols, chains);
  }
}

void ScanKernel::productTileLoop(int64_t m, int64_t n, ArrayRef<Term> terms,
                                 Init init, PairEpilogue epilogue) {
  int64_t tilesN = n / 8, tiles = (m / 16) * tilesN;
  scf::ForOp::create(
      b, loc, warp, c(b, loc, tiles), c(b, loc, s.warps), ValueRange{},
      [&](OpBuilder &nb, Location nl, Value tile, ValueRange) {
        Value tm = arith::DivUIOp::create(nb, nl, tile, c(nb, nl, tilesN));
        Value tn = arith::RemUIOp::create(nb, nl, tile, c(nb, nl, tilesN));
        // Accumulator coordinates of this lane (PTX ISA, mma.m16n8k16):
        // rows g and g + 8, columns 2t and 2t + 1.
        Value m0 = mul(nb, nl, tm, c(nb, nl, 16));
        Value n0 = mul(nb, nl, tn, c(nb, nl, 8));
        Value row0 = add(nb, nl, m0, group);
        Value row1 = add(nb, nl, row0, c(nb, nl, 8));
        Value col0 = add(nb, nl, n0, mul(nb, nl, quad, c(nb, nl, 2)));
        Value col1 = add(nb, nl, col0, c(nb, nl, 1));
        SmallVector<Value> acc = {init(nb, nl, row0, col0),
                                  init(nb, nl, row0, col1),
                                  init(nb, nl, row1, col0),
                                  init(nb, nl, row1, col1)};
        for (const Term &term : terms) {
          for (int64_t step = 0; step < term.depth / 16; ++step) {
            SmallVector<Value> a = fragmentA(nb, nl, term, m0, step);
            SmallVector<Value> bFrag = fragmentB(nb, nl, term, n0, step);
            multiplyAccumulate(nb, nl, a, bFrag, acc);
          }
        }
        epilogue(nb, nl, row0, col0, acc[0], acc[1]);
        epilogue(nb, nl, row1, col0, acc[2], acc[3]);
        scf::YieldOp::create(nb, nl);
      });
}

void ScanKernel::forEachThread(
    OpBuilder &nb, Location nl, int64_t count,
    function_ref<void(OpBuilder &, Location, Value)> body) {
  scf::ForOp::create(nb, nl, tid, c(nb, nl, count), c(nb, nl, s.threads()),
                     ValueRange{},
                     [&](OpBuilder &lb, Location ll, Value i, ValueRange) {
                       body(lb, ll, i);
                       scf::YieldOp::create(lb, ll);
                     });
}

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
        sum = multiplyAdd(nb, nl,
                          load(nb, nl, ms, {row, add(nb, nl, base,
                                                     c(nb, nl, m))}),
                          x[m], sum);
      Value iv = c(nb, nl, i);
      Value below = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult,
                                          iv, j);
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
  // The A operands of W = (T diag(beta exp(G))) K and U = (T diag(beta))
  // V, in bf16: K and V then serve unscaled, as staged.
  forEachThread(b, loc, chunk * chunk, [&](OpBuilder &nb, Location nl,
                                            Value i) {
    Value r = arith::DivUIOp::create(nb, nl, i, c(nb, nl, chunk));
    Value col = arith::RemUIOp::create(nb, nl, i, c(nb, nl, chunk));
    Value t = load(nb, nl, ms, {r, col});
    storeHalf(nb, nl,
              arith::MulFOp::create(nb, nl, t, load(nb, nl, decayW, {col})),
              tW, r, col);
    storeHalf(nb, nl,
              arith::MulFOp::create(nb, nl, t, load(nb, nl, betas, {col})),
              tU, r, col);
  });
  barrier(b, loc);
}

void ScanKernel::setUp(gpu::LaunchOp launch) {
  tid = launch.getThreadIds().x;
  warp = arith::DivUIOp::create(b, loc, tid, c(b, loc, 32));
  Value lane = arith::RemUIOp::create(b, loc, tid, c(b, loc, 32));
  group = arith::DivUIOp::create(b, loc, lane, c(b, loc, 4));
  quad = arith::RemUIOp::create(b, loc, lane, c(b, loc, 4));
  matrixRow = arith::RemUIOp::create(b, loc, lane, c(b, loc, 8));
  matrixColumn =
      mul(b, loc,
          arith::RemUIOp::create(
              b, loc, arith::DivUIOp::create(b, loc, lane, c(b, loc, 8)),
              c(b, loc, 2)),
          c(b, loc, 8));
  matrixHalf = mul(b, loc, arith::DivUIOp::create(b, loc, lane, c(b, loc, 16)),
                   c(b, loc, 8));
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                              gpu::AddressSpace::Workgroup);
  sharedBase = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
}

std::pair<Value, Value> ScanKernel::token(OpBuilder &nb, Location nl,
                                          Value start, Value tokens, Value r) {
  Value t = add(nb, nl, start, r);
  Value inside =
      arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, t, tokens);
  Value safe = arith::SelectOp::create(nb, nl, inside, t, c(nb, nl, 0));
  return {safe, inside};
}

void ScanKernel::stageVectors(
    int64_t rows, int64_t width,
    function_ref<Value(OpBuilder &, Location, Value, Value)> loadVector,
    function_ref<void(OpBuilder &, Location, Value, Value, Value)>
        storeVector) {
  storeVectors(loadVectors(rows, width, loadVector), storeVector);
}

SmallVector<ScanKernel::LoadedVector> ScanKernel::loadVectors(
    int64_t rows, int64_t width,
    function_ref<Value(OpBuilder &, Location, Value, Value)> loadVector) {
  assert(width % 8 == 0 && "rows are copied in vectors of 8");
  int64_t perRow = width / 8, count = rows * perRow;
  int64_t perThread = (count + s.threads() - 1) / s.threads();
  bool ragged = count % s.threads() != 0;
  auto position = [&](OpBuilder &nb, Location nl, Value i) {
    Value r = arith::DivUIOp::create(nb, nl, i, c(nb, nl, perRow));
    Value col = mul(nb, nl, arith::RemUIOp::create(nb, nl, i, c(nb, nl, perRow)),
                    c(nb, nl, 8));
    return std::make_pair(r, col);
  };
  SmallVector<LoadedVector> loaded;
  for (int64_t it = 0; it < perThread; ++it) {
    Value i = add(b, loc, tid, c(b, loc, it * s.threads()));
    Value valid;
    if (ragged) {
      // Threads past the end read vector 0 and store nothing.
      valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i,
                                    c(b, loc, count));
      i = arith::SelectOp::create(b, loc, valid, i, c(b, loc, 0));
    }
    auto [r, col] = position(b, loc, i);
    loaded.push_back({valid, r, col, loadVector(b, loc, r, col)});
  }
  return loaded;
}

void ScanKernel::storeVectors(
    ArrayRef<LoadedVector> loaded,
    function_ref<void(OpBuilder &, Location, Value, Value, Value)>
        storeVector) {
  for (const LoadedVector &element : loaded) {
    if (!element.valid) {
      storeVector(b, loc, element.row, element.col, element.vector);
      continue;
    }
    scf::IfOp::create(b, loc, element.valid, [&](OpBuilder &nb, Location nl) {
      storeVector(nb, nl, element.row, element.col, element.vector);
      scf::YieldOp::create(nb, nl);
    });
  }
}

void ScanKernel::forEachVector(
    int64_t rows, int64_t width,
    function_ref<void(OpBuilder &, Location, Value, Value)> copy) {
  // The positions are those loadVectors deals; nothing is loaded.
  SmallVector<LoadedVector> positions = loadVectors(
      rows, width, [&](OpBuilder &, Location, Value, Value) { return Value(); });
  storeVectors(positions, [&](OpBuilder &nb, Location nl, Value r, Value col,
                              Value) { copy(nb, nl, r, col); });
}

void ScanKernel::buildChunkKernel(gpu::LaunchOp launch,
                                  const ScanBuffers &m) {
  Type f32 = b.getF32Type();
  int64_t chunk = s.chunk, keyDim = s.keyDim, valueDim = s.valueDim;
  setUp(launch);
  Value chunkIndex = launch.getBlockIds().x;
  Value head = launch.getBlockIds().y;
  Value batch = launch.getBlockIds().z;
  Value keyHead = arith::DivUIOp::create(b, loc, head, c(b, loc, m.groupSize));
  Value tokens = memref::DimOp::create(b, loc, m.v, 1);
  Value start = mul(b, loc, chunkIndex, c(b, loc, chunk));

  int64_t offset = 0;
  kB = carveHalves(chunk, keyDim, offset);
  // T's bf16 copies are written after the last read of Q (the P product),
  // so they take Q's place.
  int64_t qOffset = offset, tOffset = offset;
  qB = carveHalves(chunk, keyDim, qOffset);
  tW = carveHalves(chunk, chunk, tOffset);
  tU = carveHalves(chunk, chunk, tOffset);
  offset = std::max(qOffset, tOffset);
  vB = carveHalves(chunk, valueDim, offset);
  ms = carveFloats(chunk, chunk, offset);
  gRaw = carve({chunk}, f32, offset);
  betas = carve({chunk}, f32, offset);
  gCum = carve({chunk}, f32, offset);
  decayW = carve({chunk}, f32, offset);
  decayQ = carve({chunk}, f32, offset);
  decayS = carve({chunk}, f32, offset);
  // Rows of 17 floats: the 16 threads of two diagonal blocks store to
  // different banks.
  ds = carve({chunk, 17}, f32, offset);
  assert(offset == s.chunkKernelBytes() && "layout and size disagree");

  Value zero = f(b, loc, 0.0f);
  auto widen = [&](OpBuilder &nb, Location nl, Value x) {
    return convertFloat(nb, nl, x, f32);
  };
  Value rowThread = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                          tid, c(b, loc, chunk));
  scf::IfOp::create(b, loc, rowThread, [&](OpBuilder &nb, Location nl) {
    auto [t, inside] = token(nb, nl, start, tokens, tid);
    Value g = widen(nb, nl, load(nb, nl, m.g, {batch, t, head}));
    Value beta = widen(nb, nl, load(nb, nl, m.beta, {batch, t, head}));
    store(nb, nl, arith::SelectOp::create(nb, nl, inside, g, zero), gRaw,
          {tid});
    store(nb, nl, arith::SelectOp::create(nb, nl, inside, beta, zero), betas,
          {tid});
    scf::YieldOp::create(nb, nl);
  });
  barrier(b, loc);
  // Inclusive cumulative log-decay G (all loads at once, masked to
  // j <= tid) and its total G_C, kept for the state pass; the row decays.
  scf::IfOp::create(b, loc, rowThread, [&](OpBuilder &nb, Location nl) {
    Value sum = f(nb, nl, 0.0f), total = f(nb, nl, 0.0f);
    for (int64_t j = 0; j < chunk; ++j) {
      Value jv = c(nb, nl, j);
      Value gj = load(nb, nl, gRaw, {jv});
      Value upTo =
          arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ule, jv, tid);
      sum = arith::AddFOp::create(
          nb, nl, sum,
          arith::SelectOp::create(nb, nl, upTo, gj, f(nb, nl, 0.0f)));
      total = arith::AddFOp::create(nb, nl, total, gj);
    }
    store(nb, nl, sum, gCum, {tid});
    store(nb, nl, sum, m.gates, {batch, head, add(nb, nl, start, tid)});
    Value decay = exponential(nb, nl, sum);
    store(nb, nl, decay, decayQ, {tid});
    store(nb, nl,
          arith::MulFOp::create(nb, nl, decay, load(nb, nl, betas, {tid})),
          decayW, {tid});
    store(nb, nl,
          exponential(nb, nl, arith::SubFOp::create(nb, nl, total, sum)),
          decayS, {tid});
    scf::YieldOp::create(nb, nl);
  });
  barrier(b, loc);

  // 8 elements of a token-indexed operand (zeros past the end of the
  // sequence), widened to f32, then `storeForms(row, col, vector)`.
  auto floats = VectorType::get({8}, f32);
  Type half = b.getBF16Type();
  auto halves = VectorType::get({8}, half);
  using StoreForms =
      function_ref<void(OpBuilder &, Location, Value, Value, Value)>;
  auto stage = [&](Value source, Value sourceHead, int64_t width,
                   StoreForms storeForms) {
    Type element = cast<MemRefType>(source.getType()).getElementType();
    auto vectorType = VectorType::get({8}, element);
    stageVectors(
        chunk, width,
        [&](OpBuilder &nb, Location nl, Value r, Value col) {
          auto [t, inside] = token(nb, nl, start, tokens, r);
          Value x = vector::LoadOp::create(nb, nl, vectorType, source,
                                           ValueRange{batch, t, sourceHead,
                                                      col},
                                           false, llvm::Align(16));
          Value zeros = arith::ConstantOp::create(
              nb, nl, DenseElementsAttr::get(vectorType,
                                             nb.getZeroAttr(element)));
          return arith::SelectOp::create(nb, nl, inside, x, zeros)
              .getResult();
        },
        [&](OpBuilder &nb, Location nl, Value r, Value col, Value x) {
          storeForms(nb, nl, r, col, arith::ExtFOp::create(nb, nl, floats, x));
        });
  };
  auto toHalves = [&](OpBuilder &nb, Location nl, Value x) {
    return arith::TruncFOp::create(nb, nl, halves, x).getResult();
  };
  // x diag(factors[r]) for the vector x of row r.
  auto scaled = [&](OpBuilder &nb, Location nl, Value x, Value factors,
                    Value r) {
    Value factor = vector::BroadcastOp::create(nb, nl, floats,
                                               load(nb, nl, factors, {r}));
    return arith::MulFOp::create(nb, nl, x, factor).getResult();
  };
  auto storeVector = [&](OpBuilder &nb, Location nl, Value x, Value memory,
                         ValueRange indices) {
    vector::StoreOp::create(nb, nl, x, memory, indices, false,
                            llvm::Align(16));
  };
  stage(m.q, keyHead, keyDim,
        [&](OpBuilder &nb, Location nl, Value r, Value col, Value x) {
          storeVector(nb, nl, toHalves(nb, nl, x), qB.halves, {r, col});
          // exp(G) Q for the state pass, straight to global memory.
          storeVector(nb, nl, toHalves(nb, nl, scaled(nb, nl, x, decayQ, r)),
                      m.qs, {batch, head, add(nb, nl, start, r), col});
        });
  stage(m.k, keyHead, keyDim,
        [&](OpBuilder &nb, Location nl, Value r, Value col, Value x) {
          storeVector(nb, nl, toHalves(nb, nl, x), kB.halves, {r, col});
          // exp(G_C - G) K for the state pass, straight to global memory.
          storeVector(nb, nl, toHalves(nb, nl, scaled(nb, nl, x, decayS, r)),
                      m.kst, {batch, head, add(nb, nl, start, r), col});
        });
  stage(m.v, head, valueDim,
        [&](OpBuilder &nb, Location nl, Value r, Value col, Value x) {
          storeVector(nb, nl, toHalves(nb, nl, x), vB.halves, {r, col});
        });
  barrier(b, loc);

  auto zeroInit = [&](OpBuilder &nb, Location nl, Value, Value) {
    return f(nb, nl, 0.0f);
  };
  // dot x exp(G_r - G_c) (x beta_r with `rowScale`) where `keep(c, r)`,
  // else 0: the exponent is non-positive where kept.
  auto maskedDecay = [&](OpBuilder &nb, Location nl, Value r, Value col,
                         Value dot, arith::CmpIPredicate keep,
                         Value rowScale) {
    Value inside = arith::CmpIOp::create(nb, nl, keep, col, r);
    if (rowScale)
      dot = arith::MulFOp::create(nb, nl, dot, load(nb, nl, rowScale, {r}));
    Value decay = exponential(
        nb, nl,
        arith::SubFOp::create(nb, nl, load(nb, nl, gCum, {r}),
                              load(nb, nl, gCum, {col})));
    Value decayed = arith::MulFOp::create(nb, nl, dot, decay);
    return arith::SelectOp::create(nb, nl, inside, decayed, zero).getResult();
  };
  auto rowOf = [&](OpBuilder &nb, Location nl, Value r) {
    return add(nb, nl, start, r);
  };
  // A = strict_lower(beta_r exp(G_r - G_c) k_r.k_c), f32 for the solve.
  auto masked = [&](arith::CmpIPredicate keep, Value rowScale,
                    function_ref<void(OpBuilder &, Location, Value, Value,
                                      Value, Value)>
                        storeTo) -> PairEpilogue {
    return [&, keep, rowScale, storeTo](OpBuilder &nb, Location nl, Value r,
                                        Value col, Value first,
                                        Value second) {
      Value next = add(nb, nl, col, c(nb, nl, 1));
      storeTo(nb, nl, r, col,
              maskedDecay(nb, nl, r, col, first, keep, rowScale),
              maskedDecay(nb, nl, r, next, second, keep, rowScale));
    };
  };
  product(chunk, chunk, {Term{keyDim, kB, kB}}, zeroInit,
          masked(arith::CmpIPredicate::ult, betas,
                 [&](OpBuilder &nb, Location nl, Value r, Value col,
                     Value first, Value second) {
                   storePair(nb, nl, first, second, ms, {r, col});
                 }));
  // P = lower(exp(G_r - G_c) q_r.k_c), to global memory; the last read of
  // Q, whose place T takes in the solve.
  product(chunk, chunk, {Term{keyDim, qB, kB}}, zeroInit,
          masked(arith::CmpIPredicate::ule, Value(),
                 [&](OpBuilder &nb, Location nl, Value r, Value col,
                     Value first, Value second) {
                   storePair(nb, nl, first, second, m.p,
                             {batch, head, rowOf(nb, nl, r), col});
                 }));
  barrier(b, loc);
  solve();
  // -W = -T diag(beta exp(G)) K and U = T diag(beta) V, to global memory.
  product(chunk, keyDim, {Term{chunk, tW, kB, false, /*bDepthMajor=*/true}},
          zeroInit,
          [&](OpBuilder &nb, Location nl, Value r, Value col, Value first,
              Value second) {
            storePair(nb, nl, arith::NegFOp::create(nb, nl, first),
                      arith::NegFOp::create(nb, nl, second), m.w,
                      {batch, head, rowOf(nb, nl, r), col});
          });
  product(chunk, valueDim,
          {Term{chunk, tU, vB, false, /*bDepthMajor=*/true}}, zeroInit,
          [&](OpBuilder &nb, Location nl, Value r, Value col, Value first,
              Value second) {
            storePair(nb, nl, first, second, m.u,
                      {batch, head, rowOf(nb, nl, r), col});
          });
  gpu::TerminatorOp::create(b, loc);
}

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
  auto storeVectorTo = [&](Value memory) {
    return [&, memory](OpBuilder &nb, Location nl, Value r, Value col,
                       Value x) {
      vector::StoreOp::create(nb, nl, x, memory, ValueRange{r, col}, false,
                              llvm::Align(16));
    };
  };
  auto storeChunkRest = [&](const ChunkRest &rest) {
    storeVectors(rest.u, [&](OpBuilder &nb, Location nl, Value r, Value col,
                             Value x) {
      vector::StoreOp::create(nb, nl,
                              arith::ExtFOp::create(nb, nl, f32Vector, x), us,
                              ValueRange{r, col}, false, llvm::Align(16));
    });
    storeVectors(rest.p, storeVectorTo(pB.halves));
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
        product(chunk, tile, {Term{keyDim, wB, sB, false, /*bDepthMajor=*/true}},
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
        // -W, exp(G) Q and the other slot of K^T are free now.
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
                  scf::IfOp::create(nb, nl, position.second, [&](OpBuilder &ib,
                                                        Location il) {
                    storePair(ib, il,
                              arith::MulFOp::create(ib, il, first, scaleValue),
                              arith::MulFOp::create(ib, il, second, scaleValue),
                              m.o,
                              {batch, t, head, add(ib, il, firstColumn, col)});
                    scf::YieldOp::create(ib, il);
                  });
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

/// gdn.delta_rule with 16-bit q, k, v to the chunked tensor-core scan.
struct ChunkedScanToGPU : OpRewritePattern<DeltaRuleOp> {
  ChunkedScanToGPU(MLIRContext *ctx, int64_t valueTile, int64_t warps,
                   int64_t multiprocessors)
      : OpRewritePattern<DeltaRuleOp>(ctx, /*benefit=*/2),
        valueTile(valueTile), warps(warps), multiprocessors(multiprocessors) {}

  LogicalResult matchAndRewrite(DeltaRuleOp op,
                                PatternRewriter &rewriter) const override {
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    auto vType = cast<RankedTensorType>(op.getV().getType());
    auto oType = cast<RankedTensorType>(op.getO().getType());
    auto stateType = cast<RankedTensorType>(op.getFinalState().getType());
    Type element = qType.getElementType();
    if (!element.isBF16() && !element.isF16())
      return rewriter.notifyMatchFailure(op, "f32 inputs keep full precision");
    if (cast<RankedTensorType>(op.getK().getType()).getElementType() !=
            element ||
        vType.getElementType() != element)
      return rewriter.notifyMatchFailure(op, "mixed q/k/v element types");
    ScanShape shape;
    shape.chunk = 64;
    shape.keyDim = qType.getDimSize(3);
    shape.valueDim = vType.getDimSize(3);
    shape.valueTile = std::min(valueTile, shape.valueDim);
    shape.warps = warps;
    if (shape.keyDim % 16 != 0 || shape.valueDim % shape.valueTile != 0 ||
        shape.valueTile % 8 != 0)
      return rewriter.notifyMatchFailure(
          op, "K must be a multiple of 16 and V of the value tile (of 8)");
    if (std::max(shape.chunkKernelBytes(), shape.stateKernelBytes()) >
        kMaxSharedBytes)
      return rewriter.notifyMatchFailure(op, "the tiles exceed workgroup "
                                             "memory");

    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value qm = toBuffer(b, loc, op.getQ()), km = toBuffer(b, loc, op.getK());
    Value vm = toBuffer(b, loc, op.getV()), gm = toBuffer(b, loc, op.getG());
    Value betam = toBuffer(b, loc, op.getBeta());
    Value statem =
        op.getInitialState() ? toBuffer(b, loc, op.getInitialState()) : Value();
    Value batch = memref::DimOp::create(b, loc, vm, 0);
    Value tokens = memref::DimOp::create(b, loc, vm, 1);
    SmallVector<Value> oSizes, sSizes;
    if (oType.isDynamicDim(0))
      oSizes.push_back(batch);
    if (oType.isDynamicDim(1))
      oSizes.push_back(tokens);
    if (stateType.isDynamicDim(0))
      sSizes.push_back(batch);
    Value om = memref::AllocOp::create(
        b, loc, MemRefType::get(oType.getShape(), oType.getElementType()),
        oSizes);
    Value sm = memref::AllocOp::create(
        b, loc, MemRefType::get(stateType.getShape(), b.getF32Type()),
        sSizes);

    int64_t valueHeads = vType.getDimSize(2);
    int64_t chunk = shape.chunk;
    // Global scratch between the kernels, per chunk row (Tp = whole chunks).
    Value chunkCount = arith::CeilDivUIOp::create(
        b, loc, tokens, indexConstant(b, loc, chunk));
    Value paddedTokens = arith::MulIOp::create(b, loc, chunkCount,
                                               indexConstant(b, loc, chunk));
    auto scratchType = [&](ArrayRef<int64_t> inner, Type element) {
      SmallVector<int64_t> dims = {ShapedType::kDynamic, valueHeads,
                                   ShapedType::kDynamic};
      dims.append(inner.begin(), inner.end());
      return MemRefType::get(dims, element);
    };
    auto tokenType = gpu::AsyncTokenType::get(b.getContext());
    Value ready = gpu::WaitOp::create(b, loc, tokenType, ValueRange{})
                      .getAsyncToken();
    // One chain on one stream: each token of the chain is that stream, and
    // the final wait synchronizes and destroys it once.
    SmallVector<Value> scratch;
    for (MemRefType type :
         {scratchType({shape.keyDim}, b.getBF16Type()),
          scratchType({shape.valueDim}, b.getBF16Type()),
          scratchType({chunk}, b.getBF16Type()),
          scratchType({}, b.getF32Type()),
          scratchType({shape.keyDim}, b.getBF16Type()),
          scratchType({shape.keyDim}, b.getBF16Type())}) {
      auto alloc = gpu::AllocOp::create(b, loc, type, tokenType,
                                        ValueRange{ready},
                                        ValueRange{batch, paddedTokens},
                                        ValueRange{}, /*hostShared=*/nullptr);
      scratch.push_back(alloc.getMemref());
      ready = alloc.getAsyncToken();
    }
    gpu::WaitOp::create(b, loc, Type(), ValueRange{ready});
    ScanBuffers buffers{qm,         km,         vm,         gm,
                        betam,      statem,     om,         sm,
                        scratch[0], scratch[1], scratch[2], scratch[3],
                        scratch[4], scratch[5],
                        static_cast<int64_t>(op.getGroupSize()),
                        op.getScale().convertToFloat()};
    auto mapping = [&](OpBuilder &lb, const ScanShape &tiled,
                       StringRef role) {
      return lb.getDictionaryAttr({
          lb.getNamedAttr("kernel", lb.getStringAttr(role)),
          lb.getNamedAttr("chunk", lb.getI64IntegerAttr(tiled.chunk)),
          lb.getNamedAttr("value_tile", lb.getI64IntegerAttr(tiled.valueTile)),
          lb.getNamedAttr("warps", lb.getI64IntegerAttr(tiled.warps)),
          lb.getNamedAttr("mma", lb.getStringAttr("m16n8k16.bf16")),
      });
    };
    {
      // The state-independent part of every chunk, all chunks at once.
      Value one = indexConstant(b, loc, 1);
      Value sharedBytes = arith::ConstantOp::create(
          b, loc, b.getI32IntegerAttr(shape.chunkKernelBytes()));
      auto launch = gpu::LaunchOp::create(
          b, loc, chunkCount, indexConstant(b, loc, valueHeads), batch,
          indexConstant(b, loc, shape.threads()), one, one, sharedBytes);
      ScanShape whole = shape;
      whole.valueTile = shape.valueDim;
      launch->setAttr("gdn.chunked_scan", mapping(b, whole, "wy"));
      OpBuilder kb(b.getContext());
      kb.setInsertionPointToStart(&launch.getBody().front());
      ScanKernel(kb, loc, shape).buildChunkKernel(launch, buffers);
    }
    auto buildLaunch = [&](OpBuilder &lb, Location ll,
                           const ScanShape &tiled) {
      int64_t valueTiles = tiled.valueDim / tiled.valueTile;
      Value one = indexConstant(lb, ll, 1);
      Value sharedBytes = arith::ConstantOp::create(
          lb, ll, lb.getI32IntegerAttr(tiled.stateKernelBytes()));
      auto launch = gpu::LaunchOp::create(
          lb, ll, indexConstant(lb, ll, valueHeads * valueTiles), batch, one,
          indexConstant(lb, ll, tiled.threads()), one, one, sharedBytes);
      // The mapping, visible in the IR.
      launch->setAttr("gdn.chunked_scan", mapping(lb, tiled, "state"));
      OpBuilder kb(lb.getContext());
      kb.setInsertionPointToStart(&launch.getBody().front());
      ScanKernel(kb, ll, tiled).buildStateKernel(launch, buffers, valueTiles);
    };
    // Narrower value tiles for grids that would leave multiprocessors
    // idle: the widest of value-tile, /2, /4 whose grid has a block for
    // (nearly) every multiprocessor, chosen at run time from B; the
    // narrowest when none has. A wider tile reads each chunk's W, Q and K
    // once for more value columns: once the multiprocessors are busy, a
    // narrower tile only adds traffic (measured on the H200: at B = 1,
    // Hv = 32, tile 32 with 128 blocks beats tile 16 with 256 by 12%).
    SmallVector<ScanShape> tilings = {shape};
    for (int64_t narrower = shape.valueTile / 2;
         narrower >= 16 && tilings.size() < 3; narrower /= 2) {
      if (shape.valueDim % narrower != 0)
        break;
      ScanShape tiled = shape;
      tiled.valueTile = narrower;
      tilings.push_back(tiled);
    }
    int64_t enoughBlocks = std::max<int64_t>(1, multiprocessors * 7 / 8);
    std::function<void(OpBuilder &, Location, size_t)> chooseFrom =
        [&](OpBuilder &lb, Location ll, size_t candidate) {
          const ScanShape &tiling = tilings[candidate];
          if (candidate + 1 == tilings.size()) {
            buildLaunch(lb, ll, tiling);
            return;
          }
          Value blocks = arith::MulIOp::create(
              lb, ll, batch,
              indexConstant(lb, ll,
                            valueHeads * (tiling.valueDim / tiling.valueTile)));
          Value busy = arith::CmpIOp::create(
              lb, ll, arith::CmpIPredicate::uge, blocks,
              indexConstant(lb, ll, enoughBlocks));
          scf::IfOp::create(
              lb, ll, busy,
              [&](OpBuilder &tb, Location tl) {
                buildLaunch(tb, tl, tiling);
                scf::YieldOp::create(tb, tl);
              },
              [&](OpBuilder &eb, Location el) {
                chooseFrom(eb, el, candidate + 1);
                scf::YieldOp::create(eb, el);
              });
        };
    chooseFrom(b, loc, 0);
    Value done = gpu::WaitOp::create(b, loc, tokenType, ValueRange{})
                     .getAsyncToken();
    for (Value buffer : scratch)
      done = gpu::DeallocOp::create(b, loc, tokenType, ValueRange{done}, buffer)
                 .getAsyncToken();
    gpu::WaitOp::create(b, loc, Type(), ValueRange{done});
    UnitAttr unit = b.getUnitAttr();
    Value o = bufferization::ToTensorOp::create(b, loc, oType, om, unit, unit);
    Value s = bufferization::ToTensorOp::create(b, loc, stateType, sm, unit,
                                                unit);
    rewriter.replaceOp(op, {o, s});
    return success();
  }

  int64_t valueTile, warps, multiprocessors;
};
} // namespace

void mlir::gdn::populateGdnToGPUChunkedScanPatterns(RewritePatternSet &patterns,
                                                    int64_t valueTile,
                                                    int64_t warps,
                                                    int64_t multiprocessors) {
  patterns.add<ChunkedScanToGPU>(patterns.getContext(), valueTile, warps,
                                 multiprocessors);
}
