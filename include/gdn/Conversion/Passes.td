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

    This is the first GPU mapping: exact and memory-efficient for decode,
    sequential over tokens for prefill (no tensor cores yet).
  }];
  let options = [
    Option<"blockColumns", "block-columns", "int64_t", /*default=*/"32",
           "State columns per block">,
    Option<"keySplits", "key-splits", "int64_t", /*default=*/"2",
           "Threads (warps, with 32 columns) that share one column's K "
           "rows; partial sums meet in workgroup memory. More splits mean "
           "fewer registers per thread and more resident warps">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
  ];
}

#endif // GDN_CONVERSION_PASSES_TD
