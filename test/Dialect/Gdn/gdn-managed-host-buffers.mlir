// RUN: gdn-opt %s --pass-pipeline='builtin.module(func.func(gdn-managed-host-buffers))' | FileCheck %s

// Host buffers of a CUDA executable become managed memory: allocations
// directly (with their dynamic sizes), their deallocations with them, and
// a constant as one managed copy that every use reads.

memref.global "private" constant @weights : memref<2x3xf32> = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]>

func.func private @consume(memref<2x3xf32>, memref<2x3xf32>)
func.func private @consumeDynamic(memref<?x8xbf16>)

// CHECK-LABEL: func.func @host
// CHECK-SAME: (%[[N:.*]]: index)
// CHECK: %[[GLOBAL:.*]] = memref.get_global @weights : memref<2x3xf32>
// CHECK-NEXT: %[[COPY:.*]] = gpu.alloc  host_shared () : memref<2x3xf32>
// CHECK-NEXT: memref.copy %[[GLOBAL]], %[[COPY]]
// CHECK: %[[OUT:.*]] = gpu.alloc  host_shared () : memref<2x3xf32>
// CHECK: %[[DYN:.*]] = gpu.alloc  host_shared (%[[N]]) : memref<?x8xbf16>
// CHECK: call @consume(%[[COPY]], %[[OUT]])
// CHECK: call @consume(%[[COPY]], %[[COPY]])
// CHECK: call @consumeDynamic(%[[DYN]])
// CHECK: gpu.dealloc  %[[DYN]] : memref<?x8xbf16>
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
func.func @host(%n: index) {
  %w = memref.get_global @weights : memref<2x3xf32>
  %out = memref.alloc() {alignment = 64 : i64} : memref<2x3xf32>
  %dyn = memref.alloc(%n) : memref<?x8xbf16>
  call @consume(%w, %out) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
  call @consume(%w, %w) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
  call @consumeDynamic(%dyn) : (memref<?x8xbf16>) -> ()
  memref.dealloc %dyn : memref<?x8xbf16>
  return
}
