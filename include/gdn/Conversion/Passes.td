//===- Passes.td - gdn conversion passes -------------------*- tablegen -*-===//

#ifndef GDN_CONVERSION_PASSES_TD
#define GDN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertGdnToRecurrencePass
    : Pass<"convert-gdn-to-recurrence", "func::FuncOp"> {
  let summary = "Lower gdn delta-rule ops to the token-by-token recurrence";
  let description = [{
    Rewrites `gdn.delta_rule` into an `scf.for` loop over tokens whose body
    applies one step of the gated delta rule to the f32 state of every batch
    entry and value head with `linalg.generic` ops, and `gdn.delta_rule_step`
    into that body alone. The result uses only upstream dialects (scf, linalg,
    tensor, arith, math) and follows the op semantics literally: decay, read
    under the key, write the correction, read with the query.

    This is the reference lowering. It is the correctness oracle inside IR and
    the simplest executable path; it is not tuned for speed (the chunked form
    is the fast path).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def ConvertGdnToGPUPass : Pass<"convert-gdn-to-gpu", "func::FuncOp"> {
  let summary = "Lower gdn delta-rule ops to GPU kernels (column recurrence)";
  let description = [{
    Rewrites `gdn.delta_rule` and `gdn.delta_rule_step` into a `gpu.launch`
    on the operands' buffers. The grid is (Hv x ceil(V / block-columns), B);
    every thread owns one column `S[:, v]` of one head's state, keeps its K
    values in registers for the whole sequence, and per token computes

    ```
    a = exp(g_t);  kS = sum_k S[k] k_t[k]
    d = beta_t (v_t[v] - a kS);  S[k] = a S[k] + k_t[k] d
    o_t[v] = scale sum_k S[k] q_t[k]
    ```

    with q_t and k_t staged once per block in workgroup memory (widened to
    f32). The state is read from global memory once and written once, with
    coalesced accesses across the threads of a block; a step may therefore
    update the state in place. The results are memrefs allocated on the host
    side of the launch, which `buffer-results-to-out-params` turns into the
    caller's (device) buffers.

    This mapping is exact and memory-efficient for decode, and keeps f32
    prefill in full precision, sequential over tokens.

    A `gdn.delta_rule` with a `strategy` (`#gdn.scan_strategy`, chosen by
    `gdn-choose-scan-strategy`) becomes the chunked (WY) scan instead, laid
    out as the strategy says and nothing else decides: two launches of
    `warps` warps per block over global scratch (`gpu.alloc`):

    - the WY kernel, grid (chunks, Hv, B), computes the state-independent
      part of every chunk of 64 tokens at once: G (cumulative log-decay),
      A = strict_lower(beta exp(G_i - G_j) K K^T), T = (I + A)^-1 (blocked
      forward substitution in f32) and P = lower(exp(G_i - G_j) Q K^T),
      and leaves T diag(beta), P and G in scratch;
    - the state kernel, grid (Hv x V / value tile, B), walks the chunks in
      order with its state tile S in f32 registers (in workgroup memory
      where the state product's tiles do not divide among the warps):
      Vnew = T diag(beta) (V - diag(exp G) K S), which is the U - W S of
      the WY form without forming W or U, O = scale (diag(exp G) Q S +
      P Vnew), S = exp(G_C) S + K^T diag(exp(G_C - G)) Vnew. Two copy
      warps beside the compute warps bring the next chunk's q, k, v,
      T diag(beta), P and G by cp.async into a second slot during this
      chunk's products, and hand them over at a named barrier.

    Every product runs on tensor cores (`nvvm.mma.sync` m16n8k16, bf16
    operands, f32 accumulation) with fragments loaded by ldmatrix from bf16
    tiles stored as they are produced: row-major, or depth-major and loaded
    transposed. Each launch carries its mapping as a `gdn.chunked_scan`
    attribute (kernel, chunk, value_tile, warps, copy_warps, mma). State
    launches with the strategy's `value_tile` and its `narrow_value_tile`
    are emitted and chosen at run time (scf.if on the batch size): the
    wide one when its grid has at least `narrow_below_blocks` blocks.

    `gdn.causal_attention` becomes one kernel (AttentionToGPU.cpp), its
    launch marked `gdn.tensor_core_attention`: a block of four warps per
    (64 queries, head, sequence), each warp 16 query rows; per block of 64
    keys, q and k staged as bf16 in workgroup memory (head dimensions
    zero-padded to 16), the scores on mma.sync into registers, an online
    softmax (a running maximum and sum per row, in the exp2 domain) in
    registers, and the probabilities, repacked as A fragments without
    leaving registers, times v on mma.sync into the output accumulators.
    Key blocks past the block's last query are never visited; no score
    leaves the registers. With `split-attention-operands` each f32 operand
    is the sum of two bf16 numbers and three products are accumulated per
    product (as gdn-gpu-tensor-core-projections' split-activations), about
    1e-5 from f32 instead of bf16's 4e-3.
  }];
  let options = [
    Option<"blockColumns", "block-columns", "int64_t", /*default=*/"32",
           "State columns per block">,
    Option<"keySplits", "key-splits", "int64_t", /*default=*/"2",
           "Threads (warps, with 32 columns) that share one column's K "
           "rows; partial sums meet in workgroup memory. More splits mean "
           "fewer registers per thread and more resident warps">,
    Option<"splitAttentionOperands", "split-attention-operands", "bool",
           /*default=*/"true",
           "The tensor-core attention kernel splits each f32 operand into "
           "two bf16 terms instead of rounding it to bf16">,
    Option<"attentionVectorRows", "attention-vector-rows", "bool",
           /*default=*/"false",
           "The tensor-core attention kernel stages rows of q, k and v whose "
           "head dimension is a multiple of 8 by 16-byte loads instead of "
           "one load per element">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def GdnChooseScanStrategyPass
    : Pass<"gdn-choose-scan-strategy", "func::FuncOp"> {
  let summary = "Choose how each 16-bit gdn.delta_rule runs as the chunked "
                "scan on a GPU";
  let description = [{
    Sets the `strategy` (`#gdn.scan_strategy`) of every `gdn.delta_rule`
    with bf16 or f16 q, k and v that has none (with `f32-min-tokens`, f32
    ones too: see below); an op that has one keeps it
    (a strategy written in the input overrides the choice). Ops the scan
    cannot take (K not a multiple of 16, V not a multiple of 8) get none and
    stay on the recurrence. The choice, from the shapes and the device
    parameters below:

    - `value_tile`: the option, at most V, halved (while it stays a multiple
      of 8) until the state kernel's tiles fit the 227 KiB of workgroup
      memory of a Hopper multiprocessor;
    - `narrow_value_tile`: half of that, at least 32 and dividing V (0 when
      there is none), launched instead when the batch leaves
      multiprocessors idle: `narrow_below_blocks` = 7/8 of the
      multiprocessors. A wider tile reads each chunk's Q, K, T diag(beta)
      and P once for more value columns; measured on the H200 (K = V =
      128, docs/performance.md), tile 32 with 128 blocks beats tile 64 with
      64 blocks by 18% at B = 1, Hv = 32;
    - `warps` from the option; `state`: registers where the state
      product's 16 x 8 tiles divide evenly among the warps, else shared;
    - `context_segments` (the default, `context-segments=0`): where one
      batch entry's state-kernel grid (Hv x
      V / Vt blocks, Vt the narrow tile if any) has fewer than
      `narrow_below_blocks` blocks, the power of two (at most 16) that a
      cost model in chunk-times finds cheapest (the partial pass with its
      transitions, then the output pass, in waves of one block per
      multiprocessor); each sequence is then scanned as
      that many segments side by side and combined exactly through their
      transitions (docs/Lowering.md), at run time only where B x Hv x V /
      Vt stays below `narrow_below_blocks` and every segment gets at least
      4 chunks. 1 for packed sequences, pools, checkpoints, the f32
      recurrence and keys that are no whole number of tiles;
    - chunks of 64, mma.sync, cp.async with two stages (what the kernels
      implement).

    A model's delta rules take f32 q, k and v. With `f32-min-tokens` N > 0
    they get a strategy too, with `recurrence_below = N`: calls of N tokens
    or more run the scan on q, k and v rounded to bf16 (the WY kernel makes
    the copies; g, beta, the state and o stay f32), shorter ones (decode)
    the f32 column recurrence, chosen at run time from T
    (`--cuda-bf16-scan-inputs` of gdn-compile).
  }];
  let options = [
    Option<"chunkedPrefill", "chunked-prefill", "bool", /*default=*/"true",
           "Choose the chunked scan for bf16/f16 prefill (false: every op "
           "keeps the recurrence)">,
    Option<"f32MinTokens", "f32-min-tokens", "int64_t", /*default=*/"0",
           "Also f32 q, k, v: calls of at least this many tokens run the "
           "scan on bf16 copies, shorter ones the recurrence (0: f32 ops "
           "keep the recurrence)">,
    Option<"valueTile", "value-tile", "int64_t", /*default=*/"64",
           "State columns per block of the chunked scan (before the "
           "workgroup-memory limit)">,
    Option<"scanWarps", "scan-warps", "int64_t", /*default=*/"4",
           "Warps per block of the chunked scan (4 or 8)">,
    Option<"multiprocessors", "multiprocessors", "int64_t",
           /*default=*/"132",
           "Streaming multiprocessors of the target (132: H100/H200 SXM); "
           "the narrower tile runs where the wide one's grid leaves more "
           "than 1/8 of them idle">,
    Option<"contextSegments", "context-segments", "int64_t",
           /*default=*/"0",
           "Segments of a sequence scanned side by side where a batch "
           "leaves multiprocessors idle: 0 (the default) chooses from the "
           "shapes, a power of two N asks for N (1: none)">,
  ];
}

#endif // GDN_CONVERSION_PASSES_TD
