// RUN: rm -f %t.out
// RUN: not gdn-compile %s --emit=mlir -o %t.out 2>&1 | FileCheck %s
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --emit=shared -o %t.out 2>&1 | FileCheck %s
// RUN: not test -e %t.out

// An op that fails its verifier is reported at the op, with the message of
// the verifier; nothing is written, whatever the stage.

// CHECK: {{.*}}error-verifier.mlir:[[@LINE+4]]:12: error: 'gdn.delta_rule' op result 'final_state' must have shape [B, Hv, K, V] = [1, 2, 8, 16] (V = 16 from operand 'v'), but got 'tensor<1x2x8x8xf32>'
// CHECK-NOT: error:

func.func @bad(%q: tensor<1x4x1x8xf32>, %k: tensor<1x4x1x8xf32>, %v: tensor<1x4x2x16xf32>, %g: tensor<1x4x2xf32>, %beta: tensor<1x4x2xf32>) -> (tensor<1x4x2x16xf32>, tensor<1x2x8x8xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> (tensor<1x4x2x16xf32>, tensor<1x2x8x8xf32>)
  return %o, %s : tensor<1x4x2x16xf32>, tensor<1x2x8x8xf32>
}
