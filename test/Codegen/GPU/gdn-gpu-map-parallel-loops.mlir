// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-map-parallel-loops{block-threads=128 row-group=1}))' | FileCheck %s
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-map-parallel-loops{block-threads=128 row-group=1}),convert-parallel-loops-to-gpu)' | FileCheck %s --check-prefix=LAUNCH
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-map-parallel-loops{row-group=4}),canonicalize,cse)' | FileCheck %s --check-prefix=ROWS
// RUN: not gdn-opt %s --pass-pipeline='builtin.module(func.func(gdn-gpu-map-parallel-loops{block-threads=100}))' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not gdn-opt %s --pass-pipeline='builtin.module(func.func(gdn-gpu-map-parallel-loops{row-group=0}))' 2>&1 | FileCheck %s --check-prefix=BAD-GROUP

// BAD: gdn-gpu-map-parallel-loops: block-threads must be a multiple of 32 in 32..1024, but got 100
// BAD-GROUP: gdn-gpu-map-parallel-loops: row-group must be in 1..16, but got 0

// A projection with a short sum (K = 16): its three parallel dimensions
// become one index, the innermost fastest, split into blocks of 128
// threads; the sum stays a loop in the thread, its total in a register
// until the one store.
// CHECK-LABEL: func.func @short_projection
// CHECK: %[[BLOCKS:.*]] = arith.ceildivui %{{.*}}, %c128
// CHECK-NOT: arith.maxui
// CHECK: scf.parallel (%[[BLOCK:.*]]) = (%{{.*}}) to (%[[BLOCKS]])
// CHECK: scf.parallel (%[[THREAD:.*]]) = (%{{.*}}) to (%c128{{.*}})
// CHECK: %[[LINEAR:.*]] = arith.addi
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[LINEAR]], %{{.*}}
// CHECK: scf.if %[[IN]]
// CHECK: arith.remui %[[LINEAR]], %{{.*}}
// CHECK: %[[TOTAL:.*]] = scf.for {{.*}} iter_args
// CHECK-NOT: memref.store
// CHECK: scf.yield
// CHECK: arith.addf %{{.*}}, %[[TOTAL]]
// CHECK: memref.store
// CHECK-NOT: memref.store
// CHECK: mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]
// CHECK: mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]
// LAUNCH-LABEL: func.func @short_projection
// LAUNCH: %[[THREADS:.*]] = affine.apply #{{.*}}(%c128)
// LAUNCH: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[THREADS]], %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}})
func.func @short_projection(%x: memref<?x?x16xf32>, %w: memref<96x16xf32>, %y: memref<?x?x96xf32>) {
  linalg.contract
      indexing_maps = [affine_map<(b, t, n, k) -> (b, t, k)>,
                       affine_map<(b, t, n, k) -> (n, k)>,
                       affine_map<(b, t, n, k) -> (b, t, n)>]
      ins(%x, %w : memref<?x?x16xf32>, memref<96x16xf32>)
      outs(%y : memref<?x?x96xf32>)
  return
}

// -----

