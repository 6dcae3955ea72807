// RUN: gdn-compile %s --emit=mlir-llvm -o %t.mlir
// RUN: FileCheck %s --input-file=%t.mlir
// RUN: FileCheck %s --input-file=%t.mlir --check-prefix=LLVM-ONLY
// RUN: gdn-compile %s --emit=mlir-llvm --num-threads=3 -o - \
// RUN:   | FileCheck %s --check-prefix=THREADS

// --emit=mlir-llvm writes the module in the LLVM dialect (with the OpenMP
// dialect for the parallel region over batch x heads), before translation.
// Public functions set FTZ/DAZ on entry and restore MXCSR on return; exp is
// a polynomial in vector form.

// CHECK-LABEL: llvm.func @prefill(
// CHECK: llvm.call_intrinsic "llvm.x86.sse.stmxcsr"
// CHECK: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"
// CHECK: omp.parallel {
// CHECK: omp.wsloop
// CHECK: llvm.intr.fma({{.+}}) : (vector<{{[0-9]+}}xf32>, vector<{{[0-9]+}}xf32>, vector<{{[0-9]+}}xf32>) -> vector<{{[0-9]+}}xf32>
// CHECK: llvm.call_intrinsic "llvm.x86.sse.ldmxcsr"
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @decode(
// CHECK: omp.parallel
// CHECK: llvm.return

// Nothing of the higher-level dialects is left anywhere; the C interface
// wrappers are only made for --emit=shared.
// LLVM-ONLY-NOT: {{ (func|scf|cf|linalg|tensor|memref|bufferization|arith|math|vector|affine|gdn)\.[a-z_]+}}
// LLVM-ONLY-NOT: _mlir_ciface

// THREADS-LABEL: llvm.func @prefill(
// THREADS: %[[N:.+]] = llvm.mlir.constant(3 : i32) : i32
// THREADS: omp.parallel num_threads(%[[N]] : i32) {

func.func @prefill(%q: tensor<?x?x1x8xf32>, %k: tensor<?x?x1x8xf32>, %v: tensor<?x?x2x16xf32>, %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>)
  return %o, %s : tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>
}

func.func @decode(%q: tensor<?x1x8xf32>, %k: tensor<?x1x8xf32>, %v: tensor<?x2x16xf32>, %g: tensor<?x2xf32>, %beta: tensor<?x2xf32>, %state: tensor<?x2x8x16xf32>) -> (tensor<?x2x16xf32>, tensor<?x2x8x16xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %state : (tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<?x2x16xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2x8x16xf32>) -> (tensor<?x2x16xf32>, tensor<?x2x8x16xf32>)
  return %o, %s : tensor<?x2x16xf32>, tensor<?x2x8x16xf32>
}
