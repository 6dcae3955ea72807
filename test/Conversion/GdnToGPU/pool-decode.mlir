// RUN: gdn-opt %s -convert-gdn-to-gpu | FileCheck %s

// A decode step from a pool of states: each block reads its entry's slot
// (state_indices[b]), loads the state from that row of the pool only when
// the slot names one ([0, S)), and stores the new state into the write slot
// of the pool buffer itself, which is the op's result.

// CHECK-LABEL: func.func @pool_step
// CHECK-SAME: %[[POOL:[a-z0-9]+]]: tensor<?x4x16x8xf32>, %[[READ:[a-z0-9]+]]: tensor<?xi32>, %[[WRITE:[a-z0-9]+]]: tensor<?xi32>
// CHECK: %[[POOLM:.+]] = bufferization.to_buffer %[[POOL]] : tensor<?x4x16x8xf32> to memref<?x4x16x8xf32>
// CHECK: %[[READM:.+]] = bufferization.to_buffer %[[READ]] read_only
// CHECK: %[[WRITEM:.+]] = bufferization.to_buffer %[[WRITE]] read_only
// CHECK: %[[SLOTS:.+]] = memref.dim %[[POOLM]], %{{.+}} : memref<?x4x16x8xf32>
// CHECK: gpu.launch
// CHECK: %[[R:.+]] = memref.load %[[READM]][%{{.+}}] : memref<?xi32>
// CHECK: %[[SLOT:.+]] = arith.index_cast %[[R]] : i32 to index
// CHECK: arith.cmpi slt, %[[SLOT]], %[[SLOTS]]
// CHECK: scf.if
// CHECK: memref.load %[[POOLM]][%[[SLOT]],
// CHECK: %[[W:.+]] = memref.load %[[WRITEM]]
// CHECK: %[[WSLOT:.+]] = arith.index_cast %[[W]]
// CHECK: memref.store %{{.+}}, %[[POOLM]][%[[WSLOT]],
// CHECK: bufferization.to_tensor %[[POOLM]]
func.func @pool_step(%q: tensor<?x2x16xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4xf32>, %pool: tensor<?x4x16x8xf32>, %read: tensor<?xi32>, %write: tensor<?xi32>) -> (tensor<?x4x8xf32>, tensor<?x4x16x8xf32>) {
  %o, %s = gdn.delta_rule_step %q, %q, %v, %g, %g, %pool state_indices(%read) write_indices(%write) : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x16x8xf32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x4x8xf32>, tensor<?x4x16x8xf32>)
  return %o, %s : tensor<?x4x8xf32>, tensor<?x4x16x8xf32>
}