// A projection with K = 64: a warp per output element (four per block of
// 128), its partial sums added by xor shuffles; every lane then holds the
// total, adds it to the output's value, and lane 0 stores the sum. Where
// both rows start at 16-byte boundaries (checked at run time: the
// addresses and strides of the views), each lane reads 4 consecutive
// floats per step, lanes 4 elements apart, and the elements past the last
// whole vector one at a time; otherwise one element per lane, lanes 32
// apart.
// CHECK-LABEL: func.func @projection
// CHECK: %[[OUTPUTS:.*]] = arith.muli %{{.*}}, %c96
// CHECK: scf.parallel
// CHECK: scf.parallel (%[[THREAD:.*]]) = (%{{.*}}) to (%c128)
// CHECK: %[[LANE:.*]] = arith.remui %[[THREAD]], %c32
// CHECK: scf.if
// CHECK: memref.extract_aligned_pointer_as_index %arg0
// CHECK: memref.extract_aligned_pointer_as_index %arg1
// CHECK: %[[PARTIAL:.*]] = scf.if %{{.*}} -> (f32) {
// CHECK: %[[VECTORS:.*]] = arith.divui %c64, %c4
// CHECK: scf.for %{{.*}} = %[[LANE]] to %[[VECTORS]] step %c32{{.*}} -> (vector<4xf32>, f32)
// CHECK: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x?x64xf32>, vector<4xf32>
// CHECK: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<96x64xf32>, vector<4xf32>
// CHECK: arith.mulf %{{.*}} : vector<4xf32>
// CHECK: scf.for {{.*}} to %c64 step %c32{{.*}} -> (vector<4xf32>, f32)
// CHECK: memref.load %arg0
// CHECK: %[[LANESUM:.*]] = vector.reduction <add>
// CHECK: scf.yield %[[LANESUM]]
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %[[LANE]] to %c64 step %c32{{.*}} iter_args
// CHECK: arith.mulf %{{.*}} : f32
// CHECK: gpu.shuffle  xor %[[PARTIAL]], %c16_i32, %c32_i32
// CHECK-COUNT-4: gpu.shuffle  xor
// CHECK: memref.load %arg2
// CHECK: %[[SUM:.*]] = arith.addf
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: scf.if %[[FIRST]]
// CHECK: memref.store %[[SUM]], %arg2
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-map-parallel-loops{warp-reductions=false}))' | FileCheck %s --check-prefix=NOWARP
// NOWARP-LABEL: func.func @projection
// NOWARP-NOT: gpu.shuffle
// NOWARP: return
func.func @projection(%x: memref<?x?x64xf32>, %w: memref<96x64xf32>, %y: memref<?x?x96xf32>) {
  linalg.contract
      indexing_maps = [affine_map<(b, t, n, k) -> (b, t, k)>,
                       affine_map<(b, t, n, k) -> (n, k)>,
                       affine_map<(b, t, n, k) -> (b, t, n)>]
      ins(%x, %w : memref<?x?x64xf32>, memref<96x64xf32>)
      outs(%y : memref<?x?x96xf32>)
  return
}

// -----

