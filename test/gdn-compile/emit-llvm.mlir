// RUN: gdn-compile %s --emit=llvm -o %t.ll
// RUN: FileCheck %s --input-file=%t.ll

// --emit=llvm writes optimized LLVM IR for the host: the target is set, the
// function keeps its memref-descriptor signature (no C interface wrapper
// outside --emit=shared), the OpenMP region is outlined and forked through
// libomp, and the MXCSR bracket is there.

// CHECK: target datalayout = "{{.+}}"
// CHECK: target triple = "{{.+}}"
// CHECK-NOT: _mlir_ciface
// CHECK: define {{.+}} @prefill(ptr
// CHECK: call void @llvm.x86.sse.stmxcsr(
// CHECK: call void @llvm.x86.sse.ldmxcsr(
// CHECK: call void {{.*}}@__kmpc_fork_call(
// CHECK: call void @llvm.x86.sse.ldmxcsr(
// CHECK: define internal void @prefill..omp_par(
// CHECK-NOT: _mlir_ciface

func.func @prefill(%q: tensor<?x?x1x8xf32>, %k: tensor<?x?x1x8xf32>, %v: tensor<?x?x2x16xf32>, %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>)
  return %o, %s : tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>
}
