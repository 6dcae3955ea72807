// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-forward-copies))' | FileCheck %s

// A new cache row computed into a temporary and copied into the cache:
// the element-wise op writes the cache's rows itself. The cache's view is
// made after the op, so a copy of it is built before the op.

#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @append_row
// CHECK-SAME: (%[[X:.*]]: memref<?x64xf32>, %[[CACHE:.*]]: memref<?x64xf32>, %[[AT:.*]]: index)
// CHECK-NOT: memref.alloc
// CHECK: %[[ROWS:.*]] = memref.subview %[[CACHE]][%[[AT]], 0]
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[X]] : memref<?x64xf32>) outs(%[[ROWS]] : memref<?x64xf32, strided<[64, 1], offset: ?>>)
// CHECK-NOT: memref.copy
func.func @append_row(%x: memref<?x64xf32>, %cache: memref<?x64xf32>,
                      %at: index) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %tmp = memref.alloc(%n) : memref<?x64xf32>
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x64xf32>) outs(%tmp : memref<?x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.mulf %in, %in : f32
    linalg.yield %y : f32
  }
  %rows = memref.subview %cache[%at, 0] [%n, 64] [1, 1]
      : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
  memref.copy %tmp, %rows
      : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
  return
}

// -----

// One temporary that two layers reuse (a life each, from a whole write to
// its copy): both writers take their own place; the size asked of the
// temporary is the size it was made with.

#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @two_lives
// CHECK-SAME: (%[[X:.*]]: memref<?x8xf32>, %[[A:.*]]: memref<?x8xf32>, %[[B:.*]]: memref<?x8xf32>)
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic {{.*}} outs(%[[A]] : memref<?x8xf32>)
// CHECK: linalg.generic {{.*}} outs(%[[B]] : memref<?x8xf32>)
// CHECK-NOT: memref.copy
// CHECK: return %{{.*}} : index
func.func @two_lives(%x: memref<?x8xf32>, %a: memref<?x8xf32>,
                     %b: memref<?x8xf32>) -> index {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %tmp = memref.alloc(%n) : memref<?x8xf32>
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x8xf32>) outs(%tmp : memref<?x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.negf %in : f32
    linalg.yield %y : f32
  }
  memref.copy %tmp, %a : memref<?x8xf32> to memref<?x8xf32>
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x8xf32>) outs(%tmp : memref<?x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.addf %in, %in : f32
    linalg.yield %y : f32
  }
  memref.copy %tmp, %b : memref<?x8xf32> to memref<?x8xf32>
  %size = memref.dim %tmp, %c0 : memref<?x8xf32>
  return %size : index
}

// -----

// A conv state shifted into itself: the writer reads the place it would
// write, so the temporary and the copy stay.

#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @shift_into_itself
// CHECK: %[[TMP:.*]] = memref.alloc
// CHECK: linalg.generic {{.*}} outs(%[[TMP]]
// CHECK: memref.copy %[[TMP]]
func.func @shift_into_itself(%state: memref<3x8xf32>) {
  %tmp = memref.alloc() : memref<3x8xf32>
  linalg.generic {indexing_maps = [#id],
                  iterator_types = ["parallel", "parallel"]}
      outs(%tmp : memref<3x8xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %next = arith.addi %i, %c1 : index
    %from = arith.minui %next, %c2 : index
    %v = memref.load %state[%from, %j] : memref<3x8xf32>
    linalg.yield %v : f32
  }
  memref.copy %tmp, %state : memref<3x8xf32> to memref<3x8xf32>
  return
}

// -----

// The place is read between the temporary's write and the copy (the old
// cache): writing it earlier would change what that op reads.

#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @place_read_before_copy
// CHECK: %[[TMP:.*]] = memref.alloc
// CHECK: memref.copy %[[TMP]], %{{.*}}
func.func @place_read_before_copy(%x: memref<4x8xf32>, %place: memref<4x8xf32>,
                                  %out: memref<4x8xf32>) {
  %tmp = memref.alloc() : memref<4x8xf32>
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%tmp : memref<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%place : memref<4x8xf32>) outs(%out : memref<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  memref.copy %tmp, %place : memref<4x8xf32> to memref<4x8xf32>
  return
}

// -----

// The temporary is read after the copy, or written by an op that is not
// element-wise (a projection keeps its dense output): nothing changes.

#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @read_after_copy
// CHECK: memref.copy
// CHECK-LABEL: func.func @written_by_a_contraction
// CHECK: memref.copy
func.func @read_after_copy(%x: memref<4x8xf32>, %place: memref<4x8xf32>,
                           %out: memref<4x8xf32>) {
  %tmp = memref.alloc() : memref<4x8xf32>
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%tmp : memref<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  memref.copy %tmp, %place : memref<4x8xf32> to memref<4x8xf32>
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%tmp : memref<4x8xf32>) outs(%out : memref<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  return
}

func.func @written_by_a_contraction(%x: memref<4x8xf32>, %w: memref<8x8xf32>,
                                    %cache: memref<16x8xf32>) {
  %tmp = memref.alloc() : memref<4x8xf32>
  linalg.matmul ins(%x, %w : memref<4x8xf32>, memref<8x8xf32>)
                outs(%tmp : memref<4x8xf32>)
  %rows = memref.subview %cache[4, 0] [4, 8] [1, 1]
      : memref<16x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  memref.copy %tmp, %rows
      : memref<4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  return
}

// -----

// A slice copied out before element-wise ops read it: they read the
// slice. Not when the slice's buffer is written before the last reader,
// nor when a reader is not element-wise.

#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @read_slice
// CHECK-SAME: (%[[STATE:.*]]: memref<8x8xf32>, %[[OUT:.*]]: memref<4x8xf32>)
// CHECK: %[[SLICE:.*]] = memref.subview %[[STATE]]
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: linalg.generic {{.*}} ins(%[[SLICE]] : {{.*}}) outs(%[[OUT]]
func.func @read_slice(%state: memref<8x8xf32>, %out: memref<4x8xf32>) {
  %slice = memref.subview %state[4, 0] [4, 8] [1, 1]
      : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  %tmp = memref.alloc() : memref<4x8xf32>
  memref.copy %slice, %tmp
      : memref<4x8xf32, strided<[8, 1], offset: 32>> to memref<4x8xf32>
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%tmp : memref<4x8xf32>) outs(%out : memref<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %y = arith.mulf %in, %in : f32
    linalg.yield %y : f32
  }
  return
}

// CHECK-LABEL: func.func @slice_written_before_read
// CHECK: memref.copy
func.func @slice_written_before_read(%state: memref<8x8xf32>,
                                     %out: memref<4x8xf32>) {
  %slice = memref.subview %state[4, 0] [4, 8] [1, 1]
      : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  %tmp = memref.alloc() : memref<4x8xf32>
  memref.copy %slice, %tmp
      : memref<4x8xf32, strided<[8, 1], offset: 32>> to memref<4x8xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%state : memref<8x8xf32>)
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%tmp : memref<4x8xf32>) outs(%out : memref<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  return
}

// CHECK-LABEL: func.func @slice_read_by_a_call
// CHECK: memref.copy
func.func private @kernel(memref<4x8xf32>)
func.func @slice_read_by_a_call(%state: memref<8x8xf32>) {
  %slice = memref.subview %state[4, 0] [4, 8] [1, 1]
      : memref<8x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  %tmp = memref.alloc() : memref<4x8xf32>
  memref.copy %slice, %tmp
      : memref<4x8xf32, strided<[8, 1], offset: 32>> to memref<4x8xf32>
  func.call @kernel(%tmp) : (memref<4x8xf32>) -> ()
  return
}
