// RUN: gdn-opt %s -split-input-file -convert-gdn-to-recurrence | FileCheck %s

// The prefill becomes one scf.for over the tokens carrying the f32 state and
// the output; each iteration reads (exp(g) S^T k), writes the state in place
// and reads the output (S^T q) with three linalg.generic ops.

// CHECK-DAG: #[[$GROUP:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 floordiv 2, d3)>
// CHECK-DAG: #[[$STATE_T:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
// CHECK-LABEL: func.func @grouped_bf16
// CHECK-SAME: (%[[Q:.+]]: tensor<?x?x2x8xbf16>, %[[K:.+]]: tensor<?x?x2x8xbf16>, %[[V:.+]]: tensor<?x?x4x16xbf16>, %[[G:.+]]: tensor<?x?x4xf32>, %[[BETA:.+]]: tensor<?x?x4xbf16>)
// CHECK-NOT: gdn.
// Query and key heads are repeated for the value heads and widened to f32.
// CHECK: %[[QF:.+]] = linalg.generic {indexing_maps = [#[[$GROUP]], {{.+}}]
// CHECK-SAME: ins(%[[Q]] : tensor<?x?x2x8xbf16>) outs({{.+}} : tensor<?x?x4x8xf32>)
// CHECK: arith.extf {{.+}} : bf16 to f32
// CHECK: %[[KF:.+]] = linalg.generic {indexing_maps = [#[[$GROUP]], {{.+}}]
// CHECK-SAME: ins(%[[K]] : tensor<?x?x2x8xbf16>)
// Without an initial state the state starts at zero.
// CHECK: %[[ZERO_STATE:.+]] = linalg.fill ins({{.+}} : f32) outs({{.+}} : tensor<?x4x8x16xf32>)
// CHECK: %[[LOOP:.+]]:2 = scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[S:.+]] = %[[ZERO_STATE]], %[[O:.+]] = %{{.+}}) -> (tensor<?x4x8x16xf32>, tensor<?x?x4x16xbf16>)
// CHECK:   %[[QT:.+]] = tensor.extract_slice %[[QF]][0, %[[I]], 0, 0]
// CHECK:   %[[KT:.+]] = tensor.extract_slice %[[KF]][0, %[[I]], 0, 0]
// CHECK:   %[[VHAT:.+]] = linalg.generic {indexing_maps = [#[[$STATE_T]], {{.+}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[S]], %[[KT]], {{.+}})
// CHECK:     math.exp
// CHECK:   %[[NEW_S:.+]] = linalg.generic {{{.+}}, iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[KT]], {{.+}}, %[[VHAT]], {{.+}}) outs(%[[S]] : tensor<?x4x8x16xf32>)
// CHECK:     math.exp
// CHECK:     arith.subf
// CHECK:   %[[OT:.+]] = linalg.generic {indexing_maps = [#[[$STATE_T]], {{.+}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[NEW_S]], %[[QT]] : tensor<?x4x8x16xf32>, tensor<?x4x8xf32>)
// The output is rounded to the element type of v and stored at token i.
// CHECK:     arith.truncf {{.+}} : f32 to bf16
// CHECK:   %[[STORED:.+]] = tensor.insert_slice %{{.+}} into %[[O]][0, %[[I]], 0, 0]
// CHECK:   scf.yield %[[NEW_S]], %[[STORED]]
// CHECK: return %[[LOOP]]#1, %[[LOOP]]#0
func.func @grouped_bf16(%q: tensor<?x?x2x8xbf16>, %k: tensor<?x?x2x8xbf16>, %v: tensor<?x?x4x16xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xbf16>) -> (tensor<?x?x4x16xbf16>, tensor<?x4x8x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x4x16xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xbf16>) -> (tensor<?x?x4x16xbf16>, tensor<?x4x8x16xf32>)
  return %o, %s : tensor<?x?x4x16xbf16>, tensor<?x4x8x16xf32>
}

// -----

// An initial state seeds the loop; f32 inputs need no conversion, and the
// scale multiplies the query inside the output reduction.

// CHECK-LABEL: func.func @initial_state_scaled
// CHECK-SAME: %[[H0:[a-z0-9]+]]: tensor<2x2x4x4xf32>)
// CHECK-NOT: linalg.fill {{.+}} tensor<2x2x4x4xf32>
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %[[H0]], %{{.+}} = %{{.+}})
// CHECK: %[[SCALE:.+]] = arith.constant 5.000000e-01 : f32
// CHECK: arith.mulf %{{.+}}, %[[SCALE]] : f32
// CHECK-NOT: arith.truncf
func.func @initial_state_scaled(%q: tensor<2x3x2x4xf32>, %k: tensor<2x3x2x4xf32>, %v: tensor<2x3x2x4xf32>, %g: tensor<2x3x2xf32>, %beta: tensor<2x3x2xf32>, %h0: tensor<2x2x4x4xf32>) -> (tensor<2x3x2x4xf32>, tensor<2x2x4x4xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0) {scale = 0.5 : f32} : (tensor<2x3x2x4xf32>, tensor<2x3x2x4xf32>, tensor<2x3x2x4xf32>, tensor<2x3x2xf32>, tensor<2x3x2xf32>, tensor<2x2x4x4xf32>) -> (tensor<2x3x2x4xf32>, tensor<2x2x4x4xf32>)
  return %o, %s : tensor<2x3x2x4xf32>, tensor<2x2x4x4xf32>
}

// -----

// The decode step is the loop body alone, with no loop.

// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[STATE:[a-z0-9]+]]: tensor<?x4x8x8xf32>)
// CHECK-NOT: scf.for
// CHECK-NOT: gdn.
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[STATE]],
// CHECK: %[[NEW:.+]] = linalg.generic {{.+}} outs(%[[STATE]] : tensor<?x4x8x8xf32>)
// CHECK: %[[OUT:.+]] = linalg.generic {{.+}} ins(%[[NEW]],
// CHECK: return %[[OUT]], %[[NEW]]
func.func @step(%q: tensor<?x2x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %state: tensor<?x4x8x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8x8xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %state : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8x8xf32>)
  return %o, %s : tensor<?x4x8xf32>, tensor<?x4x8x8xf32>
}
