// RUN: gdn-opt %s --pass-pipeline='builtin.module(func.func(gdn-gpu-separate-temporaries))' | FileCheck %s

// One tensor.empty filled by two independent ops: each gets its own, right
// before it, so bufferization gives them two buffers. A user inside a
// loop gets its copy where the original was, not one per iteration.

#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @two_writers
// CHECK-SAME: (%[[X:.*]]: tensor<?xf32>, %[[N:.*]]: index)
// CHECK: %[[E2:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK: %[[E0:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK: linalg.generic {{.*}} outs(%[[E0]] : tensor<?xf32>)
// CHECK: %[[E1:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK: linalg.generic {{.*}} outs(%[[E1]] : tensor<?xf32>)
// CHECK: scf.for
// CHECK: linalg.generic {{.*}} outs(%[[E2]] : tensor<?xf32>)
// CHECK-NOT: tensor.empty
func.func @two_writers(%x: tensor<?xf32>, %n: index)
    -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %e = tensor.empty(%n) : tensor<?xf32>
  %a = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.mulf %in, %in : f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  %b = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.addf %in, %in : f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x)
      -> tensor<?xf32> {
    %r = linalg.generic {indexing_maps = [#id, #id],
                         iterator_types = ["parallel"]}
        ins(%acc : tensor<?xf32>) outs(%e : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.negf %in : f32
      linalg.yield %y : f32
    } -> tensor<?xf32>
    scf.yield %r : tensor<?xf32>
  }
  return %a, %b, %c : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
}
