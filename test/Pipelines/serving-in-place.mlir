// RUN: gdn-opt %s --pass-pipeline='builtin.module(gdn-lower-to-cpu{results-as-out-params=true c-interfaces=true})' | FileCheck %s

// A pool of states marked gdn.in_place is updated in the caller's buffer:
// its result takes no out-parameter (eight operands and o: nine descriptor
// pointers).

// CHECK-LABEL: llvm.func @_mlir_ciface_decode(
// CHECK-SAME: %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr)
// CHECK-NEXT: llvm.load
func.func @decode(%q: tensor<?x2x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %pool: tensor<?x4x16x8xf32> {gdn.in_place}, %read: tensor<?xi32>, %write: tensor<?xi32>) -> (tensor<?x4x8xf32>, tensor<?x4x16x8xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %pool state_indices(%read) write_indices(%write) : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x16x8xf32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x4x8xf32>, tensor<?x4x16x8xf32>)
  return %o, %s : tensor<?x4x8xf32>, tensor<?x4x16x8xf32>
}

// A read-only argument returned as it is still gets its out-parameter (a
// copy): only what the function updated in place is the caller's already.

// CHECK-LABEL: llvm.func @_mlir_ciface_identity(
// CHECK-SAME: %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr)
func.func @identity(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
