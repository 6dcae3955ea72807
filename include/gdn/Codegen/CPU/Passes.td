//===- Passes.td - CPU code generation passes ----------------*- tablegen -*-===//

#ifndef GDN_CODEGEN_CPU_PASSES_TD
#define GDN_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def GdnCPUTileProjectionsPass
    : Pass<"gdn-cpu-tile-projections", "func::FuncOp"> {
  let summary = "Tile projections into static register-friendly row tiles";
  let description = [{
    gdn-cpu-vectorize gives its register-tiled FMA schedule only to matmuls
    of static shape, while a projection's tokens are dynamic. Every f32
    projection on tensors (a `linalg.contract` out[b, t, o] += x[b, t, i]
    w[o, i] with a static PyTorch-layout weight, as gdn-decompose-layers
    builds them) is tiled: the tokens of each sequence in blocks of
    `row-block` (one `scf.forall` task per sequence x block, so OpenMP
    spreads them), then tiles of `row-tile`, each a static [rows, I] x
    [I, O] `linalg.matmul` on the weight transposed once per call; the
    transposition is skipped when there is no full tile. The last tokens
    (fewer than `row-tile`, as in decode) are dot products along the
    weight's rows, which are contiguous: an `scf.forall` over blocks of 8
    to 64 weight rows (so that one token spreads over the threads; an
    `scf.for` for weights under `row-dot-parallel-min` elements), and per
    token vector code that takes one row at a time (the weight streams
    through memory in order, which the hardware prefetcher follows), a
    vector of 16 or 32 partial sums along the inputs (the weight read as
    stored, bf16 widened in registers), then adds up the row's lanes.
    Weight rows past the last whole block, and inputs that are not a
    multiple of 16, stay a contraction on loops. The choices are recorded
    on the loops as `gdn.projection_tiling = {row_block, row_tile}` and
    `{row_dot_block, row_dot_lanes, row_dot_parallel}`. Where the outputs
    are not a multiple of `column-tile`, each tile's matmul is two: the
    outputs up to the last multiple (which gdn-cpu-vectorize's register
    tiles divide) and the rest.
  }];
  let options = [
    Option<"rowBlock", "row-block", "int64_t", /*default=*/"64",
           "Rows per scf.forall task (a multiple of row-tile)">,
    Option<"rowTile", "row-tile", "int64_t", /*default=*/"8",
           "Rows per static matmul tile">,
    Option<"columnTile", "column-tile", "int64_t", /*default=*/"32",
           "The tiles' matmuls are split at the last multiple of this many "
           "outputs (gdn-cpu-vectorize's matmul-tile-n, whose register "
           "tiles must divide them), the few outputs after it a matmul of "
           "their own: a vocabulary of 50257 no longer leaves the whole LM "
           "head to scalar loops">,
    Option<"rowDotParallelMin", "row-dot-parallel-min", "int64_t",
           /*default=*/"262144",
           "Weights of at least this many elements take their row dots in "
           "an scf.forall over blocks of rows; smaller ones in an scf.for "
           "(a parallel region costs more than a few microseconds of dot "
           "products saves)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def GdnCPUVectorizePass : Pass<"gdn-cpu-vectorize", "func::FuncOp"> {
  let summary = "Tile and vectorize bufferized linalg ops for AVX-512 CPUs";
  let description = [{
    Picks a schedule for every linalg op on memrefs whose iteration domain is
    static and divides the register tiles (or, for `innermostN`, whose
    innermost loop is; `piecesN` takes dynamic innermost loops), records it
    on the op as the `gdn.cpu_schedule` attribute, and applies a
    transform-dialect schedule that implements them:

    - `matmul`: `linalg.matmul` tiled `[matmul-tile-m, matmul-tile-n, 1]`
      (N outer), vectorized into named contractions, the accumulators hoisted
      out of the reduction loop and lowered to outer products: a register
      tile of FMAs with broadcast A elements and row-major B vectors;
    - `vecmatN`: `linalg.vecmat` tiled `[N, 1]` with the widest N of 128,
      64, 32 and 16 that divides the output (independent accumulators hide
      the FMA latency along K), then as for matmuls;
    - `rows`: two-dimensional element-wise ops with rows of up to 4096
      elements, one vectorized row at a time;
    - `row-pieces`: the same with wider rows (a vocabulary), in pieces of 512
      elements, so that the unrolled code stays the size of one piece;
    - `whole`: one-dimensional element-wise ops, vectorized whole;
    - `transpose`: `linalg.transpose`, and element-wise generics that read an
      operand transposed (a bf16 weight widened while it is transposed), in
      16 x 16 vectorized blocks;
    - `innermostN`: generics of N = 3 to 6 loops, dynamic ones allowed (the
      keys of a cache), whose innermost loop is static (a multiple of 16, up
      to 4096), contiguous in every operand it indexes, and either their one
      reduction (dot products: attention scores over a latent) or just
      inside it (running sums of rows: the attended latents over the keys):
      one `scf.forall` task per iteration of the leading N - 2 loops, an
      `scf.for` over the next, the innermost loop one vector (a running sum
      stays in registers across the `scf.for`). Tasks only where a static
      leading loop gives more than one (heads) and the loop each task runs
      is dynamic (keys); otherwise `innermost-loopsN`, every outer loop an
      `scf.for` (a decode step's per-token norms);
    - `piecesN`: generics of N = 2 to 6 loops whose innermost loop is
      dynamic (the keys of a cache in a softmax), contiguous in every
      operand, and parallel or their one reduction: a task per iteration of
      the outer loops where a static outer loop gives more than one (heads)
      and the op is not already inside a task, the keys in pieces of 16
      lanes; the last partial piece is peeled off and stays a generic on
      loops. Otherwise `pieces-loopsN`, the outer loops as `scf.for`;
    - `key-blocks5`: the absorbed attention's scores, out[b, n, t, s] +=
      q[b, t, n, r] * keys[b, s, r] with at most 16 static heads, a static
      latent that is a multiple of 16 and dynamic keys, in blocks of 16
      keys: a task per (b, t, block), each 16 x 16 tile of cached rows
      transposed in registers and one FMA per head and channel into a
      vector of the block's scores, so no dot product ends in a horizontal
      sum; the keys past the last block take `innermost-loops5` with the
      heads inside each key;
    - `key-parts5`: the absorbed attention's attended latents, out[b, t,
      n, r] += p[b, n, t, s] * rows[b, s, r] with every head's sums fitting
      in 16 vector registers: 4 parts of the keys, a task per (part, b, t)
      that loads each row once and carries every head's sums in registers,
      then the parts' sums added into the output (one core alone cannot
      read the cache as fast as the cores side by side);
    - `keys-outside-headsN` and `keys-outside-head-sumsN`: `innermostN`
      generics whose loop outside the innermost is dynamic (keys) and that
      read an operand by the keys but not by a static leading loop (the
      heads of an absorbed attention share the cached latents). The pass
      interchanges the loops so that the heads run inside the keys and a
      cached row is loaded once: dot products (scores) then take
      `innermostN`, a task per key; sums over the keys (attended latents)
      of one head loop whose sums fit in 16 vector registers take
      `head-sumsN`, the keys an `scf.for` carrying every head's sums in
      registers, the heads and the innermost loop one 2-D vector.

    `math.exp` is then replaced by its polynomial approximation so that it
    vectorizes. Ops without a schedule are left for convert-linalg-to-loops.
    `gdn-cpu-vectorize=annotate-only=true` only records the schedules, to
    inspect what the pass would do.
  }];
  let options = [
    Option<"annotateOnly", "annotate-only", "bool", /*default=*/"false",
           "Only record the chosen schedules as gdn.cpu_schedule attributes">,
    Option<"matmulTileM", "matmul-tile-m", "int64_t", /*default=*/"8",
           "Rows of the matmul register tile">,
    Option<"matmulTileN", "matmul-tile-n", "int64_t", /*default=*/"32",
           "Columns of the matmul register tile (a multiple of 16)">,
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::transform::TransformDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def GdnHoistLoopBuffersPass : Pass<"gdn-hoist-loop-buffers",
                                   "func::FuncOp"> {
  let summary = "Reuse per-iteration scratch buffers across sequential loops";
  let description = [{
    Moves a statically shaped `memref.alloc` out of an `scf.for` when the
    buffer lives for one iteration only (it is freed by a `memref.dealloc` in
    the same loop body and never yielded), together with its dealloc, which
    goes after the loop. Applied until nothing moves, scratch tiles of the
    chunk loop are allocated once per task instead of once per chunk.

    Allocations never leave `scf.forall` or `scf.parallel` bodies: every
    parallel task keeps scratch of its own. Unlike upstream
    `buffer-loop-hoisting`, which moves allocations out of any loop, this
    pass only crosses sequential loops.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def GdnFlushDenormalsPass : Pass<"gdn-flush-denormals", "func::FuncOp"> {
  let summary = "Run public functions with x86 flush-to-zero and "
                "denormals-are-zero";
  let description = [{
    Strong forget gates make the decayed terms of the delta rule underflow
    into subnormal floats, and x86 cores take microcode assists on every
    subnormal operand: the chunked scan then runs several times slower.
    This pass sets MXCSR's FTZ and DAZ bits on entry to every public
    function with a body (stmxcsr/ldmxcsr intrinsics in the LLVM dialect)
    and restores the caller's MXCSR before every return. OpenMP worker
    threads inherit the setting at the fork. Results change only for values
    below 1.2e-38, which become 0.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // GDN_CODEGEN_CPU_PASSES_TD
