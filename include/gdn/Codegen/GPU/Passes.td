//===- Passes.td - GPU code generation passes ----------------*- tablegen -*-===//

#ifndef GDN_CODEGEN_GPU_PASSES_TD
#define GDN_CODEGEN_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

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

def GdnGPUFoldFillsPass : Pass<"gdn-gpu-fold-fills", "func::FuncOp"> {
  let summary = "Fold the fills of host buffers into the kernels that read "
                "them";
  let description = [{
    After bufferization, the layers' accumulators are filled (zeros for a
    sum, -inf for a maximum) and often copied, because one filled tensor
    initialised several ops; each fill and copy is a kernel of its own,
    which a decode step pays in launches. In each block of host code, for
    a buffer (a `memref.alloc`) last written whole by a `linalg.fill` of a
    constant, with no op touching it since:

    - a `memref.copy` from it becomes a `linalg.fill` of the copy's target
      (no read of the source);
    - a linalg reduction into it whose payload reads the output only in
      its final combiner (a sum, maximum or minimum) gets the fill's value
      as `gdn.reduction_init`, the value its accumulators start from, and
      the fill goes when nothing else reads the buffer before the
      reduction writes it.

    `gdn-gpu-map-parallel-loops` starts the warp of each output from that
    value instead of loading the output; a reduction it runs in one thread
    per output gets its fill back.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
  ];
}

def GdnGPUForwardCopiesPass : Pass<"gdn-gpu-forward-copies",
                                    "func::FuncOp"> {
  let summary = "Let element-wise ops write and read in place of the "
                "temporaries that copies move";
  let description = [{
    After bufferization, a model step copies between temporaries and the
    places they come from or go to: a new cache row computed into a
    temporary and copied into the cache, a slice copied out before it is
    read. Each copy is a kernel launch on the GPU. In host code, for a
    `memref.copy` in the same block as the allocation it copies from or
    to:

    - **from an allocation** (`copy %tmp, %place`): when every other use
      of %tmp comes before the copy and is a `linalg.generic`, a load, a
      store or a size, those uses take %place (a view of it is built
      before the first use where the copy's view is made later), and the
      copy and the allocation go. Refused when any op from the first use
      to the copy touches %place's buffer otherwise (it would be written
      earlier than before), or when a use reads that buffer (an op that
      shifts a buffer into itself must not read what it overwrites).
    - **into an allocation** (`copy %view, %tmp`): when every other use of
      %tmp comes after the copy and reads it (a `linalg.generic`'s input,
      a load, a size), they read %view, and the copy and the allocation
      go. Refused when an op between the copy and the last reader writes
      %view's buffer.

    Only element-wise ops take the other layout: the tensor-core
    projections and the kernels of `convert-gdn-to-gpu` want their dense
    operands.
  }];
  let dependentDialects = [
    "::mlir::memref::MemRefDialect",
  ];
}

def GdnGPUSeparateTemporariesPass
    : Pass<"gdn-gpu-separate-temporaries", "func::FuncOp"> {
  let summary = "Give every writer of a tensor.empty its own";
  let description = [{
    Before bufferization: a `tensor.empty` with several uses is replaced
    by one clone per use, right before its user where that is in the same
    block, else (a user inside a loop) where the original was, so that
    bufferization gives each writer its own buffer. One buffer shared by temporaries whose lives do
    not overlap saves memory but orders the kernels that write them;
    `gdn-gpu-merge-launches` needs independent kernels to touch different
    buffers.
  }];
  let dependentDialects = [
    "::mlir::tensor::TensorDialect",
  ];
}

