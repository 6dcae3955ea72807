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

def GdnUnpackSequencesPass : Pass<"gdn-unpack-sequences", "func::FuncOp"> {
  let summary = "Rewrite packed sequences and state pools into dense delta-rule ops";
  let description = [{
    Rewrites the serving forms of `gdn.delta_rule` and `gdn.delta_rule_step`
    into the dense ops that the chunked and per-head lowerings take:

    - `state_indices` (a pool of states): an `scf.for` over the sequences
      gathers each one's initial state from its slot into a `[N, Hv, K, V]`
      tensor (zeros where the index is -1 or outside the pool), the op runs
      on the gathered states, and a second `scf.for` inserts each final
      state into its write slot of the pool. Every read precedes every
      write, so the reads see the pool as passed in, and the writes go into
      the pool operand itself: with the argument marked `gdn.in_place`,
      one-shot bufferization updates the caller's buffer and touches the
      written slots alone.
    - `cu_seqlens` (packed sequences): an `scf.for` over the N sequences
      slices each one's tokens out of the packed operands (offsets clamped
      to `[0, total]`), runs the dense op on `[1, length, ...]` from the
      sequence's initial state, and inserts its output and final state;
      the output starts as zeros, so rows outside every sequence are zero.

    - `gates(A_log, dt_bias)` (raw a and b in place of g and beta): g and
      beta computed by element-wise `linalg.generic` ops before the op.

    The loops are sequential: each dense op is parallel over its heads.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
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
    update the state in place. A state that only the step reads (one made
    in the function, as a pool's gather makes it) is updated in place
    here: the forall's shared output is that state itself.
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

def GdnAbsorbMlaDecodePass : Pass<"gdn-absorb-mla-decode", "func::FuncOp"> {
  let summary = "Choose the absorbed form for gdn.mla ops that continue a cache";
  let description = [{
    Sets `absorbed` on every `gdn.mla` with `cache(...)` operands: the ops
    of the step function, which decodes one token per sequence (or extends
    by a chunk of prompt). Their attention then works on the cached latents
    directly instead of expanding all `P + T` of them into per-head keys
    and values through `kv_b_proj` on every call (see `gdn.mla`). Prefill
    ops (no cache) keep the expanded form, which is cheaper when the
    queries are as many as the keys.

    With `key-split = N` (the GPU pipeline: 32), it also sets `key_split =
    N` on them: the attended latents are summed over groups of N keys
    first (see `gdn.mla`). 0 leaves the one sum over all keys.
  }];
  let options = [
    Option<"keySplit", "key-split", "int64_t", /*default=*/"0",
           "Keys per partial sum of the absorbed attention's attended "
           "latents (1 to 1024), or 0 for one sum over all keys">,
  ];
}

def GdnBlockAttentionPass : Pass<"gdn-block-attention", "func::FuncOp"> {
  let summary = "Choose blocked causal attention with an online softmax";
  let description = [{
    Sets `attention_block` on every `gdn.mla` and `gdn.gated_attention`:
    their decompositions then compute the attention in blocks of
    `block-size` queries and keys with an online softmax, so that a prefill
    of T tokens never materializes T x T scores (memory and time that grow
    with T^2), and skips the key blocks that causality hides. An `absorbed`
    `gdn.mla` (a model's step, which serves both decode and prompts) then
    chooses per call: fewer than `block-size` new tokens in the absorbed
    form, more in blocks. 0 leaves the ops alone (the whole score matrix).

    With `tensor-core-only` (the GPU pipeline), only `gdn.mla` ops whose
    heads fit the GPU's fused attention kernel are marked
    (`gdn.causal_attention`'s `fitsTensorCoreKernel`); the others keep the
    whole score matrix, whose products run on tensor cores there, rather
    than blocks that would run as scalar loops.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"64",
           "Queries and keys per block (1 to 1024), or 0 to leave the "
           "ops alone">,
    Option<"tensorCoreOnly", "tensor-core-only", "bool", /*default=*/"false",
           "Mark only the gdn.mla ops whose attention the GPU's fused "
           "tensor-core kernel takes">,
  ];
}

def GdnDecomposeLayersPass : Pass<"gdn-decompose-layers", "func::FuncOp"> {
  let summary = "Decompose layer ops into the core gdn ops and linalg";
  let description = [{
    Replaces every op that implements `linalg::AggregatedOpInterface` by
    its `decomposeOperation`, until none is left. gdn's layer ops implement
    it (as `linalg.softmax` does): `gdn.gated_deltanet` becomes
    projections, the causal depthwise convolutions, normalisations and gates
    as linalg ops on tensors around one `gdn.delta_rule`, following the op
    description step by step; `gdn.mla` becomes its projections, RoPE, the
    scores, a causal `linalg.softmax` (itself decomposed in the next round)
    and the weighted values; `gdn.rms_norm`, `gdn.swiglu_mlp`,
    `gdn.lm_head` and `gdn.embed` likewise. The delta rule is then lowered
    like any other (gdn-chunk-delta-rule or the recurrence).

    Projections (x [B, T, I] times a PyTorch-layout weight [O, I]) are one
    `linalg.matmul` over the B x T rows with the weight transposed in its
    indexing map; how they are tiled is the target's decision
    (gdn-cpu-tile-projections).

    With `keep-tensor-core-attention`, `gdn.causal_attention` ops whose
    head dimensions the GPU's fused kernel takes stay as they are, for
    gdn-convert-gdn-to-gpu to lower (the GPU pipeline sets it); the others
    decompose into their blocks.
  }];
  let options = [
    Option<"keepTensorCoreAttention", "keep-tensor-core-attention", "bool",
           /*default=*/"false",
           "Leave gdn.causal_attention ops that fit the GPU's tensor-core "
           "attention kernel undecomposed">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def GdnPlanTensorParallelPass
    : Pass<"gdn-plan-tensor-parallel", "func::FuncOp"> {
  let summary = "Plan how a model's layer ops split over tensor-parallel ranks";
  let description = [{
    Attaches `gdn.tensor_parallel = #gdn.tensor_parallel<...>` to every
    layer op of a model: the plan by which `ranks` GPUs of one host each
    hold a slice of the weights, compute a slice of the layer and exchange
    results after it (Megatron-style tensor parallelism).

    - `gdn.gated_deltanet`, `gdn.mla`: split by heads; the input
      projections, gates, convolutions and `kv_b_proj` column-parallel, the
      output projection row-parallel, then an all-reduce. MLA's latent
      down-projections (`q_a`, `kv_a`) stay whole on every rank.
    - `gdn.qwen_gated_deltanet`: split by heads, a rank's value heads with
      the key heads they read (both counts divide by `ranks`, so the
      grouping stays whole on every rank); then an all-reduce.
    - `gdn.gated_attention`: query heads and key/value heads both divided
      by `ranks`; then an all-reduce.
    - `gdn.swiglu_mlp`: gate and up column-parallel, down row-parallel, then
      an all-reduce.
    - `gdn.lm_head`: split by vocabulary rows (ceil(V / ranks) per rank, the
      last rank the rest), then an all-gather of the logits.
    - `gdn.embed`, `gdn.rms_norm`: replicated.

    A layer whose heads do not divide is an error at the op that names the
    counts; the plan never splits a head. With `ranks = 1` every op gets
    the trivial plan. Only the plan exists so far: the per-rank slicing of
    the weights and the collectives are not lowered yet.
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"1",
           "Tensor-parallel ranks (GPUs of one host), >= 1">,
  ];
}

#endif // GDN_DIALECT_GDN_TRANSFORMS_PASSES_TD
