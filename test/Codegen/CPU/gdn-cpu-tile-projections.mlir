// RUN: gdn-opt %s -split-input-file -gdn-cpu-tile-projections='column-tile=16 row-dot-parallel-min=0' | FileCheck %s
// RUN: gdn-opt %s -split-input-file -gdn-cpu-tile-projections='column-tile=16' | FileCheck %s --check-prefix=SERIAL
// RUN: not gdn-opt %s -split-input-file -gdn-cpu-tile-projections='row-dot-parallel-min=-1' 2>&1 | FileCheck %s --check-prefix=BADMIN
// RUN: gdn-opt %s -split-input-file -gdn-cpu-tile-projections='row-block=32 row-tile=4 column-tile=16' | FileCheck %s --check-prefix=SMALL
// RUN: gdn-opt %s -split-input-file -gdn-cpu-tile-projections | FileCheck %s --check-prefix=SPLIT
// RUN: not gdn-opt %s -split-input-file -gdn-cpu-tile-projections='column-tile=0' 2>&1 | FileCheck %s --check-prefix=BADCOLUMNS
// RUN: not gdn-opt %s -split-input-file -gdn-cpu-tile-projections='row-block=12 row-tile=8' 2>&1 | FileCheck %s --check-prefix=BAD

#x = affine_map<(b, t, o, i) -> (b, t, i)>
#w = affine_map<(b, t, o, i) -> (o, i)>
#y = affine_map<(b, t, o, i) -> (b, t, o)>

