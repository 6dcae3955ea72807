// RUN: gdn-opt %s --inline | FileCheck %s

// gdn ops can be inlined: a model compiled with one function per distinct
// layer (gdn-compile's CPU form) can be flattened again with --inline.

// CHECK-LABEL: func.func @forward
// CHECK-NOT: call
// CHECK: gdn.rms_norm
// CHECK: gdn.delta_rule
// CHECK: gdn.rms_norm
// CHECK: gdn.delta_rule
// CHECK-NOT: func.func private @layer
func.func private @layer(%x: tensor<1x8x2x16xf32>, %w: tensor<16xf32>,
                         %g: tensor<1x8x2xf32>, %beta: tensor<1x8x2xf32>)
    -> tensor<1x8x2x16xf32> {
  %n = gdn.rms_norm %x, %w {eps = 1.0e-5 : f32}
      : (tensor<1x8x2x16xf32>, tensor<16xf32>) -> tensor<1x8x2x16xf32>
  %o, %s = gdn.delta_rule %n, %n, %n, %g, %beta
      : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>,
         tensor<1x8x2xf32>, tensor<1x8x2xf32>)
      -> (tensor<1x8x2x16xf32>, tensor<1x2x16x16xf32>)
  return %o : tensor<1x8x2x16xf32>
}

func.func @forward(%x: tensor<1x8x2x16xf32>, %w: tensor<16xf32>,
                   %g: tensor<1x8x2xf32>, %beta: tensor<1x8x2xf32>)
    -> tensor<1x8x2x16xf32> {
  %0 = call @layer(%x, %w, %g, %beta)
      : (tensor<1x8x2x16xf32>, tensor<16xf32>, tensor<1x8x2xf32>,
         tensor<1x8x2xf32>) -> tensor<1x8x2x16xf32>
  %1 = call @layer(%0, %w, %g, %beta)
      : (tensor<1x8x2x16xf32>, tensor<16xf32>, tensor<1x8x2xf32>,
         tensor<1x8x2xf32>) -> tensor<1x8x2x16xf32>
  return %1 : tensor<1x8x2x16xf32>
}
