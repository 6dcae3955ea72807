//===- GdnDialect.td - gdn dialect definition --------------*- tablegen -*-===//
//
// The gdn dialect: gated delta-rule linear attention as first-class IR.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_IR_GDNDIALECT_TD
#define GDN_DIALECT_GDN_IR_GDNDIALECT_TD

include "mlir/IR/OpBase.td"

def Gdn_Dialect : Dialect {
  let name = "gdn";
  let cppNamespace = "::mlir::gdn";
  let summary = "Gated delta-rule (Gated DeltaNet) linear attention";
  let description = [{
    The `gdn` dialect expresses linear attention with the gated delta rule as
    first-class operations, so that prefill over a sequence and single-token
    decode can be written, inspected, transformed and lowered with the usual
    MLIR tools.

    Every head keeps a fixed-size state `S` of shape `[K, V]` in f32. Per
    token `t`, with the forget gate given in log space as `g_t = log(alpha_t)
    <= 0`, the update rule is:

    ```
    S'    = exp(g_t) * S                      (decay)
    v_hat = S'^T k_t                          (read under the key)
    S     = S' + beta_t * k_t (v_t - v_hat)^T (delta-rule write)
    o_t   = scale * S^T q_t                   (read with the query)
    ```

    Tensors use the token-major layout `[B, T, heads, dim]`. Grouped value
    heads are supported: there may be more value heads `Hv` than query/key
    heads `H` when `Hv` is a multiple of `H`; value head `j` then reads
    query/key head `j / (Hv / H)`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = [
    "::mlir::tensor::TensorDialect"
  ];
}

class Gdn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Gdn_Dialect, mnemonic, traits>;

#endif // GDN_DIALECT_GDN_IR_GDNDIALECT_TD
