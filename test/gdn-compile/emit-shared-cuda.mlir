// REQUIRES: cuda-toolkit
// RUN: rm -f %t.so
// RUN: gdn-compile %s --target=cuda --emit=shared -o %t.so
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s --check-prefix=SYMBOLS
// RUN: llvm-readelf -d %t.so | FileCheck %s --check-prefix=NEEDED
// RUN: gdn-compile %s --target=cuda --emit=mlir-llvm -o - | FileCheck %s --check-prefix=FATBIN

// A CUDA shared library exports the C interface and gdn.cuda's stream and
// timing controls; the mgpu* runtime that its host code calls is linked in
// hidden (docs/c-abi.md). It needs only the driver's libcuda.so.1 beyond
// the C/C++ runtime (no LLVM, no OpenMP).

// SYMBOLS-DAG: T _mlir_ciface_step
// SYMBOLS-DAG: T gdnCudaTakeKernelMicroseconds
// SYMBOLS-DAG: T gdnCudaUseStream
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s --check-prefix=HIDDEN
// HIDDEN-NOT: mgpu
// HIDDEN-NOT: printMemref
// NEEDED: (NEEDED) Shared library: [libcuda.so.1]
// NEEDED-NOT: libomp
// NEEDED-NOT: libmlir
// FATBIN: gpu.binary @step_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">
// FATBIN-SAME: , "P\EDU\BA

func.func @step(%q: tensor<?x2x128xbf16>, %k: tensor<?x2x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %state: tensor<?x4x128x128xf32>) -> (tensor<?x4x128xbf16>, tensor<?x4x128x128xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %state : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x128x128xf32>) -> (tensor<?x4x128xbf16>, tensor<?x4x128x128xf32>)
  return %o, %s : tensor<?x4x128xbf16>, tensor<?x4x128x128xf32>
}
