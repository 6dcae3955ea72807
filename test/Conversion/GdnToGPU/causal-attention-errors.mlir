// RUN: not gdn-opt %s -convert-gdn-to-gpu 2>&1 | FileCheck %s

// Values wider than 128 keep too many accumulators in registers: no
// lowering, and the error says what the kernel takes.
// CHECK: error: 'gdn.causal_attention' op has no CUDA lowering for heads of 64 query/key and 256 value elements: the tensor-core kernel takes at most 256 and 128
func.func @wide(%q: tensor<1x8x1x64xf32>, %k: tensor<1x8x1x64xf32>, %v: tensor<1x8x1x256xf32>) -> tensor<1x8x1x256xf32> {
  %o = gdn.causal_attention %q, %k, %v {scale = 0.125 : f32} : (tensor<1x8x1x64xf32>, tensor<1x8x1x64xf32>, tensor<1x8x1x256xf32>) -> tensor<1x8x1x256xf32>
  return %o : tensor<1x8x1x256xf32>
}
