// RUN: gdn-opt %s -split-input-file -gdn-flush-denormals | FileCheck %s

// On entry to a public function MXCSR is saved to a stack slot and reloaded
// with FTZ (bit 15) and DAZ (bit 6) set: 0x8040 = 32832. Before every return
// the saved value is stored back and reloaded.

// CHECK-LABEL: func.func @two_returns
// CHECK-SAME: (%[[C:[a-z0-9]+]]: i1, %[[X:[a-z0-9]+]]: f32)
// CHECK-NEXT: %[[ONE:.+]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[SLOT:.+]] = llvm.alloca %[[ONE]] x i32 {alignment = 4 : i64} : (i32) -> !llvm.ptr
// CHECK-NEXT: llvm.call_intrinsic "llvm.x86.sse.stmxcsr"(%[[SLOT]]) : (!llvm.ptr) -> ()
// CHECK-NEXT: %[[SAVED:.+]] = llvm.load %[[SLOT]] : !llvm.ptr -> i32
// CHECK-NEXT: %[[BITS:.+]] = llvm.mlir.constant(32832 : i32) : i32
// CHECK-NEXT: %[[FLUSHING:.+]] = llvm.or %[[SAVED]], %[[BITS]] : i32
// CHECK-NEXT: llvm.store %[[FLUSHING]], %[[SLOT]] : i32, !llvm.ptr
// CHECK-NEXT: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"(%[[SLOT]]) : (!llvm.ptr) -> ()
// CHECK-NEXT: cf.cond_br %[[C]], ^[[BB1:.+]], ^[[BB2:.+]]
// CHECK: ^[[BB1]]:
// CHECK-NEXT: llvm.store %[[SAVED]], %[[SLOT]] : i32, !llvm.ptr
// CHECK-NEXT: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"(%[[SLOT]]) : (!llvm.ptr) -> ()
// CHECK-NEXT: return %[[X]] : f32
// CHECK: ^[[BB2]]:
// CHECK-NEXT: %[[Y:.+]] = arith.addf %[[X]], %[[X]] : f32
// CHECK-NEXT: llvm.store %[[SAVED]], %[[SLOT]] : i32, !llvm.ptr
// CHECK-NEXT: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"(%[[SLOT]]) : (!llvm.ptr) -> ()
// CHECK-NEXT: return %[[Y]] : f32
func.func @two_returns(%c: i1, %x: f32) -> f32 {
  cf.cond_br %c, ^a, ^b
^a:
  return %x : f32
^b:
  %y = arith.addf %x, %x : f32
  return %y : f32
}

// -----

// Terminators of nested regions are not function returns.

// CHECK-LABEL: func.func @nested_region
// CHECK: llvm.x86.sse.stmxcsr
// CHECK: %[[R:.+]] = scf.if
// CHECK-NOT: llvm.x86.sse
// CHECK: llvm.store
// CHECK-NEXT: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"
// CHECK-NEXT: return %[[R]] : f32
func.func @nested_region(%c: i1, %x: f32) -> f32 {
  %r = scf.if %c -> f32 {
    scf.yield %x : f32
  } else {
    %y = arith.addf %x, %x : f32
    scf.yield %y : f32
  }
  return %r : f32
}

// -----

// Private functions run under their public caller's setting; declarations
// have no body.

// CHECK-LABEL: func.func private @private
// CHECK-NOT: llvm.
// CHECK: return
// CHECK-LABEL: func.func private @declaration
// CHECK-NOT: llvm.
func.func private @private(%x: f32) -> f32 {
  return %x : f32
}
func.func private @declaration(f32) -> f32
