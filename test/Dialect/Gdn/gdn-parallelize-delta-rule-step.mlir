// RUN: gdn-opt %s -split-input-file -gdn-parallelize-delta-rule-step | FileCheck %s

// One task per (entry, value head). A state the caller passes in is read,
// and the new states go to a fresh tensor.

// CHECK-LABEL: func.func @argument_state
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<?x4x16x8xf32>)
// CHECK: %[[FRESH:.+]] = tensor.empty(%{{.+}}) : tensor<?x4x16x8xf32>
// CHECK: scf.forall (%[[B:.+]], %[[H:.+]]) in (%{{.+}}, 4) shared_outs(%{{.+}} = %{{.+}}, %[[NEW:.+]] = %[[FRESH]])
// CHECK: tensor.extract_slice %[[S]][%[[B]], %[[H]], 0, 0] [1, 1, 16, 8]
// CHECK: tensor.parallel_insert_slice %{{.+}} into %[[NEW]][%[[B]], %[[H]], 0, 0] [1, 1, 16, 8]
func.func @argument_state(%q: tensor<?x2x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %s: tensor<?x4x16x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x16x8xf32>) {
  %o, %n = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x16x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x16x8xf32>)
  return %o, %n : tensor<?x4x8xf32>, tensor<?x4x16x8xf32>
}

// -----

// A state that only the step reads (here states made in the function, as
// a pool's gather makes them) is updated in place: the tasks read their
// head's state through the shared output itself.

// CHECK-LABEL: func.func @scratch_state
// CHECK: %[[MADE:.+]] = linalg.fill
// CHECK: scf.forall (%[[B:.+]], %[[H:.+]]) in (%{{.+}}, 4) shared_outs(%{{.+}} = %{{.+}}, %[[NEW:.+]] = %[[MADE]])
// CHECK: %[[MINE:.+]] = tensor.extract_slice %[[NEW]][%[[B]], %[[H]], 0, 0] [1, 1, 16, 8]
// CHECK-NOT: tensor.extract_slice %[[MADE]]
// CHECK: linalg.generic {{.+}} outs(%[[MINE]] : tensor<16x8xf32>)
// CHECK: tensor.parallel_insert_slice %{{.+}} into %[[NEW]][%[[B]], %[[H]], 0, 0] [1, 1, 16, 8]
func.func @scratch_state(%q: tensor<?x2x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %n0: index) -> (tensor<?x4x8xf32>, tensor<?x4x16x8xf32>) {
  %cst = arith.constant 0.5 : f32
  %e = tensor.empty(%n0) : tensor<?x4x16x8xf32>
  %s = linalg.fill ins(%cst : f32) outs(%e : tensor<?x4x16x8xf32>) -> tensor<?x4x16x8xf32>
  %o, %n = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x16x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x16x8xf32>)
  return %o, %n : tensor<?x4x8xf32>, tensor<?x4x16x8xf32>
}
