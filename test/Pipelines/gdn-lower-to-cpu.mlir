// RUN: gdn-opt %s --gdn-lower-to-cpu | FileCheck %s
// RUN: gdn-opt %s --pass-pipeline='builtin.module(gdn-lower-to-cpu{delta-rule-form=recurrent})' | FileCheck %s
// RUN: gdn-opt %s --pass-pipeline='builtin.module(gdn-lower-to-cpu{chunk-size=16 matmul-tile-m=4 matmul-tile-n=16 num-threads=2})' | FileCheck %s
// RUN: not gdn-opt %s --pass-pipeline='builtin.module(gdn-lower-to-cpu{delta-rule-form=bogus})' 2>&1 | FileCheck %s --check-prefix=BAD-OPTION

// The pipeline leaves only the LLVM dialect: memref descriptors at the
// function boundary, the token loop as branches, exp as a polynomial, bf16
// conversions expanded to integer arithmetic, and MXCSR set to flush
// denormals on entry and restored on return.

// CHECK-NOT: gdn.
// CHECK-LABEL: llvm.func @prefill
// CHECK: llvm.call_intrinsic "llvm.x86.sse.stmxcsr"
// CHECK: llvm.or %{{.+}}, %{{.+}} : i32
// CHECK: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"
// CHECK-NOT: linalg.
// CHECK-NOT: scf.
// CHECK-NOT: memref.
// CHECK-NOT: tensor.
// CHECK-NOT: math.
// CHECK-NOT: arith.
// CHECK: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @step
// CHECK: llvm.return

// BAD-OPTION: for the --delta-rule-form option: Cannot find option named 'bogus'!

func.func @prefill(%q: tensor<?x?x2x8xbf16>, %k: tensor<?x?x2x8xbf16>, %v: tensor<?x?x4x8xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>) -> (tensor<?x?x4x8xbf16>, tensor<?x4x8x8xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x8xbf16>, tensor<?x4x8x8xf32>)
  return %o, %s : tensor<?x?x4x8xbf16>, tensor<?x4x8x8xf32>
}

func.func @step(%q: tensor<?x2x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %state: tensor<?x4x8x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8x8xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %state : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8x8xf32>)
  return %o, %s : tensor<?x4x8xf32>, tensor<?x4x8x8xf32>
}
