// REQUIRES: cuda-toolkit
// RUN: gdn-compile %s --target=cuda --emit=exe -o %t.exe
// RUN: llvm-readelf -d %t.exe | FileCheck %s --check-prefix=NEEDED
// RUN: %if cuda-gpu %{ %t.exe | FileCheck %s %}

// --target=cuda --emit=exe: the example of emit-exe.mlir on the GPU, once
// in f32 (the column recurrence) and once in bf16 with K = V = 16, zero
// past the first two entries (the chunked scan on tensor cores, T = 2 of a
// 64-token chunk). The executable needs only the driver's libcuda.so.1 and
// prints with the project's printMemref*; its host tensors are managed
// memory that the kernels reach. It runs where a GPU is (lit feature
// cuda-gpu) and is only built elsewhere.

// NEEDED: (NEEDED) Shared library: [libcuda.so.1]
// NEEDED-NOT: libmlir
// NEEDED-NOT: libLLVM

// CHECK: rank = 4 offset = 0 sizes = [1, 2, 1, 2]
// CHECK-NEXT: {{\[\[\[\[}}0.5, 1]],
// CHECK-NEXT: {{\[\[}}3.25, 4.5]]]]
// CHECK: rank = 4 offset = 0 sizes = [1, 1, 2, 2]
// CHECK-NEXT: {{\[\[\[\[}}0.25, 0.5],
// CHECK-NEXT: {{\[}}3, 4]]]]
// CHECK: rank = 4 offset = 0 sizes = [1, 2, 1, 16]
// CHECK-NEXT: {{\[\[\[\[}}0.5, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]],
// CHECK-NEXT: {{\[\[}}3.25, 4.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]]]]

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}
func.func private @printMemrefBF16(memref<*xbf16>) attributes {llvm.emit_c_interface}

func.func @prefill(%q: tensor<1x2x1x2xf32>, %k: tensor<1x2x1x2xf32>, %v: tensor<1x2x1x2xf32>, %g: tensor<1x2x1xf32>, %beta: tensor<1x2x1xf32>) -> (tensor<1x2x1x2xf32>, tensor<1x1x2x2xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<1x2x1x2xf32>, tensor<1x2x1x2xf32>, tensor<1x2x1x2xf32>, tensor<1x2x1xf32>, tensor<1x2x1xf32>) -> (tensor<1x2x1x2xf32>, tensor<1x1x2x2xf32>)
  return %o, %s : tensor<1x2x1x2xf32>, tensor<1x1x2x2xf32>
}

func.func @prefill_bf16(%q: tensor<1x2x1x16xbf16>, %k: tensor<1x2x1x16xbf16>, %v: tensor<1x2x1x16xbf16>, %g: tensor<1x2x1xf32>, %beta: tensor<1x2x1xf32>) -> (tensor<1x2x1x16xbf16>, tensor<1x1x16x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<1x2x1x16xbf16>, tensor<1x2x1x16xbf16>, tensor<1x2x1x16xbf16>, tensor<1x2x1xf32>, tensor<1x2x1xf32>) -> (tensor<1x2x1x16xbf16>, tensor<1x1x16x16xf32>)
  return %o, %s : tensor<1x2x1x16xbf16>, tensor<1x1x16x16xf32>
}

func.func @main() {
  %q = arith.constant dense<[[[[1.0, 0.0]], [[1.0, 1.0]]]]> : tensor<1x2x1x2xf32>
  %k = arith.constant dense<[[[[1.0, 0.0]], [[0.0, 1.0]]]]> : tensor<1x2x1x2xf32>
  %v = arith.constant dense<[[[[1.0, 2.0]], [[3.0, 4.0]]]]> : tensor<1x2x1x2xf32>
  %g = arith.constant dense<[[[0.0], [-0.693147182]]]> : tensor<1x2x1xf32>
  %beta = arith.constant dense<[[[0.5], [1.0]]]> : tensor<1x2x1xf32>
  %o, %s = func.call @prefill(%q, %k, %v, %g, %beta) : (tensor<1x2x1x2xf32>, tensor<1x2x1x2xf32>, tensor<1x2x1x2xf32>, tensor<1x2x1xf32>, tensor<1x2x1xf32>) -> (tensor<1x2x1x2xf32>, tensor<1x1x2x2xf32>)
  %om = bufferization.to_buffer %o read_only : tensor<1x2x1x2xf32> to memref<1x2x1x2xf32>
  %ou = memref.cast %om : memref<1x2x1x2xf32> to memref<*xf32>
  func.call @printMemrefF32(%ou) : (memref<*xf32>) -> ()
  %sm = bufferization.to_buffer %s read_only : tensor<1x1x2x2xf32> to memref<1x1x2x2xf32>
  %su = memref.cast %sm : memref<1x1x2x2xf32> to memref<*xf32>
  func.call @printMemrefF32(%su) : (memref<*xf32>) -> ()

  %qh = arith.constant dense<[[[[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]], [[1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x2x1x16xbf16>
  %kh = arith.constant dense<[[[[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]], [[0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x2x1x16xbf16>
  %vh = arith.constant dense<[[[[1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]], [[3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x2x1x16xbf16>
  %oh, %sh = func.call @prefill_bf16(%qh, %kh, %vh, %g, %beta) : (tensor<1x2x1x16xbf16>, tensor<1x2x1x16xbf16>, tensor<1x2x1x16xbf16>, tensor<1x2x1xf32>, tensor<1x2x1xf32>) -> (tensor<1x2x1x16xbf16>, tensor<1x1x16x16xf32>)
  %ohm = bufferization.to_buffer %oh read_only : tensor<1x2x1x16xbf16> to memref<1x2x1x16xbf16>
  %ohu = memref.cast %ohm : memref<1x2x1x16xbf16> to memref<*xbf16>
  func.call @printMemrefBF16(%ohu) : (memref<*xbf16>) -> ()
  return
}
