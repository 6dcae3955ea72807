// RUN: gdn-opt %s --pass-pipeline='builtin.module(gdn-lower-to-cpu)' | FileCheck %s
// RUN: gdn-opt %s --pass-pipeline='builtin.module(gdn-lower-to-cpu{delta-rule-form=recurrent})' | FileCheck %s
// RUN: gdn-opt %s --pass-pipeline='builtin.module(gdn-lower-to-cuda{binary-format=isa})' | FileCheck %s --check-prefix=CUDA

// Results whose declared types know more or fewer static sizes than the
// operands, static empty sequences, and static batches lower on both targets.

// CHECK-LABEL: llvm.func @mixed
// CHECK-LABEL: llvm.func @empty
// CHECK-LABEL: llvm.func @step
// CUDA-LABEL: llvm.func @mixed
// CUDA: gpu.launch_func
// CUDA-LABEL: llvm.func @empty
// CUDA-LABEL: llvm.func @step
// CUDA: gpu.launch_func
func.func @mixed(%q: tensor<?x7x1x4xf32>, %k: tensor<?x7x1x4xf32>, %v: tensor<?x7x3x4xf32>, %g: tensor<?x7x3xf32>, %b: tensor<?x7x3xf32>) -> (tensor<?x?x3x4xf32>, tensor<?x3x4x4xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b : (tensor<?x7x1x4xf32>, tensor<?x7x1x4xf32>, tensor<?x7x3x4xf32>, tensor<?x7x3xf32>, tensor<?x7x3xf32>) -> (tensor<?x?x3x4xf32>, tensor<?x3x4x4xf32>)
  return %o, %s : tensor<?x?x3x4xf32>, tensor<?x3x4x4xf32>
}
func.func @empty(%q: tensor<2x0x1x4xf32>, %k: tensor<2x0x1x4xf32>, %v: tensor<2x0x3x4xf32>, %g: tensor<2x0x3xf32>, %b: tensor<2x0x3xf32>) -> (tensor<2x0x3x4xf32>, tensor<2x3x4x4xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b : (tensor<2x0x1x4xf32>, tensor<2x0x1x4xf32>, tensor<2x0x3x4xf32>, tensor<2x0x3xf32>, tensor<2x0x3xf32>) -> (tensor<2x0x3x4xf32>, tensor<2x3x4x4xf32>)
  return %o, %s : tensor<2x0x3x4xf32>, tensor<2x3x4x4xf32>
}
func.func @step(%q: tensor<2x1x4xf32>, %k: tensor<2x1x4xf32>, %v: tensor<2x3x4xf32>, %g: tensor<2x3xf32>, %b: tensor<2x3xf32>, %s0: tensor<2x3x4x4xf32>) -> (tensor<?x3x4xf32>, tensor<2x3x4x4xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %b, %s0 : (tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<2x3x4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x4x4xf32>) -> (tensor<?x3x4xf32>, tensor<2x3x4x4xf32>)
  return %o, %s : tensor<?x3x4xf32>, tensor<2x3x4x4xf32>
}
