// RUN: gdn-opt %s -split-input-file -gdn-decompose-layers | FileCheck %s

// The layer becomes projections, convolutions, normalisations and gates in
// linalg around one gdn.delta_rule with scale 1 and no initial state.

// CHECK-DAG: #[[$TAPS:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, 0, d3)>
// CHECK-LABEL: func.func @layer
// CHECK-NOT: gdn.gated_deltanet
// The causal convolution reads the projected input where it lies, at
// t + j - 3, and zero before the first token: no padded copy of it.
// CHECK-NOT: tensor.insert_slice
// CHECK: %[[Z:.+]] = linalg.contract
// CHECK: linalg.generic {indexing_maps = [#[[$TAPS]]
// CHECK: %[[T:.+]] = linalg.index 1
// CHECK: %[[J:.+]] = linalg.index 3
// CHECK: %[[P:.+]] = arith.addi %[[T]], %[[J]]
// CHECK: %[[EARLY:.+]] = arith.cmpi ult, %[[P]], %c3
// CHECK: %[[ROW:.+]] = arith.select %[[EARLY]], %c3, %[[P]]
// CHECK: %[[AT:.+]] = arith.subi %[[ROW]], %c3
// CHECK: %[[TAP:.+]] = tensor.extract %[[Z]][%{{.+}}, %[[AT]], %{{.+}}]
// CHECK: arith.select %[[EARLY]], %cst{{.*}}, %[[TAP]]
// CHECK: tensor.expand_shape %{{.+}} {{\[\[}}0], [1], [2, 3]] output_shape [%{{.+}}, %{{.+}}, 2, 4]
// Softplus is the identity above 20, as in PyTorch.
// CHECK: math.log1p
// CHECK: arith.cmpf ogt
// CHECK: %[[O:.+]], %[[S:.+]] = gdn.delta_rule %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} :
// CHECK-SAME: -> (tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>)
// CHECK: math.rsqrt
// CHECK: tensor.collapse_shape
// CHECK: return %{{.+}}, %[[S]]
func.func @layer(%x: tensor<?x?x8xf32>, %p0: tensor<8x8xf32>, %p1: tensor<8x8xf32>, %p2: tensor<8x8xf32>, %p3: tensor<8x8xf32>, %p4: tensor<8xf32>, %p5: tensor<2x8xf32>, %p6: tensor<2xf32>, %p7: tensor<2x8xf32>, %p8: tensor<2xf32>, %p9: tensor<8x8xf32>, %p10: tensor<8xf32>, %p11: tensor<2xf32>, %p12: tensor<8x1x4xf32>, %p13: tensor<8xf32>, %p14: tensor<8x1x4xf32>, %p15: tensor<8xf32>, %p16: tensor<8x1x4xf32>, %p17: tensor<8xf32>, %p18: tensor<4xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x4x4xf32>) {
  %y, %s, %c = gdn.gated_deltanet %x weights(%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8, %p9, %p10, %p11, %p12, %p13, %p14, %p15, %p16, %p17, %p18) {num_heads = 2 : i64} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<4xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x4x4xf32>, tensor<?x3x24xf32>)
  return %y, %s : tensor<?x?x8xf32>, tensor<?x2x4x4xf32>
}

// -----

// A continued sequence: each conv reads its slice of the conv state where
// the zero padding was, the delta rule starts from the given state, and the
// last three projected inputs of q, k and v become the next conv state.
// CHECK-LABEL: func.func @layer_continued
// CHECK-SAME: %[[CONV:[^:]+]]: tensor<?x3x24xf32>, %[[S0:[^:]+]]: tensor<?x2x4x4xf32>
// CHECK: %[[HQ:.+]] = tensor.extract_slice %[[CONV]][0, 0, 0] [%{{.+}}, 3, 8] [1, 1, 1]
// The next history: position T + i of the window, from the state where it
// is still in it, from the new tokens otherwise (only the one that applies
// is read: a call may bring no token).
// CHECK: linalg.generic
// CHECK: scf.if
// CHECK: tensor.extract %[[HQ]]
// CHECK: } else {
// CHECK: tensor.extract
// The convolution reads the state's rows before the first token.
// CHECK: linalg.generic
// CHECK: tensor.extract %[[HQ]]
// CHECK: arith.select
// CHECK: tensor.extract_slice %[[CONV]][0, 0, 8] [%{{.+}}, 3, 8]
// CHECK: tensor.extract_slice %[[CONV]][0, 0, 16] [%{{.+}}, 3, 8]
// CHECK: gdn.delta_rule %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} initial_state(%[[S0]]) :
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 16] [%{{.+}}, 3, 8]
// CHECK: return
func.func @layer_continued(%x: tensor<?x?x8xf32>, %conv: tensor<?x3x24xf32>, %s0: tensor<?x2x4x4xf32>, %p0: tensor<8x8xf32>, %p1: tensor<8x8xf32>, %p2: tensor<8x8xf32>, %p3: tensor<8x8xf32>, %p4: tensor<8xf32>, %p5: tensor<2x8xf32>, %p6: tensor<2xf32>, %p7: tensor<2x8xf32>, %p8: tensor<2xf32>, %p9: tensor<8x8xf32>, %p10: tensor<8xf32>, %p11: tensor<2xf32>, %p12: tensor<8x1x4xf32>, %p13: tensor<8xf32>, %p14: tensor<8x1x4xf32>, %p15: tensor<8xf32>, %p16: tensor<8x1x4xf32>, %p17: tensor<8xf32>, %p18: tensor<4xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x4x4xf32>, tensor<?x3x24xf32>) {
  %y, %s, %c = gdn.gated_deltanet %x weights(%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8, %p9, %p10, %p11, %p12, %p13, %p14, %p15, %p16, %p17, %p18) state(%conv, %s0) {num_heads = 2 : i64} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<?x3x24xf32>, tensor<?x2x4x4xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x4x4xf32>, tensor<?x3x24xf32>)
  return %y, %s, %c : tensor<?x?x8xf32>, tensor<?x2x4x4xf32>, tensor<?x3x24xf32>
}

