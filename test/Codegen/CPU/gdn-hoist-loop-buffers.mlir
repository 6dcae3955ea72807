// RUN: gdn-opt %s -split-input-file -gdn-hoist-loop-buffers | FileCheck %s

func.func private @use(memref<16xf32>)

// A statically shaped buffer allocated and freed in one iteration is
// allocated once before the loop and freed after it.

// CHECK-LABEL: func.func @scratch
// CHECK: %[[BUF:.+]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: scf.for
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
// CHECK: func.call @use(%[[BUF]])
// CHECK-NOT: memref.dealloc
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[BUF]] : memref<16xf32>
// CHECK-NEXT: return
func.func @scratch(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %a = memref.alloc() : memref<16xf32>
    func.call @use(%a) : (memref<16xf32>) -> ()
    memref.dealloc %a : memref<16xf32>
  }
  return
}

// -----

func.func private @use(memref<16xf32>)

// Repeated until nothing moves: out of both loops of a nest, attributes
// kept.

// CHECK-LABEL: func.func @nest
// CHECK: %[[BUF:.+]] = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
// CHECK-NEXT: scf.for
// CHECK-NEXT: scf.for
// CHECK-NEXT: func.call @use(%[[BUF]])
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc %[[BUF]]
func.func @nest(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
      func.call @use(%a) : (memref<16xf32>) -> ()
      memref.dealloc %a : memref<16xf32>
    }
  }
  return
}

// -----

func.func private @use(memref<16xf32>)

// A yielded buffer outlives its iteration: it stays.

// CHECK-LABEL: func.func @yielded
// CHECK: scf.for
// CHECK-NEXT: %[[BUF:.+]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: func.call @use(%[[BUF]])
// CHECK-NEXT: scf.yield %[[BUF]]
func.func @yielded(%n: index, %init: memref<16xf32>) -> memref<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> memref<16xf32> {
    %a = memref.alloc() : memref<16xf32>
    func.call @use(%a) : (memref<16xf32>) -> ()
    scf.yield %a : memref<16xf32>
  }
  return %r : memref<16xf32>
}

// -----

func.func private @use(memref<16xf32>)

// Without a dealloc in the loop body the buffer is not known to be
// iteration-local: it stays, and no dealloc is invented.

// CHECK-LABEL: func.func @no_dealloc
// CHECK: scf.for
// CHECK-NEXT: %[[BUF:.+]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: func.call @use(%[[BUF]])
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @no_dealloc(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %a = memref.alloc() : memref<16xf32>
    func.call @use(%a) : (memref<16xf32>) -> ()
  }
  return
}

// -----

// A dealloc in a nested block (here, conditional) is not in the same block:
// the buffer stays.

// CHECK-LABEL: func.func @conditional_dealloc
// CHECK: scf.for
// CHECK-NEXT: %[[BUF:.+]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: scf.if
// CHECK-NEXT: memref.dealloc %[[BUF]]
func.func @conditional_dealloc(%n: index, %c: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %a = memref.alloc() : memref<16xf32>
    scf.if %c {
      memref.dealloc %a : memref<16xf32>
    }
  }
  return
}

// -----

func.func private @use_dynamic(memref<?xf32>)

// Dynamically shaped buffers (here, sized by the induction variable) stay.

// CHECK-LABEL: func.func @dynamic
// CHECK: scf.for %[[I:.+]] = 
// CHECK-NEXT: %[[BUF:.+]] = memref.alloc(%[[I]]) : memref<?xf32>
// CHECK-NEXT: func.call @use_dynamic(%[[BUF]])
// CHECK-NEXT: memref.dealloc %[[BUF]]
func.func @dynamic(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %a = memref.alloc(%i) : memref<?xf32>
    func.call @use_dynamic(%a) : (memref<?xf32>) -> ()
    memref.dealloc %a : memref<?xf32>
  }
  return
}

// -----

func.func private @use(memref<16xf32>)

// Every parallel task keeps scratch of its own: a buffer of an scf.forall
// body stays there, and one of a sequential loop inside the task moves out
// of that loop only, not out of the forall.

// CHECK-LABEL: func.func @forall
// CHECK-NOT: memref.alloc
// CHECK: scf.forall
// CHECK-NEXT: %[[TASK:.+]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: func.call @use(%[[TASK]])
// CHECK-NEXT: memref.dealloc %[[TASK]]
// CHECK-NEXT: %[[CHUNK:.+]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: scf.for
// CHECK-NEXT: func.call @use(%[[CHUNK]])
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc %[[CHUNK]]
// CHECK-NEXT: }
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @forall(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.forall (%t) in (4) {
    %a = memref.alloc() : memref<16xf32>
    func.call @use(%a) : (memref<16xf32>) -> ()
    memref.dealloc %a : memref<16xf32>
    scf.for %i = %c0 to %n step %c1 {
      %b = memref.alloc() : memref<16xf32>
      func.call @use(%b) : (memref<16xf32>) -> ()
      memref.dealloc %b : memref<16xf32>
    }
  }
  return
}

// -----

func.func private @use(memref<16xf32>)

// The same for scf.parallel.

// CHECK-LABEL: func.func @parallel
// CHECK-NOT: memref.alloc
// CHECK: scf.parallel
// CHECK-NEXT: %[[TASK:.+]] = memref.alloc() : memref<16xf32>
// CHECK-NEXT: func.call @use(%[[TASK]])
// CHECK-NEXT: memref.dealloc %[[TASK]]
// CHECK-NEXT: scf.reduce
func.func @parallel(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%t) = (%c0) to (%n) step (%c1) {
    %a = memref.alloc() : memref<16xf32>
    func.call @use(%a) : (memref<16xf32>) -> ()
    memref.dealloc %a : memref<16xf32>
    scf.reduce
  }
  return
}
