//===- GdnOps.td - gdn dialect operations ------------------*- tablegen -*-===//

#ifndef GDN_DIALECT_GDN_IR_GDNOPS_TD
#define GDN_DIALECT_GDN_IR_GDNOPS_TD

include "gdn/Dialect/Gdn/IR/GdnDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"

// Operands are declared as tensors and their ranks, shapes and element
// types are checked by the op verifiers, so that every diagnostic can name the
// operand and give the expected and the actual type. The tables in the op
// descriptions are the contract.

//===----------------------------------------------------------------------===//
// Core ops: the delta rule over a sequence and for one decode token.
//===----------------------------------------------------------------------===//

def Gdn_DeltaRuleOp : Gdn_Op<"delta_rule", [Pure]> {
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
    | `initial_state`  | `[B, Hv, K, V]` | f32 (optional)                 |
    | `o`              | `[B, T, Hv, V]` | element type of `v`            |
    | `final_state`    | `[B, Hv, K, V]` | f32                            |

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
    `o` is rounded to the element type of `v`. The gate `g` is expected to be
    `<= 0` (a forget gate in (0, 1]) and `beta` to lie in (0, 1); keys are
    expected to have unit length, as the chunkwise-parallel lowering relies on
    a well-conditioned triangular system.

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
    DefaultValuedAttr<F32Attr, "1.0">:$scale
  );
  let results = (outs AnyTensor:$o, AnyTensor:$final_state);

  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $g `,` $beta (`initial_state` `(` $initial_state^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// Number of value heads that share one query/key head (Hv / H).
    int64_t getGroupSize();
  }];
}

def Gdn_DeltaRuleStepOp : Gdn_Op<"delta_rule_step", [Pure]> {
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
    | `state`          | `[B, Hv, K, V]` | f32                            |
    | `o`              | `[B, Hv, V]`    | element type of `v`            |
    | `new_state`      | `[B, Hv, K, V]` | f32                            |

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
    DefaultValuedAttr<F32Attr, "1.0">:$scale
  );
  let results = (outs AnyTensor:$o, AnyTensor:$new_state);

  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $g `,` $beta `,` $state attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// Number of value heads that share one query/key head (Hv / H).
    int64_t getGroupSize();
  }];
}

#endif // GDN_DIALECT_GDN_IR_GDNOPS_TD
