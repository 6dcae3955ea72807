//===- QwenLayerOps.td - the layers of Qwen3.5 and Qwen3-Next -*- tablegen -*-===//
//
// The two mixers of the Hugging Face GDN hybrids (model types qwen3_5_text,
// qwen3_5 and qwen3_next): their Gated DeltaNet layer and their gated
// softmax attention. Included by GdnOps.td; decomposed by
// gdn-decompose-layers like the other layer ops. docs/huggingface.md maps
// the checkpoint's tensors onto their operands.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_IR_QWENLAYEROPS_TD
#define GDN_DIALECT_GDN_IR_QWENLAYEROPS_TD

include "gdn/Dialect/Gdn/IR/GdnAttrs.td"

def Gdn_QwenGatedDeltaNetOp : Gdn_Op<"qwen_gated_deltanet",
                                      [Pure, AttrSizedOperandSegments]> {
  let summary = "the Gated DeltaNet layer of Qwen3.5 and Qwen3-Next";
  let description = [{
    The linear-attention layer of the Qwen GDN hybrids over `T` tokens of
    `x` `[B, T, d_model]`, with `Hk` key heads of `Dk` and `Hv` value heads
    of `Dv` (`Hv` a multiple of `Hk`; value head `j` reads key head
    `j / (Hv / Hk)`):

    ```
    q, k, v, z, b, a = the input projections of x (see `layout`)
    q, k, v = silu(causal depthwise conv1d of [q | k | v], no bias)
    q, k    = x / sqrt(sum(x^2) + 1e-6) per head
    g       = -exp(A_log) * softplus(a + dt_bias)        [B, T, Hv]
    beta    = sigmoid(b)                                 [B, T, Hv]
    o, S    = gdn.delta_rule(q, k, v, g, beta) {scale = Dk^-0.5}
    o       = o / sqrt(mean(o^2) + eps) * norm.weight * silu(z)   per head
    y       = merge heads(o) out_proj.weight^T
    ```

    `layout = split` (Qwen3.5): the weights are `in_proj_qkv.weight`
    `[2 Hk Dk + Hv Dv, d_model]` (q, k, v one after the other),
    `in_proj_z.weight` `[Hv Dv, d_model]`, `in_proj_b.weight` and
    `in_proj_a.weight` `[Hv, d_model]`. `layout = grouped` (Qwen3-Next):
    `in_proj_qkvz.weight` `[2 Hk Dk + 2 Hv Dv, d_model]` whose rows are
    grouped by key head (per key head: its q, its k, the v of its `Hv / Hk`
    value heads, their z) and `in_proj_ba.weight` `[2 Hv, d_model]` (per key
    head: the b, then the a of its value heads). Then, for both layouts:
    `conv1d.weight` `[2 Hk Dk + Hv Dv, 1, kernel]`, `dt_bias` `[Hv]`,
    `A_log` `[Hv]`, `norm.weight` `[Dv]`, `out_proj.weight`
    `[d_model, Hv Dv]`.

    Results: `y` `[B, T, d_model]`, the final delta-rule state
    `[B, Hv, Dk, Dv]` and the final conv state `[B, kernel - 1,
    2 Hk Dk + Hv Dv]` (the last `kernel - 1` inputs of the conv). With
    `state(%conv_state, %initial_state)` the layer continues a sequence;
    decoding is this op with T = 1. f32.
  }];
  let arguments = (ins
    AnyRankedTensor:$x,
    Variadic<AnyRankedTensor>:$weights,
    Optional<AnyRankedTensor>:$conv_state,
    Optional<AnyRankedTensor>:$initial_state,
    ConfinedAttr<I64Attr, [IntPositive]>:$num_key_heads,
    ConfinedAttr<I64Attr, [IntPositive]>:$num_value_heads,
    ConfinedAttr<I64Attr, [IntPositive]>:$key_head_dim,
    ConfinedAttr<I64Attr, [IntPositive]>:$value_head_dim,
    Gdn_ProjectionLayoutAttr:$layout,
    DefaultValuedAttr<F32Attr, "1.0e-6">:$eps
  );
  let results = (outs AnyRankedTensor:$y, AnyRankedTensor:$final_state,
                      AnyRankedTensor:$final_conv_state);
  let assemblyFormat = [{
    $x `weights` `(` $weights `)`
    (`state` `(` $conv_state^ `,` $initial_state `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The weights' names in operand order, for `layout`.
    static llvm::ArrayRef<llvm::StringRef>
    weightNames(ProjectionLayout layout);
    /// Channels of the causal conv: 2 Hk Dk + Hv Dv.
    int64_t getConvChannels();
  }];
}

def Gdn_GatedAttentionOp : Gdn_Op<"gated_attention",
                                   [Pure, AttrSizedOperandSegments]> {
  let summary = "gated grouped-query softmax attention (Qwen3.5, Qwen3-Next)";
  let description = [{
    Causal softmax attention over `T` new tokens of `x` `[B, T, d_model]`
    that follow `P` cached ones, with `H` query heads and `Hkv` key/value
    heads of `D` (`H` a multiple of `Hkv`; query head `n` reads key/value
    head `n / (H / Hkv)`):

    ```
    q, gate = per head, the two halves of x q_proj.weight^T   [B, T, H, 2D]
    k, v    = x k_proj.weight^T, x v_proj.weight^T            [B, T, Hkv, D]
    q, k    = rms_norm(q) * (1 + q_norm.weight), rms_norm(k) * (1 + k_norm.weight)
    q, k    = RoPE on their first rotary_dim channels (rotate-half,
              rope_theta) at positions P .. P + T - 1
    o       = softmax_causal(q k^T / sqrt(D)) v, over the P cached and
              the T new keys and values
    y       = (merge heads(o) * sigmoid(merge heads(gate))) o_proj.weight^T
    ```

    Weights, in this order: `q_proj.weight` `[2 H D, d_model]`,
    `k_proj.weight` and `v_proj.weight` `[Hkv D, d_model]`, `o_proj.weight`
    `[d_model, H D]`, `q_norm.weight` and `k_norm.weight` `[D]`. Besides `y`,
    the op returns what the decode cache keeps per token: the normalised,
    rotated keys and the values of the new tokens, `[B, T, Hkv, D]` each.
    With `cache(%k, %v)` (`[B, P, Hkv, D]`) it continues a sequence. f32.

    With `in_place_cache`, the cache operands are `[B, P + T, Hkv, D]`: the
    P cached rows, then T rows whose contents are ignored, which the op
    fills with the new keys and values; the `keys` and `values` results are
    then the whole caches, `[B, P + T, Hkv, D]` (destination style: in
    place after bufferization, the cache grows without a copy).

    With `attention_block = N` (1 to 1024), the attention is computed in
    blocks of N queries and N keys with an online softmax, never
    materializing the scores (see `gdn.mla`; `gdn-block-attention` sets
    it).
  }];
  let arguments = (ins
    AnyRankedTensor:$x,
    Variadic<AnyRankedTensor>:$weights,
    Optional<AnyRankedTensor>:$past_keys,
    Optional<AnyRankedTensor>:$past_values,
    ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
    ConfinedAttr<I64Attr, [IntPositive]>:$num_kv_heads,
    ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
    ConfinedAttr<I64Attr, [IntNonNegative]>:$rotary_dim,
    F32Attr:$rope_theta,
    DefaultValuedAttr<F32Attr, "1.0e-6">:$eps,
    UnitAttr:$in_place_cache,
    OptionalAttr<I64Attr>:$attention_block
  );
  let results = (outs AnyRankedTensor:$y, AnyRankedTensor:$keys,
                      AnyRankedTensor:$values);
  let assemblyFormat = [{
    $x `weights` `(` $weights `)`
    (`cache` `(` $past_keys^ `,` $past_values `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    enum Weight : unsigned {
      QProj, KProj, VProj, OProj, QNorm, KNorm, NumWeights
    };
    Value getWeight(Weight w) { return getWeights()[w]; }
  }];
}

#endif // GDN_DIALECT_GDN_IR_QWENLAYEROPS_TD