// A projection: blocks of 64 tokens per sequence in an scf.forall, then
// 8-token tiles, both static matmuls on the weight transposed once; the
// last tokens are dot products along the weight's rows: blocks of 16 rows
// (the widest that divides 48) in an scf.forall, one row at a time in
// 32-lane FMAs along it. The choices are on the loops.
// With the default column-tile of 32, each tile's matmul is the 32
// outputs that the vectorizer's register tiles divide, then the other 16.
// SPLIT-LABEL: func.func @projection
// SPLIT: scf.forall
// SPLIT: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<32x32xf32>) outs(%{{.*}} : tensor<64x32xf32>)
// SPLIT: tensor.insert_slice %{{.*}}[0, 0] [64, 32] [1, 1] : tensor<64x32xf32> into tensor<64x48xf32>
// SPLIT: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<32x16xf32>) outs(%{{.*}} : tensor<64x16xf32>)
// SPLIT: tensor.insert_slice %{{.*}}[0, 32] [64, 16] [1, 1] : tensor<64x16xf32> into tensor<64x48xf32>
// BADCOLUMNS: gdn-cpu-tile-projections: column-tile must be positive, but got 0
// CHECK-LABEL: func.func @projection
// CHECK: scf.if
// CHECK: linalg.transpose ins(%{{.*}} : tensor<48x32xf32>)
// CHECK: scf.forall
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<32x48xf32>) outs(%{{.*}} : tensor<64x48xf32>)
// CHECK: } {gdn.projection_tiling = {row_block = 64 : i64, row_tile = 8 : i64}}
// CHECK: scf.for
// CHECK: scf.for
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x32xf32>, tensor<32x48xf32>) outs(%{{.*}} : tensor<8x48xf32>)
// CHECK: } {gdn.projection_tiling = {row_block = 64 : i64, row_tile = 8 : i64}}
// CHECK: scf.forall (%{{.*}}) in (3)
// CHECK: tensor.extract_slice %{{.*}} [16, 32] [1, 1] : tensor<48x32xf32> to tensor<16x32xf32>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (tensor<16xf32>)
// CHECK: scf.for {{.*}} -> (vector<32xf32>) {
// CHECK: vector.fma
// CHECK-NOT: vector.fma
// CHECK: vector.reduction <add>
// CHECK-NOT: vector.reduction
// CHECK: vector.from_elements {{.*}} : vector<1xf32>
// CHECK: } {gdn.projection_tiling = {row_dot_block = 16 : i64, row_dot_lanes = 32 : i64, row_dot_parallel = true}}
// CHECK-NOT: linalg.contract
// A weight under row-dot-parallel-min elements (48 x 32 against the
// default 262144) takes its row dots in an scf.for over the blocks: a
// parallel region would cost more than its few dot products.
// SERIAL-LABEL: func.func @projection
// SERIAL: {gdn.projection_tiling = {row_block = 64 : i64, row_tile = 8 : i64}}
// SERIAL-NOT: scf.forall
// SERIAL: %[[C48:.+]] = arith.constant 48 : index
// SERIAL: scf.for %{{.*}} = %{{.*}} to %[[C48]] step %{{.*}} iter_args
// SERIAL: vector.from_elements {{.*}} : vector<1xf32>
// SERIAL: } {gdn.projection_tiling = {row_dot_block = 16 : i64, row_dot_lanes = 32 : i64, row_dot_parallel = false}}
// BADMIN: gdn-cpu-tile-projections: row-dot-parallel-min must not be negative, but got -1
// SMALL-LABEL: func.func @projection
// SMALL: tensor<32x32xf32>, tensor<32x48xf32>
// SMALL: {gdn.projection_tiling = {row_block = 32 : i64, row_tile = 4 : i64}}
// SMALL: tensor<4x32xf32>, tensor<32x48xf32>
// BAD: gdn-cpu-tile-projections: row-tile must be positive and row-block a multiple of it, but got row-block = 12 and row-tile = 8
func.func @projection(%x: tensor<?x?x32xf32>, %w: tensor<48x32xf32>, %init: tensor<?x?x48xf32>) -> tensor<?x?x48xf32> {
  %0 = linalg.contract indexing_maps = [#x, #w, #y] ins(%x, %w : tensor<?x?x32xf32>, tensor<48x32xf32>) outs(%init : tensor<?x?x48xf32>) -> tensor<?x?x48xf32>
  return %0 : tensor<?x?x48xf32>
}

// -----

// Other contractions are left alone: a weight of dynamic shape, another
// layout.
#x = affine_map<(b, t, o, i) -> (b, t, i)>
#w = affine_map<(b, t, o, i) -> (o, i)>
#wt = affine_map<(b, t, o, i) -> (i, o)>
#y = affine_map<(b, t, o, i) -> (b, t, o)>
// CHECK-LABEL: func.func @not_projections
// CHECK-NOT: scf.forall
// CHECK-COUNT-2: linalg.contract
// CHECK-NOT: scf.forall
func.func @not_projections(%x: tensor<?x?x32xf32>, %w: tensor<?x32xf32>, %wt: tensor<32x48xf32>, %init: tensor<?x?x48xf32>) -> (tensor<?x?x48xf32>, tensor<?x?x48xf32>) {
  %0 = linalg.contract indexing_maps = [#x, #w, #y] ins(%x, %w : tensor<?x?x32xf32>, tensor<?x32xf32>) outs(%init : tensor<?x?x48xf32>) -> tensor<?x?x48xf32>
  %1 = linalg.contract indexing_maps = [#x, #wt, #y] ins(%x, %wt : tensor<?x?x32xf32>, tensor<32x48xf32>) outs(%init : tensor<?x?x48xf32>) -> tensor<?x?x48xf32>
  return %0, %1 : tensor<?x?x48xf32>, tensor<?x?x48xf32>
}

// -----

#x = affine_map<(b, t, o, i) -> (b, t, i)>
#w = affine_map<(b, t, o, i) -> (o, i)>
#y = affine_map<(b, t, o, i) -> (b, t, o)>

// A bf16 weight: widened to f32 as it is transposed for the tiles, read as
// bf16 by the remainder's dots and widened in registers.
// CHECK-LABEL: func.func @bf16_projection
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}} : tensor<48x32xbf16>) outs(%{{.*}} : tensor<32x48xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<32x48xf32>)
// CHECK: vector.transfer_read %{{.*}} {in_bounds = [true]} : tensor<16x32xbf16>, vector<32xbf16>
// CHECK-NEXT: arith.extf %{{.*}} : vector<32xbf16> to vector<32xf32>
// CHECK-NEXT: vector.fma
func.func @bf16_projection(%x: tensor<?x?x32xf32>, %w: tensor<48x32xbf16>, %init: tensor<?x?x48xf32>) -> tensor<?x?x48xf32> {
  %0 = linalg.contract indexing_maps = [#x, #w, #y] ins(%x, %w : tensor<?x?x32xf32>, tensor<48x32xbf16>) outs(%init : tensor<?x?x48xf32>) -> tensor<?x?x48xf32>
  return %0 : tensor<?x?x48xf32>
}

// -----

#x = affine_map<(b, t, o, i) -> (b, t, i)>
#w = affine_map<(b, t, o, i) -> (o, i)>
#y = affine_map<(b, t, o, i) -> (b, t, o)>

// 100 weight rows: one block of 64, the 36 rows after it a contraction on
// their slice of the weight. 48 inputs: 16 lanes.
// CHECK-LABEL: func.func @rows_past_the_blocks
// CHECK: scf.forall (%{{.*}}) in (1)
// CHECK: vector<16xf32>
// CHECK: {gdn.projection_tiling = {row_dot_block = 64 : i64, row_dot_lanes = 16 : i64, row_dot_parallel = true}}
// CHECK: %[[LEFT:.*]] = tensor.extract_slice %{{.*}}[64, 0] [36, 48] [1, 1] : tensor<100x48xf32> to tensor<36x48xf32>
// CHECK: linalg.contract {{.*}} ins(%{{.*}}, %[[LEFT]] : tensor<?x?x48xf32>, tensor<36x48xf32>)
func.func @rows_past_the_blocks(%x: tensor<?x?x48xf32>, %w: tensor<100x48xf32>, %init: tensor<?x?x100xf32>) -> tensor<?x?x100xf32> {
  %0 = linalg.contract indexing_maps = [#x, #w, #y] ins(%x, %w : tensor<?x?x48xf32>, tensor<100x48xf32>) outs(%init : tensor<?x?x100xf32>) -> tensor<?x?x100xf32>
  return %0 : tensor<?x?x100xf32>
}

// -----

#x = affine_map<(b, t, o, i) -> (b, t, i)>
#w = affine_map<(b, t, o, i) -> (o, i)>
#y = affine_map<(b, t, o, i) -> (b, t, o)>

// Inputs that are not a multiple of 16, and fewer than 8 weight rows: the
// remainder stays a contraction.
// CHECK-LABEL: func.func @no_row_dots
// CHECK-NOT: row_dot_block
// CHECK: linalg.contract {{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x?x24xf32>, tensor<64x24xf32>)
// CHECK-NOT: row_dot_block
// CHECK: linalg.contract {{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x?x32xf32>, tensor<4x32xf32>)
func.func @no_row_dots(%x: tensor<?x?x24xf32>, %w: tensor<64x24xf32>, %init: tensor<?x?x64xf32>, %x2: tensor<?x?x32xf32>, %w2: tensor<4x32xf32>, %init2: tensor<?x?x4xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x4xf32>) {
  %0 = linalg.contract indexing_maps = [#x, #w, #y] ins(%x, %w : tensor<?x?x24xf32>, tensor<64x24xf32>) outs(%init : tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %1 = linalg.contract indexing_maps = [#x, #w, #y] ins(%x2, %w2 : tensor<?x?x32xf32>, tensor<4x32xf32>) outs(%init2 : tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  return %0, %1 : tensor<?x?x64xf32>, tensor<?x?x4xf32>
}
