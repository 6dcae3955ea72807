// RUN: gdn-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(gdn-gpu-device-buffers))' | FileCheck %s

// Temporaries become device allocations, each freed after the last op
// that uses it or a view of it (here a launch that reads the collapsed
// view); an unused one disappears. gpu-async-region orders them on the
// function's stream later.
module attributes {gpu.container_module} {
gpu.module @kernels {
  gpu.func @consume(%a: memref<?xf32>) kernel { gpu.return }
}
// CHECK-LABEL: func.func @temporaries
// CHECK-SAME: (%[[N:.*]]: index)
// CHECK: %[[BUF:.*]] = gpu.alloc  (%[[N]]) : memref<?x4xf32>
// CHECK-NOT: gpu.alloc
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[BUF]]
// CHECK: gpu.launch_func @kernels::@consume {{.*}} args(%[[FLAT]] : memref<?xf32>)
// CHECK-NEXT: gpu.dealloc %[[BUF]] : memref<?x4xf32>
// CHECK-NEXT: return
func.func @temporaries(%n: index) {
  %c1 = arith.constant 1 : index
  %unused = memref.alloc() : memref<8xf32>
  %buffer = memref.alloc(%n) : memref<?x4xf32>
  %flat = memref.collapse_shape %buffer [[0, 1]] : memref<?x4xf32> into memref<?xf32>
  gpu.launch_func @kernels::@consume blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%flat : memref<?xf32>)
  return
}
}

// -----

// A buffer the function returns is the caller's to free.
// CHECK-LABEL: func.func @returned
// CHECK: gpu.alloc
// CHECK-NOT: gpu.dealloc
func.func @returned() -> memref<4xf32> {
  %buffer = memref.alloc() : memref<4xf32>
  return %buffer : memref<4xf32>
}

// -----

// Host code must not touch elements: every buffer is device memory.
func.func @host_read(%a: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'memref.load' op accesses a buffer in host code, where every buffer is device memory: everything must run in kernels}}
  %x = memref.load %a[%c0] : memref<4xf32>
  return %x : f32
}

// -----

memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
func.func @host_constant() -> memref<2xf32> {
  // expected-error @below {{'memref.get_global' op accesses a buffer in host code}}
  %t = memref.get_global @table : memref<2xf32>
  return %t : memref<2xf32>
}
