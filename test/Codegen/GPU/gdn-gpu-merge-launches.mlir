// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-merge-launches))' | FileCheck %s

// Two projections of one input, each into its own temporary: one launch
// of both grids end to end, at the second one's place. The first grid's
// blocks run the first body, the rest the second with their index moved
// back.

// CHECK-LABEL: func.func @independent
// CHECK-SAME: (%[[X:.*]]: memref<?xf32>, %[[WQ:.*]]: memref<?xf32>, %[[WK:.*]]: memref<?xf32>, %[[N:.*]]: index, %[[M:.*]]: index)
// CHECK: %[[Q:.*]] = memref.alloc
// CHECK: %[[K:.*]] = memref.alloc
// CHECK: %[[ALL:.*]] = arith.addi %[[N]], %[[M]] : index
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[ALL]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c128
// CHECK: %[[FIRST:.*]] = arith.cmpi ult, %[[B]], %[[N]] : index
// CHECK: scf.if %[[FIRST]] {
// CHECK: memref.load %[[WQ]][%[[B]]]
// CHECK: memref.store %{{.*}}, %[[Q]][%[[B]]]
// CHECK: } else {
// CHECK: %[[REST:.*]] = arith.subi %[[B]], %[[N]] : index
// CHECK: memref.load %[[WK]][%[[REST]]]
// CHECK: memref.store %{{.*}}, %[[K]][%[[REST]]]
// CHECK: }
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @independent(%x: memref<?xf32>, %wq: memref<?xf32>,
                       %wk: memref<?xf32>, %n: index, %m: index) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %q = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %w = memref.load %wq[%bx] : memref<?xf32>
    %v = memref.load %x[%tx] : memref<?xf32>
    %p = arith.mulf %w, %v : f32
    memref.store %p, %q[%bx] : memref<?xf32>
    gpu.terminator
  }
  %k = memref.alloc(%m) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %m, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %w = memref.load %wk[%bx] : memref<?xf32>
    %v = memref.load %x[%tx] : memref<?xf32>
    %p = arith.mulf %w, %v : f32
    memref.store %p, %k[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}

// -----

// A kernel that reads what the one before it writes stays after it; so
// does one with another block size, and one that writes the same buffer.

// CHECK-LABEL: func.func @dependent
// CHECK-COUNT-4: gpu.launch blocks
// CHECK-NOT: scf.if
func.func @dependent(%x: memref<?xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %a = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%bx] : memref<?xf32>
    memref.store %v, %a[%bx] : memref<?xf32>
    gpu.terminator
  }
  %b = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %v = memref.load %a[%bx] : memref<?xf32>
    memref.store %v, %b[%bx] : memref<?xf32>
    gpu.terminator
  }
  %c = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%bx] : memref<?xf32>
    memref.store %v, %c[%bx] : memref<?xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%bx] : memref<?xf32>
    memref.store %v, %c[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}

// -----

// The first kernel cannot move past the second, which reads its output;
// the third, independent of the second, joins it. The 2-D grid of the
// third is rebuilt from the linear block index.

// CHECK-LABEL: func.func @moves_down
// CHECK-SAME: (%[[X:.*]]: memref<?x?xf32>, %[[N:.*]]: index, %[[R:.*]]: index, %[[C:.*]]: index)
// CHECK: gpu.launch blocks
// CHECK: gpu.terminator
// CHECK: %[[RC:.*]] = arith.muli %[[R]], %[[C]] : index
// CHECK: %[[ALL:.*]] = arith.addi %[[N]], %[[RC]] : index
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[ALL]],
// CHECK: scf.if
// CHECK: } else {
// CHECK: %[[REST:.*]] = arith.subi %[[B]], %[[N]]
// CHECK: %[[COL:.*]] = arith.remui %[[REST]], %[[R]]
// CHECK: %[[ROW:.*]] = arith.divui %[[REST]], %[[R]]
// CHECK: %{{.*}} = arith.remui %[[ROW]], %[[C]]
// CHECK: %{{.*}} = arith.divui %[[ROW]], %[[C]]
// CHECK-NOT: gpu.launch
func.func @moves_down(%x: memref<?x?xf32>, %n: index, %r: index,
                      %c: index) {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %a = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%bx, %c0] : memref<?x?xf32>
    memref.store %v, %a[%bx] : memref<?xf32>
    gpu.terminator
  }
  %b = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %v = memref.load %a[%bx] : memref<?xf32>
    memref.store %v, %b[%bx] : memref<?xf32>
    gpu.terminator
  }
  %d = memref.alloc(%r, %c) : memref<?x?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %r, %gy = %c, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%bx, %by] : memref<?x?xf32>
    memref.store %v, %d[%bx, %by] : memref<?x?xf32>
    gpu.terminator
  }
  return
}