// A decode projection of bf16 weights (K = 768): vectors of 8 elements
// (16 bytes of bf16; the f32 activations in two loads), three per lane
// per iteration, so a warp has its whole row of the matrix in flight;
// then one vector per iteration, then single elements.
// CHECK-LABEL: func.func @bf16_projection
// CHECK: scf.if %{{.*}} -> (f32) {
// CHECK: scf.for %[[GROUP:.*]] = %c0{{.*}} to %{{.*}} step %c1{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %{{.*}} = %{{.*}}) -> (vector<8xf32>, f32)
// CHECK-COUNT-3: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<96x768xbf16>, vector<8xbf16>
// CHECK: arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// CHECK: arith.addf %[[ACC]], %{{.*}} : vector<8xf32>
// CHECK-COUNT-2: arith.addf %{{.*}} : vector<8xf32>
// CHECK: scf.yield
// CHECK: scf.for {{.*}} -> (vector<8xf32>, f32)
// CHECK: scf.for {{.*}} to %c768 step %c32{{.*}} -> (vector<8xf32>, f32)
// CHECK: vector.reduction <add>
func.func @bf16_projection(%x: memref<?x?x768xf32>, %w: memref<96x768xbf16>, %y: memref<?x?x96xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, t, n, k) -> (b, t, k)>,
                                   affine_map<(b, t, n, k) -> (n, k)>,
                                   affine_map<(b, t, n, k) -> (b, t, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x?x768xf32>, memref<96x768xbf16>)
      outs(%y : memref<?x?x96xf32>) {
  ^bb0(%a: f32, %b: bf16, %o: f32):
    %e = arith.extf %b : bf16 to f32
    %m = arith.mulf %a, %e : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// With row-group=4, the projection's warps take four rows
// (sequences and tokens, linearised) at one column: each step loads the
// column's bf16 weights once for the four rows' activations, two steps in
// flight, and each row's total has its butterfly and its store. A group
// the rows do not fill takes them one at a time, a warp per output as
// with row-group=1.
// ROWS-LABEL: func.func @grouped_rows
// ROWS: %[[ROWS:.*]] = arith.muli %dim, %dim_{{.*}}
// ROWS: %[[GROUPS:.*]] = arith.ceildivui %[[ROWS]], %c4
// ROWS: arith.muli %[[GROUPS]], %c96
// ROWS: %[[FIRST:.*]] = arith.muli %{{.*}}, %c4
// ROWS: %[[LEFT:.*]] = arith.subi %[[ROWS]], %[[FIRST]]
// ROWS: %[[HERE:.*]] = arith.minui %[[LEFT]], %c4
// ROWS: %[[FULL:.*]] = arith.cmpi eq, %[[HERE]], %c4
// ROWS: scf.if %[[FULL]] {
// ROWS: scf.if %{{.*}} -> (f32, f32, f32, f32) {
// ROWS: vector.load %arg0{{.*}}vector<8xf32>
// ROWS-NEXT: vector.load %arg1{{.*}} : memref<96x768xbf16>, vector<8xbf16>
// ROWS-NEXT: vector.load %arg0{{.*}}vector<8xf32>
// ROWS-NEXT: vector.load %arg0{{.*}}vector<8xf32>
// ROWS-NEXT: vector.load %arg0{{.*}}vector<8xf32>
// ROWS-NEXT: vector.load %arg0{{.*}}vector<8xf32>
// ROWS-NEXT: vector.load %arg1{{.*}} : memref<96x768xbf16>, vector<8xbf16>
// ROWS: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// ROWS: vector.load %arg1
// ROWS-NOT: vector.load %arg1
// ROWS: scf.yield
// ROWS-COUNT-4: vector.reduction <add>
// ROWS-COUNT-20: gpu.shuffle  xor
// ROWS-COUNT-4: memref.store
// ROWS: } else {
// ROWS: scf.for %{{.*}} = %c0 to %[[HERE]] step %c1 {
// ROWS: scf.if %{{.*}} -> (f32) {
// ROWS-COUNT-5: gpu.shuffle  xor
// ROWS: memref.store
func.func @grouped_rows(%x: memref<?x?x768xf32>, %w: memref<96x768xbf16>, %y: memref<?x?x96xf32>) {
  linalg.contract
      indexing_maps = [affine_map<(b, t, n, k) -> (b, t, k)>,
                       affine_map<(b, t, n, k) -> (n, k)>,
                       affine_map<(b, t, n, k) -> (b, t, n)>]
      ins(%x, %w : memref<?x?x768xf32>, memref<96x768xbf16>)
      outs(%y : memref<?x?x96xf32>)
  return
}

// -----

// A row of 70 floats: 17 whole vectors of 4 per lane, then the last two
// elements one per lane.
// CHECK-LABEL: func.func @ragged_row
// CHECK: scf.if %{{.*}} -> (f32) {
// CHECK: %[[VECTORS:.*]] = arith.divui %c70{{.*}}, %c4
// CHECK: scf.for %{{.*}} to %[[VECTORS]] step %c32{{.*}} -> (vector<4xf32>, f32)
// CHECK: %[[WHOLE:.*]] = arith.muli %[[VECTORS]], %c4
// CHECK: %[[REST:.*]] = arith.addi %[[WHOLE]]
// CHECK: scf.for %{{.*}} = %[[REST]] to %c70{{.*}} step %c32{{.*}} -> (vector<4xf32>, f32)
// CHECK: memref.load %arg0
// CHECK: vector.reduction <maxnumf>
func.func @ragged_row(%s: memref<?x70xf32>, %m: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%s : memref<?x70xf32>) outs(%m : memref<?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maxnumf %acc, %x : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A weight read down its columns (w[k, n]) has no contiguous row to read
// in vectors: one element per lane, no run-time check.
// CHECK-LABEL: func.func @columns
// CHECK-NOT: vector.load
// CHECK-NOT: memref.extract_aligned_pointer_as_index
// CHECK: gpu.shuffle  xor
func.func @columns(%x: memref<?x768xf32>, %w: memref<768x96xf32>, %y: memref<?x96xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, n, k) -> (t, k)>,
                                   affine_map<(t, n, k) -> (k, n)>,
                                   affine_map<(t, n, k) -> (t, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x768xf32>, memref<768x96xf32>)
      outs(%y : memref<?x96xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Epilogues: the element-wise op over a reduction's outputs runs in the
// thread that holds each total. A projection's SiLU in the warp's lane 0;
// a short sum (the convolution's taps) with its activation in one thread
// per output. An op that writes into a buffer the reduction reads is not
// fused: other warps may still read the elements it overwrites.
// CHECK-LABEL: func.func @projection_epilogue
// CHECK: gpu.shuffle  xor
// CHECK: scf.if
// CHECK: memref.store %[[TOTAL:.*]], %arg2
// CHECK: arith.negf %[[TOTAL]]
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %arg3
// CHECK-NOT: scf.parallel
// CHECK: return
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-map-parallel-loops{fuse-epilogues=false}))' | FileCheck %s --check-prefix=NOEPILOGUE
// NOEPILOGUE-LABEL: func.func @projection_epilogue
// NOEPILOGUE: gpu.shuffle  xor
// NOEPILOGUE: scf.parallel
// NOEPILOGUE: math.exp
func.func @projection_epilogue(%x: memref<?x768xf32>, %w: memref<96x768xf32>, %y: memref<?x96xf32>, %z: memref<?x96xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, n, k) -> (t, k)>,
                                   affine_map<(t, n, k) -> (n, k)>,
                                   affine_map<(t, n, k) -> (t, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x768xf32>, memref<96x768xf32>)
      outs(%y : memref<?x96xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(t, n) -> (t, n)>, affine_map<(t, n) -> (t, n)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<?x96xf32>) outs(%z : memref<?x96xf32>) {
  ^bb0(%v: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %v : f32
    %e = math.exp %n : f32
    %d = arith.addf %one, %e : f32
    %r = arith.divf %v, %d : f32
    linalg.yield %r : f32
  }
  return
}

// CHECK-LABEL: func.func @taps_epilogue
// CHECK: scf.parallel
// CHECK: %[[TOTAL:.*]] = scf.for %{{.*}} = %c0{{.*}} to %c4
// CHECK: memref.store %{{.*}}, %arg2
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %arg3
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @taps_epilogue(%x: memref<?x8x4xf32>, %w: memref<8x4xf32>, %y: memref<?x8xf32>, %z: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, c, j) -> (t, c, j)>,
                                   affine_map<(t, c, j) -> (c, j)>,
                                   affine_map<(t, c, j) -> (t, c)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x8x4xf32>, memref<8x4xf32>)
      outs(%y : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(t, c) -> (t, c)>, affine_map<(t, c) -> (t, c)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<?x8xf32>) outs(%z : memref<?x8xf32>) {
  ^bb0(%v: f32, %out: f32):
    %e = math.exp %v : f32
    linalg.yield %e : f32
  }
  return
}