// -----

// Biases are added after the sums they belong to, in the op that follows
// (the convolution's SiLU, the gates), not broadcast into the accumulators:
// on the GPU that op runs in the sum's kernel, a broadcast would be a kernel
// of its own.
// CHECK-LABEL: func.func @biases_after_sums
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x?x8xf32>
// CHECK-SAME: %[[B:[^:]+]]: tensor<2x8xf32>, %[[BBIAS:[^:]+]]: tensor<2xf32>, %[[A:[^:]+]]: tensor<2x8xf32>, %[[ABIAS:[^:]+]]: tensor<2xf32>
// CHECK-SAME: %[[LOGA:[^:]+]]: tensor<2xf32>
// CHECK-SAME: %[[CW:[^:]+]]: tensor<8x1x4xf32>, %[[CB:[^:]+]]: tensor<8xf32>, %{{[^:]+}}: tensor<4xf32>)
// CHECK-NOT: linalg.yield %in : f32
// CHECK: %[[TAPS:.+]] = linalg.generic {{.*}} ins(%[[CW]] : tensor<8x1x4xf32>) outs(%{{.+}} :
// CHECK: linalg.generic {{.*}} ins(%[[CB]] : tensor<8xf32>) outs(%[[TAPS]] :
// CHECK-NEXT: ^bb0(%[[BIAS:.+]]: f32, %[[TOTAL:.+]]: f32):
// CHECK-NEXT: %[[SHIFTED:.+]] = arith.addf %[[TOTAL]], %[[BIAS]]
// CHECK-NEXT: arith.negf %[[SHIFTED]]
// CHECK: %[[AX:.+]] = linalg.contract {{.*}} ins(%[[X]], %[[A]] : {{.*}}) outs(%{{.+}} :
// CHECK: linalg.generic {{.*}} ins(%[[AX]], %[[LOGA]], %[[ABIAS]] :
// CHECK-NEXT: ^bb0(%[[AIN:.+]]: f32, %{{.+}}: f32, %[[AB:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: arith.addf %[[AIN]], %[[AB]]
// CHECK: %[[BX:.+]] = linalg.contract {{.*}} ins(%[[X]], %[[B]] : {{.*}}) outs(%{{.+}} :
// CHECK: linalg.generic {{.*}} ins(%[[BBIAS]] : tensor<2xf32>) outs(%[[BX]] :
// CHECK-NEXT: ^bb0(%[[BB:.+]]: f32, %[[BIN:.+]]: f32):
// CHECK-NEXT: arith.addf %[[BIN]], %[[BB]]
// CHECK: gdn.delta_rule
func.func @biases_after_sums(%x: tensor<?x?x8xf32>, %p0: tensor<8x8xf32>, %p1: tensor<8x8xf32>, %p2: tensor<8x8xf32>, %p3: tensor<8x8xf32>, %p4: tensor<8xf32>, %b: tensor<2x8xf32>, %bbias: tensor<2xf32>, %a: tensor<2x8xf32>, %abias: tensor<2xf32>, %p9: tensor<8x8xf32>, %p10: tensor<8xf32>, %loga: tensor<2xf32>, %p12: tensor<8x1x4xf32>, %p13: tensor<8xf32>, %p14: tensor<8x1x4xf32>, %p15: tensor<8xf32>, %cw: tensor<8x1x4xf32>, %cb: tensor<8xf32>, %p18: tensor<4xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x4x4xf32>) {
  %y, %s, %c = gdn.gated_deltanet %x weights(%p0, %p1, %p2, %p3, %p4, %b, %bbias, %a, %abias, %p9, %p10, %loga, %p12, %p13, %p14, %p15, %cw, %cb, %p18) {num_heads = 2 : i64} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<4xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x4x4xf32>, tensor<?x3x24xf32>)
  return %y, %s : tensor<?x?x8xf32>, tensor<?x2x4x4xf32>
}