// -----

// Two arguments written by two kernels may be one buffer, unless the
// function lists them as caches updated in place (which the C ABI says
// overlap no other argument).

// CHECK-LABEL: func.func @arguments_may_alias
// CHECK-COUNT-2: gpu.launch blocks
// CHECK-LABEL: func.func @in_place_caches
// CHECK-COUNT-1: gpu.launch blocks
// CHECK-NOT: gpu.launch blocks
func.func @arguments_may_alias(%x: memref<?xf32>, %y: memref<?xf32>,
                               %n: index) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %f = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    memref.store %f, %x[%bx] : memref<?xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    memref.store %f, %y[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}

func.func @in_place_caches(%x: memref<?xf32>, %y: memref<?xf32>, %n: index)
    attributes {gdn.in_place_arguments = array<i64: 0, 1>} {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %f = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    memref.store %f, %x[%bx] : memref<?xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    memref.store %f, %y[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}

// -----

// Refused: a kernel with workgroup memory (the two kernels' shared memory
// would add up), one that reads its block index from gpu.block_id (the
// fourth kernel reads the second's output), and merging across a call,
// whose effects are not known.

// CHECK-LABEL: func.func @refused
// CHECK-COUNT-5: gpu.launch blocks
// CHECK-NOT: scf.if
func.func private @opaque()
func.func @refused(%x: memref<?xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %a = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<128xf32, #gpu.address_space<workgroup>>) {
    %v = memref.load %x[%tx] : memref<?xf32>
    memref.store %v, %tile[%tx] : memref<128xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %w = memref.load %tile[%c0] : memref<128xf32, #gpu.address_space<workgroup>>
    memref.store %w, %a[%bx] : memref<?xf32>
    gpu.terminator
  }
  %b = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%bx] : memref<?xf32>
    memref.store %v, %b[%bx] : memref<?xf32>
    gpu.terminator
  }
  %c = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %id = gpu.block_id x
    %v = memref.load %x[%id] : memref<?xf32>
    memref.store %v, %c[%id] : memref<?xf32>
    gpu.terminator
  }
  %d = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %v = memref.load %b[%bx] : memref<?xf32>
    memref.store %v, %d[%bx] : memref<?xf32>
    gpu.terminator
  }
  func.call @opaque() : () -> ()
  %e = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%bx] : memref<?xf32>
    memref.store %v, %e[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}

// -----

// A kernel that calls a function may touch buffers it is not given.

// CHECK-LABEL: func.func @call_in_kernel
// CHECK-COUNT-2: gpu.launch blocks
// CHECK-NOT: scf.if
func.func private @device_helper()
func.func @call_in_kernel(%x: memref<?xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %a = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%bx] : memref<?xf32>
    memref.store %v, %a[%bx] : memref<?xf32>
    gpu.terminator
  }
  %b = memref.alloc(%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    func.call @device_helper() : () -> ()
    %v = memref.load %x[%bx] : memref<?xf32>
    memref.store %v, %b[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}

// -----

// A buffer chosen at run time (a select of an allocation and an argument)
// may be either: the kernel that reads it stays after the one that writes
// the allocation.

// CHECK-LABEL: func.func @selected_buffer
// CHECK-COUNT-2: gpu.launch blocks
// CHECK-NOT: scf.if
func.func @selected_buffer(%x: memref<?xf32>, %n: index, %which: i1) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %f = arith.constant 1.0 : f32
  %a = memref.alloc(%n) : memref<?xf32>
  %b = memref.alloc(%n) : memref<?xf32>
  %s = arith.select %which, %a, %x : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    memref.store %f, %a[%bx] : memref<?xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %v = memref.load %s[%bx] : memref<?xf32>
    memref.store %v, %b[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}
