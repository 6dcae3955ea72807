// RUN: gdn-opt %s -gdn-choose-scan-strategy=f32-min-tokens=64 -convert-gdn-to-gpu -verify-diagnostics

// f32 inputs take the chunked scan only above recurrence_below tokens, and
// the recurrence kernel takes no packed sequences: no strategy, an error.
func.func @packed_f32(%q: tensor<1x?x2x64xf32>, %v: tensor<1x?x4x64xf32>, %g: tensor<1x?x4xf32>, %cu: tensor<?xi32>) -> tensor<1x?x4x64xf32> {
  // expected-error @+1 {{with cu_seqlens, state_indices or checkpoint_every runs on CUDA as the chunked scan, which needs bf16 or f16 q, k and v}}
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g cu_seqlens(%cu) : (tensor<1x?x2x64xf32>, tensor<1x?x2x64xf32>, tensor<1x?x4x64xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, tensor<?xi32>) -> (tensor<1x?x4x64xf32>, tensor<?x4x64x64xf32>)
  return %o : tensor<1x?x4x64xf32>
}
