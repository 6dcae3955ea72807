// Layer ops lower for CUDA too: decomposed like on the CPU, the delta rule
// through convert-gdn-to-gpu and the rest (here the norm's reduction, its
// fill folded into the register that sums, and the scaling) as kernels
// made from linalg's loops; the host code only allocates device memory
// and launches.
// RUN: gdn-opt %s --gdn-lower-to-cuda=binary-format=isa | FileCheck %s
// CHECK-LABEL: llvm.func @norm(
// CHECK: llvm.call @mgpuMemAlloc
// CHECK-COUNT-2: gpu.launch_func <%{{.*}} : !llvm.ptr> @norm_kernel{{.*}}::@norm_kernel
// CHECK-NOT: gpu.launch_func
// CHECK: llvm.call @mgpuMemFree
// CHECK: gpu.binary @norm_kernel

func.func @norm(%x: tensor<?x?x16xf32>, %w: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %n = gdn.rms_norm %x, %w {eps = 1.0e-5 : f32} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %n : tensor<?x?x16xf32>
}
