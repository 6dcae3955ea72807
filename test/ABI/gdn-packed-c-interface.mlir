// RUN: gdn-opt %s --gdn-packed-c-interface | FileCheck %s

// A C interface of pointers gets a packed twin that loads each descriptor
// pointer from one array.
// CHECK-LABEL: llvm.func @_mlir_ciface_step(
llvm.func @_mlir_ciface_step(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr) {
  llvm.return
}

// Not a C interface, or not all pointers, or not void: left alone.
llvm.func @step(%a: !llvm.ptr) {
  llvm.return
}
llvm.func @_mlir_ciface_scalar(%a: !llvm.ptr, %n: i64) {
  llvm.return
}
llvm.func @_mlir_ciface_value(%a: !llvm.ptr) -> i64 {
  %0 = llvm.mlir.constant(0 : i64) : i64
  llvm.return %0 : i64
}

// CHECK-LABEL: llvm.func @_gdn_packed_step(
// CHECK-SAME: %[[ARGS:.+]]: !llvm.ptr)
// CHECK: %[[P0:.+]] = llvm.getelementptr %[[ARGS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[A0:.+]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[P1:.+]] = llvm.getelementptr %[[ARGS]][1]
// CHECK: %[[A1:.+]] = llvm.load %[[P1]]
// CHECK: %[[P2:.+]] = llvm.getelementptr %[[ARGS]][2]
// CHECK: %[[A2:.+]] = llvm.load %[[P2]]
// CHECK: llvm.call @_mlir_ciface_step(%[[A0]], %[[A1]], %[[A2]])
// CHECK: llvm.return
// CHECK-NOT: @_gdn_packed_scalar
// CHECK-NOT: @_gdn_packed_value
