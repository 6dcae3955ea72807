//===- Passes.td - gdn dialect transformation passes -------*- tablegen -*-===//

#ifndef GDN_DIALECT_GDN_TRANSFORMS_PASSES_TD
#define GDN_DIALECT_GDN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GdnChunkDeltaRulePass : Pass<"gdn-chunk-delta-rule", "func::FuncOp"> {
  let summary = "Rewrite gdn.delta_rule into its chunkwise-parallel form";
  let description = [{
    Rewrites every `gdn.delta_rule` into the chunkwise-parallel (WY /
    UT-transform) form of the gated delta rule, in linalg on tensors:

    - an `scf.forall` over batch x value heads (independent tasks, mapped to
      threads on CPU), sharing the output and the final state;
    - inside a task, one sequential `scf.for` over the full chunks of
      `chunk-size` tokens and an `scf.if` for a last, partial chunk, which is
      zero-padded (g = 0, beta = 0, k = 0) so that every chunk has static
      shapes and padded rows contribute nothing;
    - per chunk, on f32 tiles: the chunk-local cumulative gates `b`; the
      decayed, beta-scaled Gram matrix `A[i,j] = beta_i (k_i . k_j)
      exp(b_i - b_j)` for `i > j`; `Tinv = (I + A)^-1` by forward
      substitution; `U = Tinv (beta v)` and `W = Tinv (beta exp(b) k)`; the
      state pass `v_new = U - W S`; the output `exp(b) (q S) + ((q k^T) . D)
      v_new` with the causal decay `D[i,j] = exp(b_i - b_j)` for `i >= j`;
      and the update `S = exp(b_last) S + k^T (exp(b_last - b) v_new)`.

    Every exponent evaluated at a valid position is <= 0 when g <= 0; the
    masks are applied with `arith.select` before `math.exp`, never by
    multiplying with 0, so masked positions cannot produce inf or NaN.
    The matmuls are `linalg.matmul` on tiles of static shape, the form the
    CPU and GPU pipelines tile and vectorize.

    With `recurrent-below=N`, each task first checks `T < N` and then runs
    the token recurrence on its head instead (the body of
    gdn-parallelize-delta-rule-step, in place on the task's state): a short
    prefill pays for whole padded chunks otherwise.
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", /*default=*/"64",
           "Tokens per chunk (16, 32 or 64 are the usual choices)">,
    Option<"recurrentBelow", "recurrent-below", "int64_t", /*default=*/"0",
           "Sequences shorter than this many tokens run the token "
           "recurrence inside the same per-head tasks instead of chunks, "
           "chosen at run time on T (0: always chunks)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def GdnCPUVectorizePass : Pass<"gdn-cpu-vectorize", "func::FuncOp"> {
  let summary = "Tile and vectorize bufferized linalg ops for AVX-512 CPUs";
  let description = [{
    Picks a schedule for every linalg op on memrefs whose iteration domain is
    static and divides the register tiles, records it on the op as the
    `gdn.cpu_schedule` attribute, and applies a transform-dialect schedule
    that implements them:

    - `matmul`: `linalg.matmul` tiled `[matmul-tile-m, matmul-tile-n, 1]`
      (N outer), vectorized into named contractions, the accumulators hoisted
      out of the reduction loop and lowered to outer products: a register
      tile of FMAs with broadcast A elements and row-major B vectors;
    - `vecmatN`: `linalg.vecmat` tiled `[N, 1]` with the widest N of 128,
      64, 32 and 16 that divides the output (independent accumulators hide
      the FMA latency along K), then as for matmuls;
    - `rows`: two-dimensional element-wise ops, one vectorized row at a time;
    - `whole`: one-dimensional element-wise ops, vectorized whole;
    - `transpose`: `linalg.transpose` in 16 x 16 vectorized blocks.

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

def GdnPackedCInterfacePass : Pass<"gdn-packed-c-interface", "ModuleOp"> {
  let summary = "Export C-interface functions with one array-of-pointers "
                "argument";
  let description = [{
    For every `llvm.func @_mlir_ciface_<name>` whose arguments are all
    pointers (the memref descriptors of docs/c-abi.md, results as
    out-parameters), adds

      llvm.func @_gdn_packed_<name>(%arguments: !llvm.ptr)

    which loads the i-th descriptor pointer from `%arguments[i]` and calls
    the C interface. A runtime written once then calls functions whose
    argument count depends on the compiled model (a weight per tensor, two
    caches per layer) without generating C code per model or depending on
    libffi. MLIR's ExecutionEngine makes a similar wrapper, but only inside
    its JIT, on LLVM IR.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def GdnSharedMemoryOccupancyPass
    : Pass<"gdn-shared-memory-occupancy", "ModuleOp"> {
  let summary = "Keep registers from lowering the occupancy that a kernel's "
                "workgroup memory allows";
  let description = [{
    For every `gpu.launch_func` with a constant dynamic workgroup memory
    size, computes how many blocks of that size share one multiprocessor
    (`shared-memory-per-multiprocessor` over the size plus
    `reserved-per-block`, at most `max-blocks`) and sets `nvvm.minctasm` on
    the launched `gpu.func` (`.minnctapersm` in PTX), so that ptxas limits
    registers per thread to what that many blocks leave. Without the hint
    ptxas may take, for example, 146 registers for a 256-thread block whose
    108 KiB of workgroup memory would otherwise allow two blocks per
    multiprocessor; the registers then allow only one. Kernels without
    dynamic workgroup memory are left alone. A kernel launched with several
    sizes gets the smallest count.
  }];
  let options = [
    Option<"sharedMemoryPerMultiprocessor", "shared-memory-per-multiprocessor",
           "int64_t", /*default=*/"233472",
           "Workgroup memory of one multiprocessor in bytes (228 KiB: "
           "Hopper)">,
    Option<"reservedPerBlock", "reserved-per-block", "int64_t",
           /*default=*/"1024",
           "Workgroup memory the driver reserves per block in bytes">,
    Option<"maxBlocks", "max-blocks", "int64_t", /*default=*/"3",
           "Largest block count to ask for (more would squeeze registers "
           "below what the kernels need)">,
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
  ];
}

def GdnReadOnlyArgumentsPass : Pass<"gdn-read-only-arguments",
                                    "func::FuncOp"> {
  let summary = "Keep the tensor arguments of public functions unmodified";
  let description = [{
    Marks every tensor argument of a public function with
    `bufferization.writable = false`. One-shot bufferization otherwise treats
    function arguments as writable and may compute results in the caller's
    input buffers, for example the final state in `initial_state`; callers of
    a compiled library expect value semantics.
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
  ];
}

def GdnManagedHostBuffersPass : Pass<"gdn-managed-host-buffers",
                                     "func::FuncOp"> {
  let summary = "Give host buffers managed memory that kernels can reach";
  let description = [{
    For CUDA executables, whose `@main` makes tensors on the host, passes
    them to kernels and prints the results there. After bufferization, on
    host functions:

    - `memref.alloc` becomes `gpu.alloc host_shared` (managed memory, from
      `cuMemAllocManaged`), and `memref.dealloc` of such a buffer becomes
      `gpu.dealloc`;
    - `memref.get_global` (a constant) is copied into a managed buffer at
      the start of its function, which replaces it in every use and is
      freed before each return.

    Shared libraries do not need it: their callers pass device buffers.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def GdnParallelizeDeltaRuleStepPass
    : Pass<"gdn-parallelize-delta-rule-step", "func::FuncOp"> {
  let summary = "Rewrite gdn.delta_rule_step into one task per head";
  let description = [{
    Rewrites every `gdn.delta_rule_step` into an `scf.forall` over batch x
    value heads. Each task works on its head's static `[K, V]` state:

    - `kS = k^T S` (`linalg.vecmat`), then `delta = beta (v - exp(g) kS)`;
    - `S' = exp(g) S + k delta^T`, written straight into the task's slice of
      the new state;
    - `o = scale * q^T S'` (`linalg.vecmat`).

    The state is read twice and written once per token; the second read and
    the output read hit the head's 64 KiB (K = V = 128) in cache. Every
    element of the new state depends only on the same element of the old
    state, so a caller may pass the same buffer as state and new state and
    update the state in place.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def GdnDecomposeLayersPass : Pass<"gdn-decompose-layers", "func::FuncOp"> {
  let summary = "Decompose layer ops into the core gdn ops and linalg";
  let description = [{
    Rewrites `gdn.gated_deltanet` into projections, the causal depthwise
    convolutions, normalisations and gates as `linalg.generic` ops on
    tensors, around one `gdn.delta_rule`, following the op description step
    by step. The delta rule is then lowered like any other
    (gdn-chunk-delta-rule or the recurrence).

    Projections (x [B, T, I] times a PyTorch-layout weight [O, I]) take the
    B x T rows in static blocks: 64 rows per `scf.forall` task, then 8, as
    `linalg.matmul` on the weight transposed once per call, which
    gdn-cpu-vectorize gives its register-tiled FMA schedule; the remaining
    rows (fewer than 8, as in decode) are a contraction on loops.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

#endif // GDN_DIALECT_GDN_TRANSFORMS_PASSES_TD
