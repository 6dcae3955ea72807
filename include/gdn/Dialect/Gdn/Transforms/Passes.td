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
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", /*default=*/"64",
           "Tokens per chunk (16, 32 or 64 are the usual choices)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

#endif // GDN_DIALECT_GDN_TRANSFORMS_PASSES_TD
