// RUN: gdn-opt %s --pass-pipeline='builtin.module(func.func(gdn-managed-host-buffers))' | FileCheck %s

// Host buffers of a CUDA executable become managed memory: allocations
// directly (with their dynamic sizes), their deallocations with them, and
// a constant as one managed copy per call that every use reads, made at
// the start of the function (also for a use in a loop) and freed before
// each return.

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
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK-NEXT: %[[T1:.*]] = gpu.dealloc async [%[[T0]]] %[[DYN]] : memref<?x8xbf16>
// CHECK-NEXT: gpu.wait [%[[T1]]]
// CHECK-NEXT: %[[T2:.*]] = gpu.wait async
// CHECK-NEXT: %[[T3:.*]] = gpu.dealloc async [%[[T2]]] %[[COPY]] : memref<2x3xf32>
// CHECK-NEXT: gpu.wait [%[[T3]]]
// CHECK-NEXT: return
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

// CHECK-LABEL: func.func @loop
// CHECK: %[[GLOBAL:.*]] = memref.get_global @weights : memref<2x3xf32>
// CHECK-NEXT: %[[COPY:.*]] = gpu.alloc  host_shared () : memref<2x3xf32>
// CHECK-NEXT: memref.copy %[[GLOBAL]], %[[COPY]]
// CHECK: scf.for
// CHECK-NEXT: call @consume(%[[COPY]], %[[COPY]])
// CHECK: gpu.dealloc async [%{{.*}}] %[[COPY]] : memref<2x3xf32>
// CHECK-NEXT: gpu.wait
// CHECK-NEXT: return
func.func @loop(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %w = memref.get_global @weights : memref<2x3xf32>
    func.call @consume(%w, %w) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
  }
  return
}
