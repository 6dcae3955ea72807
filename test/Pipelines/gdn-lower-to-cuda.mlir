// RUN: gdn-opt %s --pass-pipeline='builtin.module(gdn-lower-to-cuda{binary-format=isa})' | FileCheck %s

// The CUDA pipeline ends in host code in the LLVM dialect and a gpu.binary
// holding the kernel as sm_90a PTX (binary-format=isa needs no ptxas). The
// results are out-parameters: no host allocation remains for them.

// CHECK-LABEL: llvm.func @prefill(
// Six inputs and two out-parameters, as memref descriptors.
// CHECK-SAME: %arg83: i64)
// CHECK-NOT: llvm.call @malloc
// CHECK: gpu.launch_func <%{{.*}} : !llvm.ptr> @gdn_scan_wy::@gdn_scan_wy
// CHECK-NOT: llvm.call @malloc
// CHECK: llvm.return
// CHECK: gpu.binary @gdn_scan_wy [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">
// bf16 q and k are staged by cp.async while the gates are summed.
// CHECK-SAME: .target sm_90a
// CHECK-SAME: cp.async.cg.shared.global
// CHECK-SAME: bar.sync
// CHECK-SAME: cp.async.wait_group
// CHECK-SAME: ex2.approx
// CHECK-SAME: cvt.rn.bf16
// CHECK-NOT: __nv_
// CHECK-SAME: fma.rn.f32

func.func @prefill(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x64xbf16>, %g: tensor<?x?x4xf32>, %b: tensor<?x?x4xf32>, %h: tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b initial_state(%h) : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>)
  return %o, %s : tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>
}
