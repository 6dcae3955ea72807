// The delta-rule kernels of a Qwen3.5-sized GDN layer as a library for the
// GPU (or the CPU): 16 query/key heads shared by 32 value heads, K = V = 128,
// bf16 q, k, v with f32 gates and state, any batch and token count.
//
//   gdn-compile examples/delta_rule_gpu.mlir --target=cuda --emit=shared -o libdelta_rule_gpu.so
//
// exports _mlir_ciface_prefill and _mlir_ciface_decode over device buffers
// (docs/c-abi.md); the prefill is the chunked scan on tensor cores, the
// decode step the in-place column recurrence. gdn.cuda.load_artifacts runs
// such libraries on torch CUDA tensors.

!q = tensor<?x?x16x128xbf16>
!v = tensor<?x?x32x128xbf16>
!gate = tensor<?x?x32xf32>
!state = tensor<?x32x128x128xf32>

func.func @prefill(%q: !q, %k: !q, %v: !v, %g: !gate, %beta: !gate,
                   %h0: !state) -> (!v, !state) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      {scale = 0.0883883461 : f32}
      : (!q, !q, !v, !gate, !gate, !state) -> (!v, !state)
  return %o, %s : !v, !state
}

func.func @decode(%q: tensor<?x16x128xbf16>, %k: tensor<?x16x128xbf16>,
                  %v: tensor<?x32x128xbf16>, %g: tensor<?x32xf32>,
                  %beta: tensor<?x32xf32>, %state: !state)
    -> (tensor<?x32x128xbf16>, !state) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %state
      {scale = 0.0883883461 : f32}
      : (tensor<?x16x128xbf16>, tensor<?x16x128xbf16>, tensor<?x32x128xbf16>,
         tensor<?x32xf32>, tensor<?x32xf32>, !state)
      -> (tensor<?x32x128xbf16>, !state)
  return %o, %s : tensor<?x32x128xbf16>, !state
}
