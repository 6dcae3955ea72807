// RUN: gdn-opt %s -split-input-file -gdn-read-only-arguments | FileCheck %s

// Every tensor argument of a public function with a body is marked
// read-only for one-shot bufferization, whatever its shape or element type,
// and even where it was declared writable; other arguments are left alone.

// CHECK-LABEL: func.func @public
// CHECK-SAME: (%{{.+}}: tensor<4xf32> {bufferization.writable = false},
// CHECK-SAME: %{{[a-z0-9]+}}: memref<4xf32>,
// CHECK-SAME: %{{[a-z0-9]+}}: f32,
// CHECK-SAME: %{{.+}}: tensor<?x8xbf16> {bufferization.writable = false},
// CHECK-SAME: %{{.+}}: tensor<*xf32> {bufferization.writable = false})
func.func @public(%a: tensor<4xf32>, %b: memref<4xf32>, %c: f32, %d: tensor<?x8xbf16> {bufferization.writable = true}, %e: tensor<*xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

// -----

// A cache the function appends to in place (a model step's MLA caches) is
// the one writable argument; its argument marker is dropped once read, so
// that it does not reach the LLVM translation, and the function lists it
// for gdn-results-to-out-params (bufferization drops argument attributes).

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%{{.+}}: tensor<?x?x8xf32> {bufferization.writable = false},
// CHECK-SAME: %{{.+}}: tensor<?x?x8xf32> {bufferization.writable = true})
// CHECK-SAME: attributes {gdn.in_place_arguments = array<i64: 1>}
// CHECK-NOT: gdn.in_place}
func.func @step(%a: tensor<?x?x8xf32>, %cache: tensor<?x?x8xf32> {gdn.in_place}) -> tensor<?x?x8xf32> {
  return %a : tensor<?x?x8xf32>
}

// -----

// Private functions are called from inside the module only; declarations
// have no body. Both are left alone.

// CHECK-LABEL: func.func private @private
// CHECK-NOT: bufferization.writable
// CHECK-LABEL: func.func private @declaration
// CHECK-NOT: bufferization.writable
func.func private @private(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
func.func private @declaration(%a: tensor<4xf32>) -> tensor<4xf32>
