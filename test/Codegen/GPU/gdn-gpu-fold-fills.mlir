// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-fold-fills))' | FileCheck %s
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-fold-fills,gdn-gpu-map-parallel-loops))' | FileCheck %s --check-prefix=WARP
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-fold-fills,gdn-gpu-map-parallel-loops{warp-reductions=false}))' | FileCheck %s --check-prefix=THREAD

#x = affine_map<(t, n, k) -> (t, k)>
#w = affine_map<(t, n, k) -> (n, k)>
#y = affine_map<(t, n, k) -> (t, n)>

// Two projections of one filled accumulator, as bufferization leaves them:
// the second reads a copy of the filled buffer. The copy becomes a fill of
// its target, both fills go, and each projection starts from 0.
// CHECK-LABEL: func.func @shared_accumulator
// CHECK-NOT: linalg.fill
// CHECK-NOT: memref.copy
// CHECK: linalg.contract {{.*}}gdn.reduction_init = 0.000000e+00 : f32
// CHECK-NOT: linalg.fill
// CHECK: linalg.contract {{.*}}gdn.reduction_init = 0.000000e+00 : f32
// CHECK: return
// The warps write the sum without reading the output.
// WARP-LABEL: func.func @shared_accumulator
// WARP-NOT: linalg.fill
// WARP: gpu.shuffle
// WARP-NOT: memref.load %alloc
// WARP: memref.store {{.*}}, %alloc
// WARP: gpu.shuffle
// WARP-NOT: memref.load %alloc
// WARP: memref.store {{.*}}, %alloc
// One thread per output reads the output at every step: the fill comes
// back before each projection.
// THREAD-LABEL: func.func @shared_accumulator
// THREAD-NOT: gpu.shuffle
// THREAD: memref.store %cst{{.*}}, %alloc
// THREAD: memref.load %alloc
// THREAD: memref.store %cst{{.*}}, %alloc
// THREAD: memref.load %alloc
func.func @shared_accumulator(%x: memref<4x64xf32>, %w: memref<96x64xf32>,
                              %v: memref<96x64xf32>) -> (memref<4x96xf32>, memref<4x96xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<4x96xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<4x96xf32>)
  %b = memref.alloc() : memref<4x96xf32>
  memref.copy %a, %b : memref<4x96xf32> to memref<4x96xf32>
  linalg.contract indexing_maps = [#x, #w, #y]
      ins(%x, %w : memref<4x64xf32>, memref<96x64xf32>) outs(%a : memref<4x96xf32>)
  linalg.contract indexing_maps = [#x, #w, #y]
      ins(%x, %v : memref<4x64xf32>, memref<96x64xf32>) outs(%b : memref<4x96xf32>)
  return %a, %b : memref<4x96xf32>, memref<4x96xf32>
}

// -----

// A softmax's maximum over a reshaped view of its filled buffer (-inf):
// the view covers the whole allocation.
// CHECK-LABEL: func.func @row_maximum
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic {{.*}}gdn.reduction_init = 0xFF800000 : f32
func.func @row_maximum(%s: memref<8x128xf32>) -> memref<2x4xf32> {
  %low = arith.constant 0xFF800000 : f32
  %m = memref.alloc() : memref<2x4xf32>
  linalg.fill ins(%low : f32) outs(%m : memref<2x4xf32>)
  %rows = memref.collapse_shape %m [[0, 1]] : memref<2x4xf32> into memref<8xf32>
  linalg.generic {indexing_maps = [affine_map<(r, c) -> (r, c)>, affine_map<(r, c) -> (r)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%s : memref<8x128xf32>) outs(%rows : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maxnumf %out, %in : f32
    linalg.yield %0 : f32
  }
  return %m : memref<2x4xf32>
}

// -----

// What keeps a fill: a read of the buffer before the reduction (here a
// copy of it into a caller's buffer, then the sum into it), a payload that
// reads the output besides its combiner (out * 2 + x), a partial view as
// the output, and a fill of a caller's buffer (its earlier content is not
// this function's to know).
// CHECK-LABEL: func.func @kept
// CHECK: linalg.fill
// CHECK: linalg.fill
// CHECK: linalg.fill
// CHECK: linalg.fill
// CHECK-NOT: gdn.reduction_init
// CHECK: return
func.func @kept(%s: memref<8x128xf32>, %seen: memref<4xf32>, %given: memref<8xf32>)
    -> (memref<8xf32>, memref<8xf32>, memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<8xf32>)
  %view = memref.subview %a[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  linalg.generic {indexing_maps = [affine_map<(r) -> (r)>, affine_map<(r) -> (r)>],
                  iterator_types = ["parallel"]}
      ins(%view : memref<4xf32, strided<[1]>>) outs(%seen : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [affine_map<(r, c) -> (r, c)>, affine_map<(r, c) -> (r)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%s : memref<8x128xf32>) outs(%a : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  %b = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<8xf32>)
  linalg.generic {indexing_maps = [affine_map<(r, c) -> (r, c)>, affine_map<(r, c) -> (r)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%s : memref<8x128xf32>) outs(%b : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %out : f32
    %1 = arith.addf %0, %in : f32
    linalg.yield %1 : f32
  }
  %c = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<16xf32>)
  %half = memref.subview %c[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
  linalg.generic {indexing_maps = [affine_map<(r, c) -> (r, c)>, affine_map<(r, c) -> (r)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%s : memref<8x128xf32>) outs(%half : memref<8xf32, strided<[1]>>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.fill ins(%zero : f32) outs(%given : memref<8xf32>)
  linalg.generic {indexing_maps = [affine_map<(r, c) -> (r, c)>, affine_map<(r, c) -> (r)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%s : memref<8x128xf32>) outs(%given : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  return %a, %b, %c : memref<8xf32>, memref<8xf32>, memref<16xf32>
}