// An activation in place over the convolution's output (it reads the
// total through its output operand), and the output copied into a cache
// slot after an unrelated copy: the reduction runs past that copy, at
// the epilogue's place.
// CHECK-LABEL: func.func @in_place_epilogue
// CHECK: %[[TOTAL:.*]] = scf.for %{{.*}} = %c0{{.*}} to %c4
// CHECK: %[[SUM:.*]] = arith.addf %{{.*}}, %[[TOTAL]]
// CHECK: memref.store %[[SUM]], %arg2
// CHECK: %[[E:.*]] = math.exp %[[SUM]]
// CHECK: memref.store %[[E]], %arg2
// CHECK-LABEL: func.func @past_a_copy
// CHECK: scf.parallel
// CHECK: memref.load %arg3
// CHECK: memref.store %{{.*}}, %subview[
// CHECK: gpu.shuffle  xor
// CHECK: memref.store %[[TOTAL:.*]], %arg2
// CHECK: memref.store %[[TOTAL]], %subview_0
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @in_place_epilogue(%x: memref<?x8x4xf32>, %w: memref<8x4xf32>, %y: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, c, j) -> (t, c, j)>,
                                   affine_map<(t, c, j) -> (c, j)>,
                                   affine_map<(t, c, j) -> (t, c)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x8x4xf32>, memref<8x4xf32>)
      outs(%y : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(t, c) -> (t, c)>],
                  iterator_types = ["parallel", "parallel"]}
      outs(%y : memref<?x8xf32>) {
  ^bb0(%v: f32):
    %e = math.exp %v : f32
    linalg.yield %e : f32
  }
  return
}

func.func @past_a_copy(%x: memref<?x768xf32>, %w: memref<96x768xf32>, %y: memref<?x96xf32>, %state: memref<?x96xf32>, %window: memref<?x2x96xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, n, k) -> (t, k)>,
                                   affine_map<(t, n, k) -> (n, k)>,
                                   affine_map<(t, n, k) -> (t, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x768xf32>, memref<96x768xf32>)
      outs(%y : memref<?x96xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  %c0 = arith.constant 0 : index
  %t = memref.dim %x, %c0 : memref<?x768xf32>
  %first = memref.subview %window[0, 0, 0] [%t, 1, 96] [1, 1, 1] : memref<?x2x96xf32> to memref<?x96xf32, strided<[192, 1]>>
  %last = memref.subview %window[0, 1, 0] [%t, 1, 96] [1, 1, 1] : memref<?x2x96xf32> to memref<?x96xf32, strided<[192, 1], offset: 96>>
  memref.copy %state, %first : memref<?x96xf32> to memref<?x96xf32, strided<[192, 1]>>
  memref.copy %y, %last : memref<?x96xf32> to memref<?x96xf32, strided<[192, 1], offset: 96>>
  return
}

