// Layer ops have no CUDA lowering yet: convert-gdn-to-gpu says so at the op,
// instead of leaving them for bufferization to fail on ("op was not
// bufferized").
// RUN: not gdn-opt %s --gdn-lower-to-cuda=binary-format=isa 2>&1 | FileCheck %s
// CHECK: error: 'gdn.rms_norm' op has no CUDA lowering: the CUDA pipeline lowers gdn.delta_rule and gdn.delta_rule_step
// CHECK-NOT: not bufferized

func.func @norm(%x: tensor<?x?x16xf32>, %w: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %n = gdn.rms_norm %x, %w {eps = 1.0e-5 : f32} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %n : tensor<?x?x16xf32>
}