def GdnGPUMergeLaunchesPass : Pass<"gdn-gpu-merge-launches",
                                    "func::FuncOp"> {
  let summary = "Run independent kernels of host code side by side in one "
                "launch";
  let description = [{
    A decode step at batch 1 is hundreds of small kernels, and each takes
    a few microseconds whatever its size. Kernels that do not depend on
    each other (the projections of one input, the q, k and v branches'
    element-wise work) become one `gpu.launch` whose grid is theirs end to
    end: a block with an index below the first grid's size runs the first
    body (its block index rebuilt from the linear one), the others the
    second body.

    Each launch, in order, takes in earlier launches of its block, nearest
    first and at most `window` launches back, when both have the same
    block size and one block in their body, neither uses workgroup memory,
    calls a function or reads its block index other than through the
    launch's arguments,
    neither writes a buffer the other touches, and the earlier one can
    move down to the later: no op in between writes a buffer it touches or
    touches a buffer it writes. Buffers are followed through views to
    their allocation or argument. Allocations are distinct from each
    other and from arguments; an argument listed in the function's
    `gdn.in_place_arguments` (a cache updated in place) overlaps no other
    argument, by the C ABI's contract; any other two arguments may be the
    same memory, and so may a buffer that is neither (a select, a loop's
    argument) with anything. A search back stops at an op whose effects
    are unknown (a call, a loop, an effect through a pointer or on nothing
    in particular), and a kernel that reaches memory other than through
    its memref operands (a call, a pointer made from an integer, inline
    assembly) is never moved and stops it too.
  }];
  let options = [
    Option<"window", "window", "unsigned", /*default=*/"32",
           "How many launches back a launch looks for one to take in">,
  ];
  let statistics = [
    Statistic<"mergedLaunches", "merged-launches",
              "Launches taken into a later one">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def GdnGPUMapParallelLoopsPass : Pass<"gdn-gpu-map-parallel-loops",
                                      "func::FuncOp"> {
  let summary = "Run the host code's linalg ops and copies as grid-mapped "
                "parallel loops";
  let description = [{
    After bufferization, every linalg op and `memref.copy` in host code
    (outside `gpu.launch` and `gpu.module`) becomes linalg's parallel loop
    nest. The parallel dimensions of each outermost loop are linearised
    into one index, the innermost dimension fastest, and split into blocks
    of `block-threads` threads, one thread per element (guarded by
    `scf.if` past the end); reduction dimensions stay loops in the thread,
    and parallel loops nested inside them run sequentially. The loops carry
    `#gpu.loop_dim_map` attributes (block_x, thread_x, sequential), which
    `convert-parallel-loops-to-gpu` turns into `gpu.launch`. An op without
    a leading parallel dimension runs in one thread.

    With `warp-reductions`, an op whose only reduction is a sum, maximum
    or minimum over its last loop dimension of at least 64 elements (a
    projection, a norm's sum of squares, attention's products and softmax)
    gets a warp per output element instead: the lanes stride over the
    reduced dimension (consecutive lanes, consecutive elements of a weight
    row), a butterfly of `gpu.shuffle xor` combines their partial results,
    and lane 0 combines the total into the output, or into the op's
    `gdn.reduction_init` (gdn-gpu-fold-fills) without reading the output.

    Lanes read 16 bytes each (8 bf16, 4 f32) per step, up to 8 steps in
    flight, where every row they read or write is contiguous along the
    reduced dimension and, checked at run time, starts at a 16-byte
    boundary; one element per lane otherwise (and past the last whole
    vector). Any other reduction whose result is combined last (a short
    sum: the causal convolution's taps) gets a thread per output element
    that keeps the total in a register.

    With `fuse-epilogues`, the element-wise op right after a reduction
    that maps over its outputs with their values (an activation, a gate,
    a residual add: it reads the output through the identity map and
    writes its own through the identity, or works in place on the
    output) runs in the thread that holds each total, after storing it.
    Copies and linalg ops between them that write nothing the reduction
    touches and read nothing it writes are stepped over: the reduction
    is built at the epilogue's place.

    With `fuse-rows`, the element-wise op right after such a reduction
    that maps the same rows with the reduction's result (it reads one of
    the reduction's inputs through the same indexing map, and the result
    through the result's map: RMSNorm's scaling by the sum of squares, a
    softmax's `exp(x - max)` and its division by the sum) runs in the same
    warps: the butterfly leaves the total in every lane, and each lane maps
    the elements it summed. One kernel instead of two, and the row is read
    while it is still in the L1.

    With `row-group` G > 1, a warp reduction whose largest input of static
    shape is read along the reduced dimension but does not depend on some
    of the parallel dimensions (a projection's weight matrix against its
    rows: the sequences of a decode batch, the tokens of a short prompt)
    takes G outputs that differ only in those dimensions: each step loads
    the weights' vector once and every row's own, and the warp's
    butterflies total the G sums. A decode batch of B sequences then reads
    each weight matrix ceil(B / G) times instead of B times. A group the
    rows do not fill (B < G, or the last one) takes its rows one at a
    time, so that a single sequence is not slowed by rows it does not have.
    The GPU model check passes with groups of 4, but they were slower
    (nenya-124m at B = 64: the LM head 2.36 -> 3.25 ms on an H100): a
    warp's rows are reductions in series, as many instructions with fewer
    warps. The default stays 1 (a warp per output); for batches,
    gdn-gpu-tensor-core-projections{small-row-blocks} puts the rows on
    tensor cores instead.
  }];
  let options = [
    Option<"blockThreads", "block-threads", "int64_t", /*default=*/"256",
           "Threads per block of the element-wise kernels (a multiple of "
           "32, at most 1024)">,
    Option<"warpReductions", "warp-reductions", "bool", /*default=*/"true",
           "Reductions over a long last dimension with a warp per output "
           "element">,
    Option<"fuseEpilogues", "fuse-epilogues", "bool", /*default=*/"true",
           "Run the element-wise op over a reduction's outputs that follows "
           "it (an activation, a residual add) in the thread that holds "
           "each output's total">,
    Option<"fuseRows", "fuse-rows", "bool", /*default=*/"true",
           "Run the element-wise op that follows a warp reduction over the "
           "same rows (a norm's scaling, a softmax's exp and division) in "
           "the reduction's warps">,
    Option<"rowGroup", "row-group", "int64_t", /*default=*/"1",
           "Rows of a projection that one warp sums, reading the weights "
           "once for them (1..16; 1, the default: a warp per output)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def GdnGPUDeviceBuffersPass : Pass<"gdn-gpu-device-buffers", "func::FuncOp"> {
  let summary = "Give host code's temporaries device memory and check that "
                "it never touches their elements";
  let description = [{
    For code whose every computation runs in kernels (a compiled model's
    step): `memref.alloc` in host code becomes a device `gpu.alloc`, and
    a `gpu.dealloc` follows the last op that uses the buffer or a view of
    it (unless it is returned). `gpu-async-region` then puts them, with the
    launches, in the order of one stream (the runtime's memory pool). Any
    host op left that reads or writes buffer elements (`memref.load`,
    `memref.store`, a constant `memref.get_global`, ...) is an error at
    the op: it would touch device memory from the host. Views, sizes,
    calls and kernel launches are what host code may do with buffers.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def GdnGPUTensorCoreProjectionsPass
    : Pass<"gdn-gpu-tensor-core-projections", "func::FuncOp"> {
  let summary = "Projections and MLA attention scores as mma.sync "
                "tensor-core kernels";
  let description = [{
    After bufferization, in host code: a projection `linalg.contract`
    (`out[b, t, o] += sum_i x[b, t, i] w[o, i]`) with f32 x and out, a
    static bf16 weight [O, I] (f32 too with `f32-weights`) with I a
    multiple of 16 and O at least 64,
    and dense buffers
    becomes a `gpu.launch` of bf16 `mma.sync` m16n8k16 products with f32
    accumulators over the rows of x that fill whole blocks of 128 (blocks
    of 128 x 64 outputs, four warps of 64 x 32; the launch carries
    `gdn.tensor_core_projection` with these tiles). The rows left over
    stay a contract on views of the same buffers, for
    `gdn-gpu-map-parallel-loops`: a decode step of fewer than 128
    sequences reads each weight row once per sequence, a warp per output.
    With `small-row-blocks=N`, when at least N rows are left (a runtime
    test: the rows are dynamic) they take the tensor cores as well, in
    blocks of 64 rows of four warps of 16 (the launch's attribute says
    `block = [64, 64]`, `warp = [16, 32]`), rows past the last one
    clamped on load and never stored; below N the warp per output stays.
    The same option gives MLA's absorbed scores the query tokens after
    the whole blocks with the heads as rows (row r: token r / heads, head
    r % heads; the grid's depth the batch): a decode step's 12 heads of a
    sequence then share each load of its cached keys, where the generic
    reads them once per head. And the attended latents of a decode step
    in key groups (gdn-absorb-mla-decode's key-split), `partial[b, t, n,
    c, g] += sum_s probs[b, n, t, g, s] latents[b, g, s, c]` (a generic
    over (b, t, n, g, c, s), f32, groups of a multiple of 16 keys): the
    tokens' heads as rows of one product per sequence and group (the
    grid's depth batch x groups), so that the heads share each load of the
    group's latents, where the generic's thread per (sequence, head,
    group, channel) reads them once per head.

    With `attention-scores`, the same kernel computes MLA's absorbed
    attention scores, `scores[b, n, t, s] += sum_r q[b, t, n, r] keys[b,
    s, r]` (a generic over (b, n, t, s, r), f32, R a multiple of 16, dense
    scores; queries and keys that are strided views, such as the RoPE
    part of each head's query and a cache, are read element by element):
    one product per sequence and head (the grid's depth), the
    keys split like the queries, the query rows after the last whole
    block left to the generic on views.

    The same option covers the attended latents that follow the softmax,
    `out[b, t, n, c] += sum_s probs[b, n, t, s] latents[b, s, c]` (a
    generic over (b, t, n, s, c), f32): a product per sequence and head
    whose depth is the number of keys, dynamic, so the loop takes the whole
    steps of 16 keys and one masked step crosses the last key (elements
    past it are zero, their loads clamped inside the operands); both
    operands are read element by element.

    MLA's products with a weight per head take it too (always, like the
    projections: bf16 weights, f32 ones with `f32-weights`):
    `out[b, t, n, o] += sum_k x[b, t, n, k] w[n, k, o]` (the queries into
    the latent space) and `... w[n, o, k]` (the attended latents' values
    out of it), one product per sequence and head, K a multiple of 16.

    With `fuse-epilogues`, the element-wise op right after a projection
    that maps over its outputs (an activation, a gate, a residual add;
    see gdn-gpu-map-parallel-loops) and reads besides them only dense
    [B, T, N] buffers and vectors over the columns runs as the tiles
    store C, and again on views of the rest rows right after their
    contract, where the warp reduction runs it.

    With `split-activations` (the default) every f32 operand (x, and an
    f32 weight or keys) is split into two bf16 terms and the products of
    the terms accumulated (all but lo x lo), so that the result stays
    within about 1e-5 of the f32 one; without it they are rounded to bf16
    (about 4e-3).
  }];
  let options = [
    Option<"fuseEpilogues", "fuse-epilogues", "bool", /*default=*/"true",
           "Run the element-wise op after a projection over its outputs "
           "(an activation, a residual add) as the tiles store them, and "
           "after the rest rows' reduction">,
    Option<"splitActivations", "split-activations", "bool", /*default=*/"true",
           "Split each f32 activation into two bf16 terms (16 significant "
           "bits) instead of rounding it to bf16">,
    Option<"f32Weights", "f32-weights", "bool", /*default=*/"false",
           "Also projections with f32 weights, split like the activations "
           "(measured on the GPU check: up to 5e-4 from transformers' f32 "
           "logits, against 5e-6 on the f32 path)">,
    Option<"attentionScores", "attention-scores", "bool", /*default=*/"true",
           "Also MLA's absorbed attention scores (f32 queries against "
           "shared f32 keys) and the attended latents on the same kernel">,
    Option<"smallRowBlocks", "small-row-blocks", "int64_t",
           /*default=*/"8",
           "From this many rows left after the 128-row blocks on (a decode "
           "batch), a projection's rest runs on tensor cores too, in "
           "blocks of 64 rows (warps of 16), the last one masked; fewer "
           "rows keep a warp per output. 0: always a warp per output">,
    Option<"smallRowMinOutputs", "small-row-min-outputs", "int64_t",
           /*default=*/"8192",
           "Projections of fewer outputs keep a warp per output for the "
           "rows small-row-blocks takes (one row of 64-column blocks "
           "would leave most multiprocessors idle; measured on an H100: "
           "768 outputs at B = 8 took 133 us in 12 blocks)">,
    Option<"tileStages", "tile-stages", "int64_t", /*default=*/"0",
           "Whole 128-row blocks of a projection with a bf16 weight and a "
           "reduction of a multiple of 32 stage their tiles of x and the "
           "weight in workgroup memory by cp.async, this many tiles deep "
           "(2 to 4, 20 KiB each); 0 (the default until the GPU model check "
           "and the sanitizers have run on it): each warp loads its "
           "fragments from global memory">,
    Option<"splitOnce", "split-once", "bool", /*default=*/"false",
           "With staged tiles, each block turns its tile of x into bf16 "
           "terms once in workgroup memory (16 KiB more), which the warps "
           "load, instead of every warp converting the f32 fragments it "
           "loads">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

#endif // GDN_CODEGEN_GPU_PASSES_TD