// CHECK-LABEL: func.func @writes_what_it_reads
// CHECK: gpu.shuffle  xor
// CHECK-NOT: math.exp
// CHECK: scf.parallel
// CHECK: math.exp
func.func @writes_what_it_reads(%x: memref<?x768xf32>, %w: memref<96x768xf32>, %y: memref<?x96xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, n, k) -> (t, k)>,
                                   affine_map<(t, n, k) -> (n, k)>,
                                   affine_map<(t, n, k) -> (t, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x768xf32>, memref<96x768xf32>)
      outs(%y : memref<?x96xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }
  %c0 = arith.constant 0 : index
  %t = memref.dim %x, %c0 : memref<?x768xf32>
  %head = memref.subview %x[0, 0] [%t, 96] [1, 1] : memref<?x768xf32> to memref<?x96xf32, strided<[768, 1]>>
  linalg.generic {indexing_maps = [affine_map<(t, n) -> (t, n)>, affine_map<(t, n) -> (t, n)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<?x96xf32>) outs(%head : memref<?x96xf32, strided<[768, 1]>>) {
  ^bb0(%v: f32, %out: f32):
    %e = math.exp %v : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// A copy between buffers runs as a kernel too.
// CHECK-LABEL: func.func @copy
// CHECK-NOT: memref.copy
// CHECK: scf.parallel
// CHECK: memref.load
// CHECK: memref.store
func.func @copy(%a: memref<?x8xf32>, %b: memref<?x8xf32, strided<[16, 1]>>) {
  memref.copy %a, %b : memref<?x8xf32> to memref<?x8xf32, strided<[16, 1]>>
  return
}

// -----

// An op without parallel dimensions runs in one thread of one block.
// CHECK-LABEL: func.func @scalar
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: memref.store
func.func @scalar(%out: memref<f32>) {
  %c = arith.constant 1.0 : f32
  linalg.fill ins(%c : f32) outs(%out : memref<f32>)
  return
}

// -----

// Kernels already built are left alone.
// CHECK-LABEL: func.func @kernel
// CHECK: gpu.launch
// CHECK-NEXT: linalg.fill
func.func @kernel(%out: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %c = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1)
             threads(%tx, %ty, %tz) in (%u = %c1, %v = %c1, %w = %c1) {
    linalg.fill ins(%c : f32) outs(%out : memref<4xf32>)
    gpu.terminator
  }
  return
}

// -----

// A row maximum (softmax's) takes a warp too, starting from -inf and
// combining with the same maximum.
// CHECK-LABEL: func.func @row_max
// CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[NEG]])
// CHECK: arith.maxnumf
// CHECK: gpu.shuffle  xor
// CHECK: arith.maxnumf
// CHECK: memref.store
func.func @row_max(%s: memref<?x128xf32>, %m: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%s : memref<?x128xf32>) outs(%m : memref<?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maxnumf %acc, %x : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A reduction before a parallel dimension (the absorbed attention's sum
// over the keys s outside the latent channels r): the loops are
// interchanged, both parallel dimensions in the grid, the sum over s in
// the thread.
// CHECK-LABEL: func.func @reduction_before_parallel
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}})
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c128{{.*}})
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c40
// CHECK-NOT: scf.parallel
// CHECK: memref.store
func.func @reduction_before_parallel(%p: memref<8x40xf32>, %latents: memref<40x32xf32>, %out: memref<8x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, s, r) -> (t, s)>,
                                   affine_map<(t, s, r) -> (s, r)>,
                                   affine_map<(t, s, r) -> (t, r)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%p, %latents : memref<8x40xf32>, memref<40x32xf32>)
      outs(%out : memref<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// RMSNorm: the sum of squares over each row of 768, then the row scaled
// by it. With fuse-rows both run in one warp per row: after the
// butterfly every lane holds the sum, lane 0 stores it, and each lane
// scales the elements it summed, using the sum from its register rather
// than the stored one: in vectors where the rows are aligned, one at a
// time otherwise.
// FUSE-LABEL: func.func @rms_norm
// FUSE: gpu.shuffle  xor
// FUSE: scf.if
// FUSE: memref.store %[[SUM:.*]], %arg1
// FUSE: scf.if %{{.*}} {
// FUSE: vector.load %arg0
// FUSE-NOT: memref.load %arg1
// FUSE: math.rsqrt %{{.*}} : vector<4xf32>
// FUSE: vector.store %{{.*}}, %arg3[{{.*}}] {alignment = 16 : i64} : memref<?x768xf32>, vector<4xf32>
// FUSE: } else {
// FUSE: scf.for %[[K:.*]] = %{{.*}} to %c768 step %c32
// FUSE-NOT: memref.load %arg1
// FUSE: math.rsqrt %{{.*}} : f32
// FUSE: memref.store {{.*}}, %arg3[{{.*}}]
// FUSE-NOT: scf.parallel
// FUSE: return
// NOFUSE-LABEL: func.func @rms_norm
// NOFUSE: gpu.shuffle  xor
// NOFUSE: scf.parallel
// NOFUSE: memref.load %arg1
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-map-parallel-loops))' | FileCheck %s --check-prefix=FUSE
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-map-parallel-loops{fuse-rows=false}))' | FileCheck %s --check-prefix=NOFUSE
func.func @rms_norm(%x: memref<?x768xf32>, %r: memref<?xf32>, %w: memref<768xf32>, %y: memref<?x768xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, k) -> (t, k)>, affine_map<(t, k) -> (t)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x768xf32>) outs(%r : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(t, k) -> (t, k)>, affine_map<(t, k) -> (t)>,
                                   affine_map<(t, k) -> (k)>, affine_map<(t, k) -> (t, k)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %r, %w : memref<?x768xf32>, memref<?xf32>, memref<768xf32>) outs(%y : memref<?x768xf32>) {
  ^bb0(%in: f32, %sum: f32, %scale: f32, %out: f32):
    %c = arith.constant 7.680000e+02 : f32
    %eps = arith.constant 1.0e-06 : f32
    %0 = arith.divf %sum, %c : f32
    %1 = arith.addf %0, %eps : f32
    %2 = math.rsqrt %1 : f32
    %3 = arith.mulf %in, %2 : f32
    %4 = arith.mulf %3, %scale : f32
    linalg.yield %4 : f32
  }
  return
}

