// RUN: gdn-compile %s --emit=mlir -o %t.mlir
// RUN: FileCheck %s --input-file=%t.mlir
// RUN: gdn-compile %s --emit=mlir -o - | FileCheck %s
// The output parses again and round-trips unchanged.
// RUN: gdn-compile %t.mlir --emit=mlir -o - | diff %t.mlir -

// --emit=mlir writes the parsed, verified module; nothing is lowered.

// CHECK-LABEL: func.func @prefill
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<?x?x1x8xbf16>, %[[K:[a-z0-9]+]]: tensor<?x?x1x8xbf16>, %[[V:[a-z0-9]+]]: tensor<?x?x2x16xbf16>, %[[G:[a-z0-9]+]]: tensor<?x?x2xf32>, %[[BETA:[a-z0-9]+]]: tensor<?x?x2xf32>, %[[H0:[a-z0-9]+]]: tensor<?x2x8x16xf32>)
// CHECK-NEXT: %[[O:.+]], %[[S:.+]] = gdn.delta_rule %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]] initial_state(%[[H0]]) {scale = 2.500000e-01 : f32}
// CHECK-NEXT: return %[[O]], %[[S]]
// CHECK-NOT: scf.
// CHECK-NOT: linalg.
func.func @prefill(%q: tensor<?x?x1x8xbf16>, %k: tensor<?x?x1x8xbf16>, %v: tensor<?x?x2x16xbf16>, %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>, %h0: tensor<?x2x8x16xf32>) -> (tensor<?x?x2x16xbf16>, tensor<?x2x8x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0) {scale = 0.25 : f32} : (tensor<?x?x1x8xbf16>, tensor<?x?x1x8xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x2x8x16xf32>) -> (tensor<?x?x2x16xbf16>, tensor<?x2x8x16xf32>)
  return %o, %s : tensor<?x?x2x16xbf16>, tensor<?x2x8x16xf32>
}
