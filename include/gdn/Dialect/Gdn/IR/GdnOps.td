//===- GdnOps.td - gdn dialect operations ------------------*- tablegen -*-===//

#ifndef GDN_DIALECT_GDN_IR_GDNOPS_TD
#define GDN_DIALECT_GDN_IR_GDNOPS_TD

include "gdn/Dialect/Gdn/IR/GdnDialect.td"
include "gdn/Dialect/Gdn/IR/GdnAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"

// Operands are declared as tensors and their ranks, shapes and element
// types are checked by the op verifiers, so that every diagnostic can name the
// operand and give the expected and the actual type. The tables in the op
// descriptions are the contract.

//===----------------------------------------------------------------------===//
// Core ops: the delta rule over a sequence and for one decode token.
//===----------------------------------------------------------------------===//

def Gdn_DeltaRuleOp : Gdn_Op<"delta_rule", [Pure, AttrSizedOperandSegments]> {
  let summary = "gated delta rule over a sequence (prefill)";
  let description = [{
    Runs the gated delta rule over `T` tokens for every batch entry and value
    head, starting from `initial_state` (zeros when absent), and returns the
    per-token outputs and the state after the last token.

    Shapes (B and T may be dynamic; H, Hv, K and V must be static):

    | operand / result | shape           | element type                   |
    |------------------|-----------------|--------------------------------|
    | `q`, `k`         | `[B, T, H, K]`  | f32, bf16 or f16               |
    | `v`              | `[B, T, Hv, V]` | same as `q` and `k`            |
    | `g`              | `[B, T, Hv]`    | f32 (log of the forget gate)   |
    | `beta`           | `[B, T, Hv]`    | f32 or the element type of `v` |
    | `initial_state`  | `[B, Hv, K, V]` | f32 or bf16 (optional)         |
    | `o`              | `[B, T, Hv, V]` | element type of `v`            |
    | `final_state`    | `[B, Hv, K, V]` | f32 or bf16, as `initial_state`|

    `Hv` must be a multiple of `H`; value head `j` reads query/key head
    `j / (Hv / H)`.

    Semantics, per batch entry `b` and value head `j` (with `h = j / (Hv / H)`),
    for `t = 0 .. T-1`, with the state `S` (`[K, V]`, f32) starting at
    `initial_state[b, j]`:

    ```
    S'       = exp(g[b, t, j]) * S
    v_hat    = S'^T k[b, t, h]
    S        = S' + beta[b, t, j] * k[b, t, h] (v[b, t, j] - v_hat)^T
    o[b,t,j] = scale * S^T q[b, t, h]
    ```

    and `final_state[b, j] = S` after the last token. All arithmetic is in f32;
    `o` is rounded to the element type of `v`. A bf16 state is storage only:
    it is widened to f32 when read and rounded to bf16 when written, once per
    call (`gdn-unpack-sequences`). The gate `g` is expected to be
    `<= 0` (a forget gate in (0, 1]) and `beta` to lie in (0, 1); keys are
    expected to have unit length, as the chunkwise-parallel lowering relies on
    a well-conditioned triangular system.

    **Packed sequences.** With `cu_seqlens` (i32 `[N + 1]`, the offsets of
    N sequences in the token dimension, `0 = cu[0] <= cu[1] <= ... <= cu[N] =
    total`), q, k, v, g and beta are packed (`[1, total, ...]`) and every
    sequence runs from its own initial state: `initial_state` and
    `final_state` are `[N, Hv, K, V]`, one per sequence. `o` keeps the packed
    layout; its rows outside every sequence are zero. A sequence may be
    empty (its final state is its initial state). Offsets outside
    `[0, total]` or decreasing are clamped at run time (an empty sequence
    where they decrease), so that no access leaves the operands.

    **State pools.** With `state_indices` (i32 `[N]`, N the sequences: B, or
    the sequences of `cu_seqlens`), `initial_state` is required and is a pool
    `[S, Hv, K, V]` of S slots: sequence n starts from slot
    `state_indices[n]` and its final state goes to slot `write_indices[n]`
    (`state_indices[n]` when `write_indices` is absent). `final_state` is the
    pool after the writes, of the pool's type; every read sees the pool as
    passed in. An index of -1 reads a zero state and writes nothing (an
    empty entry of a batch); so does any index outside `[0, S)`. Two
    sequences writing the same slot leave one of their states there. With a
    pool argument marked `gdn.in_place` (docs/c-abi.md), the update happens
    in the caller's buffer: only the written slots are touched.

    | operand / result | packed (`cu_seqlens`) | with `state_indices` |
    |------------------|-----------------------|----------------------|
    | q, k / v         | `[1, total, H, K]` / `[1, total, Hv, V]` | as without |
    | g, beta          | `[1, total, Hv]`      | as without           |
    | `initial_state`  | `[N, Hv, K, V]`       | `[S, Hv, K, V]` (the pool) |
    | `final_state`    | `[N, Hv, K, V]`       | `[S, Hv, K, V]` (the pool) |
    | `cu_seqlens`     | `[N + 1]` i32         |                      |
    | `state_indices`, `write_indices` |       | `[N]` i32            |

    **Checkpoints** (prefix caching). With `checkpoint_every = N` (N >= 1)
    the op has a third result, `checkpoints`: the state after every N
    tokens of each sequence, stored like the final state. Dense: `[B, C,
    Hv, K, V]` with C = T / N (rounded down), `checkpoints[b, c]` the state
    after token (c + 1) N - 1. Packed: `[R, Hv, K, V]`, the checkpoints of
    the sequences one after another (sequence n's first at row
    `sum_{j < n} floor(len_j / N)`); R = floor(total / N) rows always
    suffice, and rows past the last checkpoint are zero. A whole chunk is
    the natural N: the chunked scan has the state at every chunk boundary.

    **Raw gates.** With `gates(%A_log, %dt_bias)` (f32 `[Hv]` each), `g` and
    `beta` are the raw projections a and b of a Qwen-style layer (f32 or the
    element type of `v`), and the op uses

    ```
    g    = -exp(A_log[j]) * softplus(a + dt_bias[j])   (softplus(x) = x above 20)
    beta = sigmoid(b)
    ```

    `gdn-unpack-sequences` rewrites these forms into the dense op (a loop
    over the packed sequences; a gather and a scatter of the pool's slots;
    the gates computed element-wise) for the CPU. On CUDA, packed sequences
    and pools are operands of the chunked scan (a strategy is then
    required, and `recurrence_below` must be 0); the scan updates a pool in
    place, so there a slot that one sequence writes and another reads gives
    the reader either state. Raw gates are computed by the CUDA kernels
    (the chunked scan's WY kernel, or the recurrence) as they read a and b,
    and bf16 states widened as they are read and rounded as they are
    stored. Checkpoints are stored by the scan's state kernel at chunk
    boundaries: on CUDA, N must be a multiple of the strategy's chunk.

    `strategy` (a `#gdn.scan_strategy`, set by `gdn-choose-scan-strategy`)
    says how the op runs as the chunked scan on a GPU; it needs bf16 or f16
    q, k and v, K a multiple of 16 and V a multiple of its value tiles. Ops
    without one keep the token recurrence there.

    Example:

    ```mlir
    %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
        {scale = 1.0 : f32}
        : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x128xbf16>,
           tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x64x128xf32>)
        -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>)
    ```
  }];

  let arguments = (ins
    AnyTensor:$q,
    AnyTensor:$k,
    AnyTensor:$v,
    AnyTensor:$g,
    AnyTensor:$beta,
    Optional<AnyTensor>:$initial_state,
    Optional<AnyTensor>:$cu_seqlens,
    Optional<AnyTensor>:$state_indices,
    Optional<AnyTensor>:$write_indices,
    Optional<AnyTensor>:$a_log,
    Optional<AnyTensor>:$dt_bias,
    DefaultValuedAttr<F32Attr, "1.0">:$scale,
    OptionalAttr<Gdn_ScanStrategyAttr>:$strategy,
    OptionalAttr<I64Attr>:$checkpoint_every
  );
  let results = (outs AnyTensor:$o, AnyTensor:$final_state,
                 Optional<AnyTensor>:$checkpoints);

  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $g `,` $beta (`initial_state` `(` $initial_state^ `)`)?
    (`cu_seqlens` `(` $cu_seqlens^ `)`)?
    (`state_indices` `(` $state_indices^ `)`)?
    (`write_indices` `(` $write_indices^ `)`)?
    (`gates` `(` $a_log^ `,` $dt_bias `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// Number of value heads that share one query/key head (Hv / H).
    int64_t getGroupSize();
    /// The checkpoint attribute and result agree, and the result's shape.
    ::mlir::LogicalResult verifyCheckpoints();
    /// Packed sequences, a state pool, raw gates or bf16 states: the forms
    /// gdn-unpack-sequences rewrites into the dense op with f32 states.
    bool hasServingOperands() {
      return getCuSeqlens() || getStateIndices() || getALog() ||
             getCheckpoints() ||
             getFinalState().getType().getElementType().isBF16();
    }
  }];
}

def Gdn_DeltaRuleStepOp : Gdn_Op<"delta_rule_step",
                                  [Pure, AttrSizedOperandSegments]> {
  let summary = "one decode token of the gated delta rule";
  let description = [{
    Advances the state of every batch entry and value head by one token and
    returns the token's output and the new state.

    | operand / result | shape           | element type                   |
    |------------------|-----------------|--------------------------------|
    | `q`, `k`         | `[B, H, K]`     | f32, bf16 or f16               |
    | `v`              | `[B, Hv, V]`    | same as `q` and `k`            |
    | `g`              | `[B, Hv]`       | f32 (log of the forget gate)   |
    | `beta`           | `[B, Hv]`       | f32 or the element type of `v` |
    | `state`          | `[B, Hv, K, V]` | f32 or bf16 (storage)          |
    | `o`              | `[B, Hv, V]`    | element type of `v`            |
    | `new_state`      | `[B, Hv, K, V]` | element type of `state`        |

    B may be dynamic; H, Hv, K and V must be static and `Hv` a multiple of
    `H`. Semantics, per batch entry `b` and value head `j` (with
    `h = j / (Hv / H)`) and `S = state[b, j]`:

    ```
    S'                = exp(g[b, j]) * S
    v_hat             = S'^T k[b, h]
    new_state[b, j]   = S' + beta[b, j] * k[b, h] (v[b, j] - v_hat)^T
    o[b, j]           = scale * new_state[b, j]^T q[b, h]
    ```

    A `gdn.delta_rule` over `T` tokens equals `T` successive steps.

    **State pools.** With `state_indices` (i32 `[B]`), `state` is a pool
    `[S, Hv, K, V]`: entry b reads slot `state_indices[b]` and writes slot
    `write_indices[b]` (`state_indices[b]` without it), and `new_state` is
    the pool after the writes. An index of -1, or any outside `[0, S)`,
    reads a zero state and writes nothing. On the CPU
    (`gdn-unpack-sequences`: a gather, the dense step, a scatter) every read
    sees the pool as passed in. The CUDA decode kernel reads and writes the
    pool in place, one block per entry and head: there a slot that one entry
    writes and another reads gives either state, so the slots an engine
    writes should be read by their own entries only (as they are).

    **Raw gates.** With `gates(%A_log, %dt_bias)`, `g` and `beta` are the raw
    a and b, as for `gdn.delta_rule` (on CUDA computed by the decode kernel
    as it reads them).

    Example:

    ```mlir
    %o, %s1 = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0 {scale = 1.0 : f32}
        : (tensor<?x16x128xf32>, tensor<?x16x128xf32>, tensor<?x16x128xf32>,
           tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16x128x128xf32>)
        -> (tensor<?x16x128xf32>, tensor<?x16x128x128xf32>)
    ```
  }];

  let arguments = (ins
    AnyTensor:$q,
    AnyTensor:$k,
    AnyTensor:$v,
    AnyTensor:$g,
    AnyTensor:$beta,
    AnyTensor:$state,
    Optional<AnyTensor>:$state_indices,
    Optional<AnyTensor>:$write_indices,
    Optional<AnyTensor>:$a_log,
    Optional<AnyTensor>:$dt_bias,
    DefaultValuedAttr<F32Attr, "1.0">:$scale
  );
  let results = (outs AnyTensor:$o, AnyTensor:$new_state);

  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $g `,` $beta `,` $state
    (`state_indices` `(` $state_indices^ `)`)?
    (`write_indices` `(` $write_indices^ `)`)?
    (`gates` `(` $a_log^ `,` $dt_bias `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// Number of value heads that share one query/key head (Hv / H).
    int64_t getGroupSize();
    /// A state pool, raw gates or a bf16 state: the forms
    /// gdn-unpack-sequences rewrites.
    bool hasServingOperands() {
      return getStateIndices() || getALog() ||
             getNewState().getType().getElementType().isBF16();
    }
  }];
}

def Gdn_DeltaRuleVerifyOp : Gdn_Op<"delta_rule_verify",
                                    [Pure, AttrSizedOperandSegments]> {
  let summary = "draft tokens of the gated delta rule, with the state after each";
  let description = [{
    Speculative verification: runs `T` draft tokens (at most 16) from each
    entry's state and returns every token's output and the state after
    every token, so that an engine keeps the state of the last token it
    accepts. The state operand is never written.

    | operand / result | shape              | element type                 |
    |------------------|--------------------|------------------------------|
    | `q`, `k`         | `[B, T, H, K]`     | f32, bf16 or f16             |
    | `v`              | `[B, T, Hv, V]`    | same as `q` and `k`          |
    | `g`, `beta`      | `[B, T, Hv]`       | as for `gdn.delta_rule`      |
    | `state`          | `[B, Hv, K, V]`, or a pool `[S, Hv, K, V]` with `state_indices` | f32 or bf16 |
    | `state_indices`  | `[B]`              | i32 (optional)               |
    | `o`              | `[B, T, Hv, V]`    | element type of `v`          |
    | `states`         | `[B, T, Hv, K, V]` | element type of `state`      |

    `states[b, t]` is the state after token t, equal to t + 1 successive
    `gdn.delta_rule_step` ops from `state[b]` (or from the pool's slot
    `state_indices[b]`; -1 or an index outside `[0, S)` starts from zeros).
    `gates(%A_log, %dt_bias)` takes raw a and b as for `gdn.delta_rule`.
    `gdn-unpack-sequences` rewrites the op into T steps for the CPU; on
    CUDA it runs as the token recurrence, storing every token's state.
  }];

  let arguments = (ins
    AnyTensor:$q,
    AnyTensor:$k,
    AnyTensor:$v,
    AnyTensor:$g,
    AnyTensor:$beta,
    AnyTensor:$state,
    Optional<AnyTensor>:$state_indices,
    Optional<AnyTensor>:$a_log,
    Optional<AnyTensor>:$dt_bias,
    DefaultValuedAttr<F32Attr, "1.0">:$scale
  );
  let results = (outs AnyTensor:$o, AnyTensor:$states);

  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $g `,` $beta `,` $state
    (`state_indices` `(` $state_indices^ `)`)?
    (`gates` `(` $a_log^ `,` $dt_bias `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// Number of value heads that share one query/key head (Hv / H).
    int64_t getGroupSize();
    /// The most draft tokens the op takes.
    static constexpr int64_t kMaxTokens = 16;
  }];
}

//===----------------------------------------------------------------------===//
// Layer ops: whole layers of hybrid models, decomposed by
// gdn-decompose-layers into the core ops and linalg.
//===----------------------------------------------------------------------===//

def Gdn_GatedDeltaNetOp : Gdn_Op<"gated_deltanet",
                                  [Pure, AttrSizedOperandSegments]> {
  let summary = "the Gated DeltaNet layer of the design document";
  let description = [{
    The layer `GatedMultiHeadDeltaAttention` of the design document, exactly,
    over `T` tokens from a zero state:

    ```
    q, k, v = x W_query^T, x W_key^T, x W_value^T          (no bias)
    q, k, v = silu(causal depthwise conv1d(., conv_*.weight, conv_*.bias))
              (left zero padding of kernel-1 tokens)
    split heads: [B, T, H, D] with D = d_out / H
    q, k    = q / max(|q|, 1e-12), k / max(|k|, 1e-12)     (per head)
    v       = rms_norm(v) * norm.weight                     (eps)
    g       = -exp(log_alpha) * softplus(x alpha.weight^T + alpha.bias)
    beta    = sigmoid(x beta.weight^T + beta.bias)
    o, S    = gdn.delta_rule(q, k, v, g, beta) {scale = 1.0}
    o       = rms_norm(o) * norm.weight                     (the same weight)
    y       = (merge heads(o) * silu(x gate.weight^T + gate.bias))
              out_proj.weight^T + out_proj.bias
    ```

    The weights are the reference module's `state_dict` entries, in the
    operand order below (PyTorch's own `state_dict()` lists `log_alpha`
    first) and in PyTorch layouts (Linear weights `[out, in]`, conv weights
    `[d_out, 1, kernel]`):

    | # | name | shape |
    |---|------|-------|
    | 0-2 | W_query.weight, W_key.weight, W_value.weight | [d_out, d_model] |
    | 3, 4 | out_proj.weight, out_proj.bias | [d_out, d_out], [d_out] |
    | 5, 6 | beta.weight, beta.bias | [H, d_model], [H] |
    | 7, 8 | alpha.weight, alpha.bias | [H, d_model], [H] |
    | 9, 10 | gate.weight, gate.bias | [d_out, d_model], [d_out] |
    | 11 | log_alpha | [H] |
    | 12-17 | conv_k.weight/bias, conv_v.weight/bias, conv_q.weight/bias | [d_out, 1, kernel], [d_out] |
    | 18 | norm.weight | [D] |

    `x` is `[B, T, d_model]`; the results are `y` `[B, T, d_out]`, the
    final delta-rule state `[B, H, D, D]` and the final conv state
    `[B, kernel - 1, 3 d_out]`: the last `kernel - 1` projected inputs of
    conv_q, conv_k and conv_v, in that order along the last dimension.

    Without `state(...)` the layer starts a sequence (zero conv history, zero
    delta-rule state), as the reference module does. With
    `state(%conv_state, %initial_state)` it continues one: the conv history
    replaces the left zero padding and the delta rule starts from
    `initial_state`. Decoding is this op with T = 1, fed the states it
    returned. B and T may be dynamic; all other sizes static. f32 throughout.

    ```mlir
    %y, %s, %c = gdn.gated_deltanet %x weights(%w0, ..., %w18)
        state(%conv, %s0) {num_heads = 2 : i64}
        : (tensor<?x?x64xf32>, ...) -> (tensor<?x?x64xf32>,
           tensor<?x2x32x32xf32>, tensor<?x3x192xf32>)
    ```
  }];
  let arguments = (ins
    AnyTensor:$x,
    Variadic<AnyTensor>:$weights,
    Optional<AnyTensor>:$conv_state,
    Optional<AnyTensor>:$initial_state,
    ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
    DefaultValuedAttr<F32Attr, "1.0e-6">:$eps
  );
  let results = (outs AnyTensor:$y, AnyTensor:$final_state,
                      AnyTensor:$final_conv_state);
  let assemblyFormat = [{
    $x `weights` `(` $weights `)`
    (`state` `(` $conv_state^ `,` $initial_state `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Positions of the weights in `weights` (see the table above).
    enum Weight : unsigned {
      WQuery, WKey, WValue, OutProjWeight, OutProjBias, BetaWeight, BetaBias,
      AlphaWeight, AlphaBias, GateWeight, GateBias, LogAlpha, ConvKWeight,
      ConvKBias, ConvVWeight, ConvVBias, ConvQWeight, ConvQBias, NormWeight,
      NumWeights
    };
    Value getWeight(Weight w) { return getWeights()[w]; }
  }];
}

def Gdn_MlaOp : Gdn_Op<"mla", [Pure, AttrSizedOperandSegments]> {
  let summary = "multi-head latent attention (DeepSeek-V2)";
  let description = [{
    Causal multi-head latent attention over `T` new tokens of `x`
    `[B, T, d]` that follow `P` cached ones (`P = 0` without `cache(...)`):

    ```
    q        = x q_proj^T                      (q_lora_rank = 0)
             | rms_norm(x q_a_proj^T, q_a_layernorm) q_b_proj^T
    q_nope, q_rope = split per head [n, qk_nope | qk_rope]
    latent, k_rope = split(x kv_a_proj_with_mqa^T) [kv_lora_rank | qk_rope]
    latent   = rms_norm(latent, kv_a_layernorm)
    k_nope, v = split per head of latent kv_b_proj^T [n, qk_nope | v_head_dim]
    q_rope, k_rope = RoPE at positions P..P+T-1 (rotate-half, rope_theta);
                     k_rope is one head shared by all heads
    keys     = the P cached latents and k_rope, then the T new ones
    y = softmax_causal((q_nope k_nope^T + q_rope k_rope^T)
                       / sqrt(qk_nope + qk_rope)) v,  heads merged, o_proj
    ```

    Weights (PyTorch layouts), in this order: with `q_lora_rank = 0`,
    `q_proj.weight`; otherwise `q_a_proj.weight`, `q_a_layernorm.weight`,
    `q_b_proj.weight`; then `kv_a_proj_with_mqa.weight`,
    `kv_a_layernorm.weight`, `kv_b_proj.weight`, `o_proj.weight`. Besides
    `y`, the op returns what the decode cache keeps per token: the normalised
    latent `[B, T, kv_lora_rank]` and the rotated shared key
    `[B, T, qk_rope_head_dim]` of the new tokens. With
    `cache(%latent, %k_rope)` (`[B, P, kv_lora_rank]`, `[B, P,
    qk_rope_head_dim]`, what earlier calls returned, concatenated) the op
    continues a sequence: decoding is this op with T = 1. f32.

    With `absorbed`, the decomposition computes the same attention in the
    absorbed form (DeepSeek-V2's decode): the queries go through the key
    part of `kv_b_proj` into the latent space, the scores are taken against
    the latents themselves, and the value part of `kv_b_proj` is applied to
    the attended latents. It never expands the `P + T` latents into
    per-head keys and values, so it costs `O((P + T) n kv_lora_rank)` per
    query instead of `O((P + T) n kv_lora_rank (qk_nope + v))` for the
    whole call: the better form when `T` is small against
    `qk_nope + v_head_dim` (decode); `gdn-absorb-mla-decode` sets it on the
    ops that continue a cache.

    With `in_place_cache`, the cache operands are the caches with room for
    the new tokens, `[B, P + T, kv_lora_rank]` and `[B, P + T,
    qk_rope_head_dim]`: the P cached rows, then T rows whose contents are
    ignored; the op writes the new tokens' latents and RoPE keys into those
    rows, and the `latent` and `k_rope` results are the whole caches
    (`[B, P + T, ...]`). Bufferized in place (destination style), a decode
    step then appends to the cache instead of copying it, which is how a
    model's step function keeps its caches.

    With `attention_block = N` (1 to 1024), the decomposition computes the
    expanded attention in blocks of N queries against blocks of N keys with
    an online softmax (a running maximum and sum per query): the `T x (P +
    T)` scores are never materialized, key blocks past a query block's last
    position are skipped, and each (sequence, head, query block) is a task
    of its own (`gdn-block-attention` sets it). With `absorbed` too, the
    form is chosen when the op runs: absorbed for fewer than N new tokens,
    blocked for more.

    With `absorbed` and `key_split = N` (1 to 1024), the absorbed form sums
    the attended latents over the keys in two steps: over the keys of each
    whole group of N (a partial sum per group and latent channel), then
    over the groups and the last keys that fill no group. The sum is the
    same up to f32 rounding; the grouping is for GPUs, where every thread of
    the first step walks N keys down one latent channel, neighbouring
    threads reading neighbouring channels, instead of a warp per output
    that reads the keys of one channel a latent row apart. The softmax's
    maximum and sum over the keys are taken in the same groups, so that a
    decode step's few rows, each as long as the context, are not one warp
    each (`gdn-absorb-mla-decode` sets it).
  }];
  let arguments = (ins
    AnyRankedTensor:$x,
    Variadic<AnyRankedTensor>:$weights,
    Optional<AnyRankedTensor>:$past_latent,
    Optional<AnyRankedTensor>:$past_k_rope,
    ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
    I64Attr:$q_lora_rank,
    ConfinedAttr<I64Attr, [IntPositive]>:$kv_lora_rank,
    ConfinedAttr<I64Attr, [IntPositive]>:$qk_nope_head_dim,
    ConfinedAttr<I64Attr, [IntPositive]>:$qk_rope_head_dim,
    ConfinedAttr<I64Attr, [IntPositive]>:$v_head_dim,
    F32Attr:$rope_theta,
    DefaultValuedAttr<F32Attr, "1.0e-6">:$eps,
    UnitAttr:$absorbed,
    UnitAttr:$in_place_cache,
    OptionalAttr<I64Attr>:$attention_block,
    OptionalAttr<I64Attr>:$key_split
  );
  let results = (outs AnyRankedTensor:$y, AnyRankedTensor:$latent,
                      AnyRankedTensor:$k_rope);
  let assemblyFormat = [{
    $x `weights` `(` $weights `)`
    (`cache` `(` $past_latent^ `,` $past_k_rope `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Gdn_CausalAttentionOp : Gdn_Op<"causal_attention", [Pure]> {
  let summary = "causal softmax attention of new queries over every key";
  let description = [{
    `o = softmax_causal(scale q k^T) v` for `T` queries `q` `[B, T, n, d]`
    against `S` keys `k` `[B, S, nk, d]` and values `v` `[B, S, nk, e]`
    (f32). The queries are the last `T` of the `S` positions: query `t`
    sits at position `S - T + t` and sees the keys `s <= S - T + t`, so a
    prompt that continues `P` cached tokens passes the `P + T` keys. Query
    head `h` reads key and value head `h / (n / nk)` (grouped heads).
    `T <= S` is verified where both are static; dynamic sizes with `T > S`
    are undefined behaviour (the op's producers, `gdn.mla`'s
    decompositions, always pass the P + T keys).

    The attention of `gdn.mla`'s expanded form (prompts), computed in
    blocks with an online softmax: no `T x S` score matrix is ever formed,
    and key blocks that causality hides are skipped. On the CPU it
    decomposes into a task per (sequence, head, block of `block` queries)
    over blocks of `block` keys; on the GPU it becomes one tensor-core
    kernel (`gdn-convert-gdn-to-gpu`, tiles of 64 queries by 64 keys
    recorded on its launch) where the head dimensions allow it
    (`fitsTensorCoreKernel`).

    ```mlir
    %o = gdn.causal_attention %q, %k, %v {scale = 0.102 : f32, block = 64}
        : (tensor<?x?x12x96xf32>, tensor<?x?x12x96xf32>,
           tensor<?x?x12x64xf32>) -> tensor<?x?x12x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$q, AnyRankedTensor:$k,
                   AnyRankedTensor:$v, F32Attr:$scale,
                   DefaultValuedAttr<I64Attr, "64">:$block);
  let results = (outs AnyRankedTensor:$o);
  let assemblyFormat = [{
    $q `,` $k `,` $v attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// Whether the GPU's tensor-core kernel takes heads of `qkDim` query
    /// and key elements and `valueDim` value elements: padded to 16 and 8,
    /// at most 256 and 128 (the products' fragments and the output stay in
    /// registers). Its workgroup memory at the widest, 166 KiB with split
    /// operands, fits sm_90's 227 KiB, not every older chip's.
    static bool fitsTensorCoreKernel(int64_t qkDim, int64_t valueDim);
  }];
  let hasVerifier = 1;
}

def Gdn_RmsNormOp : Gdn_Op<"rms_norm", [Pure, AllTypesMatch<["x", "y"]>]> {
  let summary = "RMSNorm over the last dimension";
  let description = [{
    `y = x / sqrt(mean(x^2 over the last dimension) + eps) * weight`, with
    `weight` of the size of the last dimension of `x` (`[..., D]`, f32).
    With `zero_centered`, the weight is stored as its offset from one (the
    Qwen3.5 and Qwen3-Next norms): `... * (1 + weight)`.

    ```mlir
    %y = gdn.rms_norm %x, %w {eps = 1.0e-6 : f32}
        : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$x, AnyRankedTensor:$weight,
                   DefaultValuedAttr<F32Attr, "1.0e-6">:$eps,
                   UnitAttr:$zero_centered);
  let results = (outs AnyRankedTensor:$y);
  let assemblyFormat = [{
    $x `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Gdn_SwiGluMlpOp : Gdn_Op<"swiglu_mlp", [Pure, AllTypesMatch<["x", "y"]>]> {
  let summary = "the SwiGLU feed-forward block: down(silu(gate(x)) * up(x))";
  let description = [{
    `y = (silu(x gate^T) * (x up^T)) down^T` for `x` `[B, T, D]` and
    bias-free weights in PyTorch layout: `gate` and `up` `[F, D]`, `down`
    `[D, F]` (Hugging Face `mlp.{gate,up,down}_proj.weight`). f32.
  }];
  let arguments = (ins AnyRankedTensor:$x, AnyRankedTensor:$gate,
                   AnyRankedTensor:$up, AnyRankedTensor:$down);
  let results = (outs AnyRankedTensor:$y);
  let assemblyFormat = [{
    $x `weights` `(` $gate `,` $up `,` $down `)` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Gdn_EmbedOp : Gdn_Op<"embed", [Pure]> {
  let summary = "token embedding lookup";
  let description = [{
    `y[b, t, :] = table[ids[b, t], :]` for `ids` `[B, T]` (i64) and `table`
    `[vocab, D]` (f32). Ids outside `[0, vocab)` are undefined behaviour;
    callers validate them.
  }];
  let arguments = (ins AnyRankedTensor:$ids, AnyRankedTensor:$table);
  let results = (outs AnyRankedTensor:$y);
  let assemblyFormat = [{
    $ids `,` $table attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Gdn_LmHeadOp : Gdn_Op<"lm_head", [Pure]> {
  let summary = "logits: x weight^T";
  let description = [{
    `logits = x weight^T` for `x` `[B, T, D]` and `weight` `[vocab, D]`
    (`lm_head.weight`, or the embedding table when embeddings are tied).
  }];
  let arguments = (ins AnyRankedTensor:$x, AnyRankedTensor:$weight);
  let results = (outs AnyRankedTensor:$logits);
  let assemblyFormat = [{
    $x `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

include "gdn/Dialect/Gdn/IR/QwenLayerOps.td"

#endif // GDN_DIALECT_GDN_IR_GDNOPS_TD