// -----

// A softmax's maximum, then exp(s - max) in place over the same rows: one
// warp per row (each lane rewrites the elements it read). The consumer
// that reads the maximum through another view of its buffer is not
// fused (lane 0's store would not be visible to the other lanes).
// FUSE-LABEL: func.func @softmax_rows
// FUSE: gpu.shuffle  xor
// FUSE: scf.for
// FUSE: math.exp
// FUSE: memref.store {{.*}}, %arg0
// FUSE-LABEL: func.func @through_a_view
// FUSE: gpu.shuffle  xor
// FUSE-NOT: math.exp
// FUSE: scf.parallel
// FUSE: math.exp
func.func @softmax_rows(%s: memref<?x?xf32>, %m: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, k) -> (t, k)>, affine_map<(t, k) -> (t)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%s : memref<?x?xf32>) outs(%m : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maxnumf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(t, k) -> (t, k)>, affine_map<(t, k) -> (t)>, affine_map<(t, k) -> (t, k)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%s, %m : memref<?x?xf32>, memref<?xf32>) outs(%s : memref<?x?xf32>) {
  ^bb0(%in: f32, %max: f32, %out: f32):
    %0 = arith.subf %in, %max : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  return
}

func.func @through_a_view(%s: memref<?x?xf32>, %m: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, k) -> (t, k)>, affine_map<(t, k) -> (t)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%s : memref<?x?xf32>) outs(%m : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maxnumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %c0 = arith.constant 0 : index
  %n = memref.dim %m, %c0 : memref<?xf32>
  %v = memref.subview %m[0] [%n] [1] : memref<?xf32> to memref<?xf32, strided<[1]>>
  linalg.generic {indexing_maps = [affine_map<(t, k) -> (t, k)>, affine_map<(t, k) -> (t)>, affine_map<(t, k) -> (t, k)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%s, %v : memref<?x?xf32>, memref<?xf32, strided<[1]>>) outs(%s : memref<?x?xf32>) {
  ^bb0(%in: f32, %max: f32, %out: f32):
    %0 = arith.subf %in, %max : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  return
}
