// RUN: gdn-compile %s --emit=exe -o %t.exe
// RUN: %t.exe | FileCheck %s
// RUN: gdn-compile %s --emit=exe --recurrent-below=0 --chunk-size=1 -o %t.chunk1.exe
// RUN: %t.chunk1.exe | FileCheck %s
// RUN: gdn-compile %s --emit=exe --delta-rule-form=recurrent -o %t.recurrent.exe
// RUN: %t.recurrent.exe | FileCheck %s

// --emit=exe links an executable that runs @main. Two tokens of one head,
// by hand (K = V = 2, scale 1, no initial state):
//   t0: g = 0, beta = 0.5, k = [1, 0], v = [1, 2]:
//       S = 0.5 k v^T = [[0.5, 1], [0, 0]]; q = [1, 0]: o = S^T q = [0.5, 1]
//   t1: g = log 0.5, beta = 1, k = [0, 1], v = [3, 4]:
//       S' = 0.5 S = [[0.25, 0.5], [0, 0]], S'^T k = 0,
//       S = S' + k v^T = [[0.25, 0.5], [3, 4]]; q = [1, 1]: o = [3.25, 4.5]
// The same numbers come from the default form (the token recurrence inside
// the per-head tasks, T < 64), chunks of one token, and the reference
// recurrence.

// CHECK: rank = 4 offset = 0 sizes = [1, 2, 1, 2]
// CHECK-NEXT: {{\[\[\[\[}}0.5, 1]],
// CHECK-NEXT: {{\[\[}}3.25, 4.5]]]]
// CHECK: rank = 4 offset = 0 sizes = [1, 1, 2, 2]
// CHECK-NEXT: {{\[\[\[\[}}0.25, 0.5],
// CHECK-NEXT: {{\[}}3, 4]]]]

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @prefill(%q: tensor<1x2x1x2xf32>, %k: tensor<1x2x1x2xf32>, %v: tensor<1x2x1x2xf32>, %g: tensor<1x2x1xf32>, %beta: tensor<1x2x1xf32>) -> (tensor<1x2x1x2xf32>, tensor<1x1x2x2xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<1x2x1x2xf32>, tensor<1x2x1x2xf32>, tensor<1x2x1x2xf32>, tensor<1x2x1xf32>, tensor<1x2x1xf32>) -> (tensor<1x2x1x2xf32>, tensor<1x1x2x2xf32>)
  return %o, %s : tensor<1x2x1x2xf32>, tensor<1x1x2x2xf32>
}

func.func @main() {
  %q = arith.constant dense<[[[[1.0, 0.0]], [[1.0, 1.0]]]]> : tensor<1x2x1x2xf32>
  %k = arith.constant dense<[[[[1.0, 0.0]], [[0.0, 1.0]]]]> : tensor<1x2x1x2xf32>
  %v = arith.constant dense<[[[[1.0, 2.0]], [[3.0, 4.0]]]]> : tensor<1x2x1x2xf32>
  %g = arith.constant dense<[[[0.0], [-0.693147182]]]> : tensor<1x2x1xf32>
  %beta = arith.constant dense<[[[0.5], [1.0]]]> : tensor<1x2x1xf32>
  %o, %s = func.call @prefill(%q, %k, %v, %g, %beta) : (tensor<1x2x1x2xf32>, tensor<1x2x1x2xf32>, tensor<1x2x1x2xf32>, tensor<1x2x1xf32>, tensor<1x2x1xf32>) -> (tensor<1x2x1x2xf32>, tensor<1x1x2x2xf32>)
  %om = bufferization.to_buffer %o read_only : tensor<1x2x1x2xf32> to memref<1x2x1x2xf32>
  %ou = memref.cast %om : memref<1x2x1x2xf32> to memref<*xf32>
  func.call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  %sm = bufferization.to_buffer %s read_only : tensor<1x1x2x2xf32> to memref<1x1x2x2xf32>
  %su = memref.cast %sm : memref<1x1x2x2xf32> to memref<*xf32>
  func.call @printMemrefF32(%su) : (memref<*xf32>) -> ()
  return
}
