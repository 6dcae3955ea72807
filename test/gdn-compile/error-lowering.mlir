// RUN: rm -f %t.so
// RUN: not gdn-compile %s --target=cuda --emit=shared -o %t.so 2>&1 | FileCheck %s
// RUN: not test -e %t.so
// RUN: not test -e %t.so.partial
// For the CPU, whose library functions take host buffers, the module
// compiles.
// RUN: gdn-compile %s --emit=shared -o %t.cpu.so

// A failure late in the pipeline is reported at its op, then as a failed
// stage; no output is left. Here a CUDA library's function reads a constant
// in host code, where every buffer is device memory.

// CHECK: {{.*}}error-lowering.mlir:[[@LINE+4]]:12: error: 'memref.get_global' op accesses a buffer in host code, where every buffer is device memory: everything must run in kernels (a CUDA library's functions take device buffers; host code with constants or prints, such as a @main, belongs in --emit=exe, where buffers are managed memory)
// CHECK: error: lowering failed in stage 'gpu-to-llvm'

func.func @prefill_from(%q: tensor<1x?x1x8xf32>, %k: tensor<1x?x1x8xf32>, %v: tensor<1x?x2x16xf32>, %g: tensor<1x?x2xf32>, %beta: tensor<1x?x2xf32>) -> (tensor<1x?x2x16xf32>, tensor<1x2x8x16xf32>) {
  %state = arith.constant dense<0.5> : tensor<1x2x8x16xf32>
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%state) : (tensor<1x?x1x8xf32>, tensor<1x?x1x8xf32>, tensor<1x?x2x16xf32>, tensor<1x?x2xf32>, tensor<1x?x2xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x?x2x16xf32>, tensor<1x2x8x16xf32>)
  return %o, %s : tensor<1x?x2x16xf32>, tensor<1x2x8x16xf32>
}
