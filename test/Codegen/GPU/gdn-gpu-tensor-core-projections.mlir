// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-tensor-core-projections{tile-stages=0}))' | FileCheck %s
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-tensor-core-projections{tile-stages=2}),cse)' | FileCheck %s --check-prefix=STAGED
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-tensor-core-projections{split-activations=false}))' | FileCheck %s --check-prefix=ROUNDED
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-tensor-core-projections))' | FileCheck %s --check-prefix=COUNT
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-tensor-core-projections{f32-weights=true}))' | FileCheck %s --check-prefix=F32
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-tensor-core-projections{small-row-blocks=8 small-row-min-outputs=64}))' | FileCheck %s --check-prefix=SMALL
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-tensor-core-projections{small-row-blocks=8}))' | FileCheck %s --check-prefix=FEW-OUTPUTS
// RUN: not gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-tensor-core-projections{small-row-blocks=-1}))' 2>&1 | FileCheck %s --check-prefix=BAD-SMALL
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-tensor-core-projections{tile-stages=3}),cse)' | FileCheck %s --check-prefix=STAGES3
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-tensor-core-projections{tile-stages=2 split-once=1}),cse)' | FileCheck %s --check-prefix=SPLIT-ONCE
// RUN: not gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-tensor-core-projections{tile-stages=1}))' 2>&1 | FileCheck %s --check-prefix=BAD-STAGES

#x = affine_map<(b, t, o, i) -> (b, t, i)>
#w = affine_map<(b, t, o, i) -> (o, i)>
#y = affine_map<(b, t, o, i) -> (b, t, o)>

// A projection with a bf16 weight: the rows of whole 128-row blocks on
// tensor cores (100 outputs: two column blocks, the second ragged), the
// rest a contract on views of the same buffers.
// With tile-stages=0, the fragments are loaded from global memory.
// With tile-stages=2, the whole blocks stage tiles of 32 reduction columns in
// workgroup memory (A's f32 rows, then B's bf16 rows, two of each), by
// cp.async of 16 bytes: eight copies of A and two of B per thread for a
// tile. The next tile's copies are issued before the wait for this one's
// (one group left in flight), and the fragments come from the tiles.
// STAGED-LABEL: func.func @projection
// STAGED-SAME: (%[[X:.*]]: memref<?x?x64xf32>, %[[W:.*]]: memref<100x64xbf16>,
// STAGED: %[[XR:.*]] = memref.collapse_shape %[[X]]
// STAGED: gpu.launch {{.*}} dynamic_shared_memory_size %c40960_i32
// STAGED: %[[MEM:.*]] = gpu.dynamic_shared_memory
// STAGED: %[[A:.*]] = memref.view %[[MEM]][%c0][] {{.*}} to memref<2x128x32xf32, #gpu.address_space<workgroup>>
// STAGED: %[[B:.*]] = memref.view %[[MEM]][%c32768][] {{.*}} to memref<2x64x32xbf16, #gpu.address_space<workgroup>>
// STAGED-COUNT-8: nvgpu.device_async_copy %[[XR]][{{.*}}], %[[A]][%c0, {{.*}}], 4 {bypassL1}
// STAGED-COUNT-2: nvgpu.device_async_copy %[[W]][{{.*}}], %[[B]][%c0, {{.*}}], 8 {bypassL1}
// STAGED: nvgpu.device_async_create_group
// STAGED: scf.for %[[TILE:.*]] = %c0 to %c2 step %c1 iter_args
// STAGED: %[[SLOT:.*]] = arith.remui %[[TILE]], %c2
// STAGED: %[[AHEAD:.*]] = arith.addi %[[TILE]], %c1
// STAGED: scf.if
// STAGED: %[[NEXT:.*]] = arith.remui %[[AHEAD]], %c2
// STAGED-COUNT-8: nvgpu.device_async_copy %[[XR]][{{.*}}], %[[A]][%[[NEXT]], {{.*}}], 4 {bypassL1}
// STAGED-COUNT-2: nvgpu.device_async_copy %[[W]][{{.*}}], %[[B]][%[[NEXT]], {{.*}}], 8 {bypassL1}
// STAGED: %[[GROUP:.*]] = nvgpu.device_async_create_group
// STAGED: nvgpu.device_async_wait %[[GROUP]] {numGroups = 1 : i32}
// STAGED-NEXT: gpu.barrier
// STAGED-COUNT-8: vector.load %[[A]][%[[SLOT]], {{.*}} : memref<2x128x32xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// STAGED: vector.load %[[B]][%[[SLOT]], {{.*}} : memref<2x64x32xbf16, #gpu.address_space<workgroup>>, vector<4xbf16>
// STAGED-NOT: vector.load %[[XR]]
// STAGED: gpu.barrier
// STAGED-NEXT: scf.yield
// STAGED: gdn.tensor_core_projection = {block = array<i64: 128, 64>, mma = "m16n8k16.bf16", split_activations = true, stage_depth = 32 : i64, stages = 2 : i64, warp = array<i64: 64, 32>}
// Three stages (60 KiB): both tiles of this 64-deep reduction copied
// before the loop, a group each, and two groups left in flight at the
// wait; the tile two ahead would go to slot (tile + 2) mod 3.
// STAGES3-LABEL: func.func @projection
// STAGES3: gpu.launch {{.*}} dynamic_shared_memory_size %c61440_i32
// STAGES3: memref.view {{.*}} to memref<3x128x32xf32, #gpu.address_space<workgroup>>
// STAGES3: memref.view %{{.*}}[%c49152][] {{.*}} to memref<3x64x32xbf16, #gpu.address_space<workgroup>>
// STAGES3-COUNT-10: nvgpu.device_async_copy {{.*}}[%c0,
// STAGES3: nvgpu.device_async_create_group
// STAGES3-COUNT-10: nvgpu.device_async_copy {{.*}}[%c1,
// STAGES3: nvgpu.device_async_create_group
// STAGES3: scf.for
// STAGES3: arith.remui %{{.*}}, %c3
// STAGES3: nvgpu.device_async_wait %{{.*}} {numGroups = 2 : i32}
// STAGES3: stages = 3 : i64
// Split once (56 KiB): after the wait, each thread writes the bf16
// terms of the x elements it copied (eight rows of four) into two tiles
// after the weight's, and the warps load their A fragments from those.
// SPLIT-ONCE-LABEL: func.func @projection
// SPLIT-ONCE: gpu.launch {{.*}} dynamic_shared_memory_size %c57344_i32
// SPLIT-ONCE: %[[HI:.*]] = memref.view %{{.*}}[%c40960][] {{.*}} to memref<128x32xbf16, #gpu.address_space<workgroup>>
// SPLIT-ONCE: %[[LO:.*]] = memref.view %{{.*}}[%c49152][] {{.*}} to memref<128x32xbf16, #gpu.address_space<workgroup>>
// SPLIT-ONCE: nvgpu.device_async_wait
// SPLIT-ONCE-COUNT-16: vector.store {{.*}}, %{{.*}}[{{.*}}] {alignment = 8 : i64} : memref<128x32xbf16
// SPLIT-ONCE-NEXT: gpu.barrier
// SPLIT-ONCE-NOT: arith.truncf
// SPLIT-ONCE: vector.load %[[HI]]
// SPLIT-ONCE: vector.load %[[LO]]
// SPLIT-ONCE: nvvm.mma.sync
// SPLIT-ONCE: gpu.barrier
// SPLIT-ONCE: split_once
// BAD-STAGES: error: gdn-gpu-tensor-core-projections: tile-stages must be 0 (no staging) or 2 to 4, got 1
// CHECK-LABEL: func.func @projection
// CHECK-SAME: (%[[X:.*]]: memref<?x?x64xf32>, %[[W:.*]]: memref<100x64xbf16>, %[[Y:.*]]: memref<?x?x100xf32>)
// CHECK-DAG: %[[XR:.*]] = memref.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : memref<?x?x64xf32> into memref<?x64xf32>
// CHECK-DAG: %[[YR:.*]] = memref.collapse_shape %[[Y]] {{\[\[}}0, 1], [2]] : memref<?x?x100xf32> into memref<?x100xf32>
// CHECK: %[[M:.*]] = memref.dim %[[XR]], %{{.*}} : memref<?x64xf32>
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[BLOCKS:.*]] = arith.divui %[[M]], %[[C128]]
// CHECK: %[[WHOLE:.*]] = arith.muli %[[BLOCKS]], %[[C128]]
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// A grid of as many block rows as there are whole blocks: none for a
// decode step's few rows (the runtime skips an empty grid).
// CHECK-NOT: arith.maxui
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C2]], {{.*}} = %[[BLOCKS]]
// Two steps of 16 per iteration, 64 accumulators.
// CHECK: scf.for {{.*}} step %{{.*}} iter_args
// CHECK-COUNT-8: vector.load %[[XR]]{{.*}} : memref<?x64xf32>, vector<4xf32>
// CHECK: vector.load %[[W]]{{.*}} : memref<100x64xbf16>, vector<4xbf16>
// CHECK-COUNT-24: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// The ragged column block: stores guarded past column 100.
// CHECK: scf.if
// CHECK: memref.store {{.*}}, %[[YR]]
// CHECK: gdn.tensor_core_projection = {block = array<i64: 128, 64>, mma = "m16n8k16.bf16", split_activations = true, warp = array<i64: 64, 32>}
// CHECK: %[[XV:.*]] = memref.subview %[[XR]][%[[WHOLE]], 0]
// CHECK: %[[XE:.*]] = memref.expand_shape %[[XV]] {{\[\[}}0, 1], [2]]
// CHECK: %[[YV:.*]] = memref.subview %[[YR]][%[[WHOLE]], 0]
// CHECK: %[[YE:.*]] = memref.expand_shape %[[YV]]
// CHECK: linalg.contract {{.*}} ins(%[[XE]], %[[W]] : {{.*}}) outs(%[[YE]] :
// CHECK-NOT: linalg.contract
// Split activations: two products per tile and step (the hi and lo
// terms), 16 tiles, two steps.
// COUNT-LABEL: func.func @projection
// COUNT-COUNT-64: nvvm.mma.sync
// COUNT-NOT: nvvm.mma.sync
// COUNT-LABEL: func.func @cache_rows
// ROUNDED-LABEL: func.func @projection
// ROUNDED-COUNT-32: nvvm.mma.sync
// ROUNDED-NOT: nvvm.mma.sync
// ROUNDED: split_activations = false
// ROUNDED-LABEL: func.func @cache_rows
// With small-row-blocks=8, the rows after the whole blocks take tensor
// cores too where there are at least 8 of them (a test at run time): a
// grid of 64-row blocks over them, four warps of 16 rows by two of 32
// columns, the warps' rows from the whole blocks' end on; rows past the
// last one clamped on load (A and C) and never stored. Fewer rows keep the
// contract (a warp per output). No branch: whichever does not take the
// rows runs over nothing (an empty grid, an empty view), so that every
// launch stays on the step's one stream.
// SMALL-LABEL: func.func @projection
// SMALL: %[[M:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?x64xf32>
// SMALL: %[[WHOLE:.*]] = arith.muli
// SMALL: block = array<i64: 128, 64>
// SMALL: %[[LEFT:.*]] = arith.subi %[[M]], %[[WHOLE]]
// SMALL: %[[ENOUGH:.*]] = arith.cmpi uge, %[[LEFT]], %c8
// SMALL-NOT: scf.if
// SMALL: %[[CEIL:.*]] = arith.ceildivui %[[LEFT]], %c64
// SMALL: %[[SMALLBLOCKS:.*]] = arith.select %[[ENOUGH]], %[[CEIL]], %c0
// SMALL: gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}} = %[[SMALLBLOCKS]], {{.*}}) threads({{.*}}) in ({{.*}} = %c256,
// SMALL: %[[BLOCKFIRST:.*]] = arith.addi %[[WHOLE]], %{{.*}} : index
// SMALL: %[[FIRST:.*]] = arith.addi %[[BLOCKFIRST]], %{{.*}} : index
// SMALL: %[[LIVE:.*]] = arith.cmpi ult, %[[FIRST]], %[[M]]
// SMALL: scf.if %[[LIVE]] {
// SMALL: %[[LAST:.*]] = arith.subi %[[M]], %c1
// SMALL: arith.minui %{{.*}}, %[[LAST]]
// SMALL-COUNT-16: nvvm.mma.sync
// SMALL-NOT: nvvm.mma.sync
// SMALL: arith.cmpi ult, %{{.*}}, %[[M]]
// SMALL: arith.andi
// SMALL: memref.store
// SMALL: block = array<i64: 64, 64>, mma = "m16n8k16.bf16", split_activations = true, warp = array<i64: 16, 32>
// SMALL: %[[REST:.*]] = arith.select %[[ENOUGH]], %[[M]], %[[WHOLE]]
// SMALL: memref.subview %{{.*}}[%[[REST]], 0]
// SMALL: linalg.contract
// SMALL-LABEL: func.func @cache_rows
// BAD-SMALL: error: gdn-gpu-tensor-core-projections: small-row-blocks and small-row-min-outputs must be 0 or more, got -1 and 8192
// With the default small-row-min-outputs (8192), 100 outputs keep the
// warp per output for the rest rows.
// FEW-OUTPUTS-LABEL: func.func @projection
// FEW-OUTPUTS-NOT: array<i64: 64, 64>
// FEW-OUTPUTS: linalg.contract
// FEW-OUTPUTS-NOT: array<i64: 64, 64>
// FEW-OUTPUTS-LABEL: func.func @cache_rows
func.func @projection(%x: memref<?x?x64xf32>, %w: memref<100x64xbf16>, %y: memref<?x?x100xf32>) {
  linalg.contract indexing_maps = [#x, #w, #y] ins(%x, %w : memref<?x?x64xf32>, memref<100x64xbf16>) outs(%y : memref<?x?x100xf32>)
  return
}

// -----

#x = affine_map<(b, t, o, i) -> (b, t, i)>
#w = affine_map<(b, t, o, i) -> (o, i)>
#y = affine_map<(b, t, o, i) -> (b, t, o)>

// The rows of a cache (sequences the cache's room apart) are copied into a
// dense buffer first, which the kernel and the rest rows read.
// CHECK-LABEL: func.func @cache_rows
// CHECK-SAME: (%[[X:.*]]: memref<?x?x64xf32, strided<[?, 64, 1]>>
// CHECK: %[[DENSE:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x64xf32>
// CHECK: memref.copy %[[X]], %[[DENSE]]
// CHECK: memref.collapse_shape %[[DENSE]]
// CHECK: gpu.launch
// CHECK: linalg.contract {{.*}} ins(%{{.*}}, %{{.*}} : memref<1x?x64xf32, strided<[?, 64, 1], offset: ?>>
func.func @cache_rows(%x: memref<?x?x64xf32, strided<[?, 64, 1]>>, %w: memref<100x64xbf16>, %y: memref<?x?x100xf32>) {
  linalg.contract indexing_maps = [#x, #w, #y] ins(%x, %w : memref<?x?x64xf32, strided<[?, 64, 1]>>, memref<100x64xbf16>) outs(%y : memref<?x?x100xf32>)
  return
}

// -----

#x = affine_map<(b, t, o, i) -> (b, t, i)>
#w = affine_map<(b, t, o, i) -> (o, i)>
#y = affine_map<(b, t, o, i) -> (b, t, o)>

// A whole number of column blocks and an odd number of reduction steps:
// no guards, one step per iteration.
// CHECK-LABEL: func.func @even
// CHECK: gpu.launch
// The block guard (a block row past the whole rows does nothing).
// CHECK: scf.if
// CHECK-NOT: scf.if
// CHECK: scf.for {{.*}} to %{{.*}} step %[[STEP:.*]] iter_args
// CHECK-NOT: scf.if
// CHECK: gpu.terminator
func.func @even(%x: memref<2x?x48xf32>, %w: memref<128x48xbf16>, %y: memref<2x?x128xf32>) {
  linalg.contract indexing_maps = [#x, #w, #y] ins(%x, %w : memref<2x?x48xf32>, memref<128x48xbf16>) outs(%y : memref<2x?x128xf32>)
  return
}

// -----

#x = affine_map<(b, t, o, i) -> (b, t, i)>
#w = affine_map<(b, t, o, i) -> (o, i)>
#y = affine_map<(b, t, o, i) -> (b, t, o)>

// An f32 weight: left alone by default; with f32-weights split like x,
// three products per tile and step, its rows read 16 bytes at a time.
// CHECK-LABEL: func.func @f32_weight
// CHECK-NOT: gpu.launch
// CHECK: linalg.contract
// F32-LABEL: func.func @f32_weight
// F32: gpu.launch
// F32: vector.load %{{.*}} : memref<100x64xf32>, vector<4xf32>
// F32-COUNT-96: nvvm.mma.sync
// F32-NOT: nvvm.mma.sync
// F32-LABEL: func.func @left_alone
func.func @f32_weight(%x: memref<?x?x64xf32>, %wf: memref<100x64xf32>, %y: memref<?x?x100xf32>) {
  linalg.contract indexing_maps = [#x, #w, #y] ins(%x, %wf : memref<?x?x64xf32>, memref<100x64xf32>) outs(%y : memref<?x?x100xf32>)
  return
}

// -----

#x = affine_map<(b, t, o, i) -> (b, t, i)>
#w = affine_map<(b, t, o, i) -> (o, i)>
#y = affine_map<(b, t, o, i) -> (b, t, o)>

// Left alone: a reduction of 24 (not whole steps of 16), a strided x (a
// view whose rows need not be aligned), fewer outputs than a block's 64
// columns, and a contract that is not a projection.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: gpu.launch
// CHECK-COUNT-4: linalg.contract
// CHECK-NOT: gpu.launch
func.func @left_alone(%x: memref<?x?x64xf32>, %y: memref<?x?x100xf32>,
                      %x24: memref<?x?x24xf32>, %w24: memref<100x24xbf16>,
                      %xs: memref<?x?x64xf32, strided<[?, ?, 1], offset: ?>>, %w: memref<100x64xbf16>,
                      %w6: memref<6x64xbf16>, %y6: memref<?x?x6xf32>,
                      %a: memref<64x100xf32>, %b: memref<100x64xf32>, %c: memref<64x64xf32>) {
  linalg.contract indexing_maps = [#x, #w, #y] ins(%x24, %w24 : memref<?x?x24xf32>, memref<100x24xbf16>) outs(%y : memref<?x?x100xf32>)
  linalg.contract indexing_maps = [#x, #w, #y] ins(%xs, %w : memref<?x?x64xf32, strided<[?, ?, 1], offset: ?>>, memref<100x64xbf16>) outs(%y : memref<?x?x100xf32>)
  linalg.contract indexing_maps = [#x, #w, #y] ins(%x, %w6 : memref<?x?x64xf32>, memref<6x64xbf16>) outs(%y6 : memref<?x?x6xf32>)
  linalg.contract indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>] ins(%a, %b : memref<64x100xf32>, memref<100x64xf32>) outs(%c : memref<64x64xf32>)
  return
}

// -----

// MLA's absorbed scores: per (sequence, head) a product of the queries'
// rows against the shared keys, both f32 and split (three products per
// tile and step: lo x hi, hi x lo, hi x hi), the grid's depth B x heads;
// the query rows after the whole blocks stay the generic on views where
// they and the heads make fewer than small-row-blocks rows (SMALL below). The
// keys are a strided view (a cache with room for more rows): read element
// by element.
// CHECK-LABEL: func.func @scores
// CHECK-SAME: (%[[Q:.*]]: memref<?x?x12x32xf32>, %[[K:.*]]: memref<?x?x32xf32, strided<[?, 32, 1]>>, %[[S:.*]]: memref<?x12x?x?xf32>)
// CHECK: %[[BATCH:.*]] = memref.dim %[[Q]], %c0
// CHECK: %[[HEADS:.*]] = memref.dim %[[Q]], %c2
// CHECK: %[[DEPTH:.*]] = arith.muli %[[BATCH]], %[[HEADS]]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}}, %{{.*}} = %[[DEPTH]])
// CHECK: vector.load %[[Q]]{{.*}} : memref<?x?x12x32xf32>, vector<4xf32>
// CHECK-COUNT-4: memref.load %[[K]]
// CHECK: vector.from_elements
// CHECK: memref.store {{.*}}, %[[S]]
// CHECK: gdn.tensor_core_projection
// CHECK: %[[QV:.*]] = memref.subview %[[Q]]
// CHECK: %[[SV:.*]] = memref.subview %[[S]]
// CHECK: linalg.generic {{.*}} ins(%[[QV]], %[[K]] : {{.*}}) outs(%[[SV]] :
// 96 products in the whole blocks' kernel and, with the default
// small-row-blocks (8), 24 in the kernel of the heads as rows (one row
// tile of 16).
// COUNT-LABEL: func.func @scores
// COUNT-COUNT-120: nvvm.mma.sync
// COUNT-NOT: nvvm.mma.sync
// With small-row-blocks=8, the query tokens after the whole blocks take
// the tensor cores with the heads as rows where they make at least 8 rows
// (a decode step: one token, 12 heads): row r is token r / 12 and head
// r % 12 of its sequence, the grid's depth the batch, so every head's row
// shares each load of the keys; the generic on views otherwise.
// SMALL-LABEL: func.func @scores
// SMALL-SAME: (%[[Q:.*]]: memref<?x?x12x32xf32>, %[[K:.*]]: memref<?x?x32xf32, strided<[?, 32, 1]>>, %[[S:.*]]: memref<?x12x?x?xf32>)
// SMALL: %[[TOKENS:.*]] = memref.dim %[[Q]], %c1
// SMALL: %[[HEADS:.*]] = memref.dim %[[Q]], %c2
// SMALL: %[[WHOLE:.*]] = arith.muli %{{.*}}, %c128
// SMALL: block = array<i64: 128, 64>
// SMALL: %[[LEFT:.*]] = arith.subi %[[TOKENS]], %[[WHOLE]]
// SMALL: %[[ROWS:.*]] = arith.muli %[[LEFT]], %[[HEADS]]
// SMALL: %[[ENOUGH:.*]] = arith.cmpi uge, %[[ROWS]], %c8
// SMALL: %[[TAKEN:.*]] = arith.select %[[ENOUGH]], %[[ROWS]], %c0
// SMALL: %[[BLOCKS:.*]] = arith.ceildivui %[[TAKEN]], %c64
// SMALL: %[[BATCH:.*]] = memref.dim %[[Q]], %c0
// SMALL: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}} = %[[BLOCKS]], {{.*}} = %[[BATCH]]) threads({{.*}}) in ({{.*}} = %c256,
// SMALL: %[[HEADCOUNT:.*]] = memref.dim %[[Q]], %c2
// SMALL: %[[ROWHEAD:.*]] = arith.divui %{{.*}}, %[[HEADCOUNT]]
// SMALL: %[[TOKEN:.*]] = arith.addi %[[WHOLE]], %[[ROWHEAD]]
// SMALL: %[[HEAD:.*]] = arith.remui %{{.*}}, %[[HEADCOUNT]]
// SMALL: memref.load %[[S]][%{{.*}}, %[[HEAD]], %[[TOKEN]], %{{.*}}]
// SMALL: vector.load %[[Q]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {{.*}}: memref<?x?x12x32xf32>, vector<4xf32>
// SMALL-COUNT-24: nvvm.mma.sync
// SMALL-NOT: nvvm.mma.sync
// SMALL: memref.store %{{.*}}, %[[S]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]
// SMALL: block = array<i64: 64, 64>
// SMALL: %[[RESTTOKENS:.*]] = arith.select %[[ENOUGH]], %[[TOKENS]], %[[WHOLE]]
// SMALL: memref.subview %[[Q]][0, %[[RESTTOKENS]], 0, 0]
// SMALL: linalg.generic
func.func @scores(%q: memref<?x?x12x32xf32>, %k: memref<?x?x32xf32, strided<[?, 32, 1]>>, %s: memref<?x12x?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, n, t, s, r) -> (b, t, n, r)>, affine_map<(b, n, t, s, r) -> (b, s, r)>, affine_map<(b, n, t, s, r) -> (b, n, t, s)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : memref<?x?x12x32xf32>, memref<?x?x32xf32, strided<[?, 32, 1]>>) outs(%s : memref<?x12x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %p : f32
    linalg.yield %sum : f32
  }
  return
}

// -----

// MLA's attended latents: per (sequence, head) the softmax's rows against
// the latents, a product whose depth is the number of keys (dynamic): the
// whole steps of 16 keys in the loop, then one step across the last key,
// whose elements past it are zero and whose loads are clamped inside the
// operands. Both operands are read element by element (a row of dynamic
// length has no known alignment; B runs down the latents' columns), and
// the query rows after the whole blocks stay the generic on views.
// CHECK-LABEL: func.func @attended
// CHECK-SAME: (%[[P:.*]]: memref<?x12x?x?xf32>, %[[L:.*]]: memref<?x?x32xf32, strided<[?, 32, 1]>>, %[[O:.*]]: memref<?x?x12x32xf32>)
// CHECK: %[[BATCH:.*]] = memref.dim %[[P]], %c0
// CHECK: %[[HEADS:.*]] = memref.dim %[[P]], %c1
// CHECK: %[[DEPTH:.*]] = arith.muli %[[BATCH]], %[[HEADS]]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}}, %{{.*}} = %[[DEPTH]])
// CHECK: %[[KEYS:.*]] = memref.dim %[[P]], %c3
// CHECK: %[[STEPS:.*]] = arith.divui %[[KEYS]], %c16
// CHECK: %[[WHOLE:.*]] = arith.muli %[[STEPS]], %c16
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %[[WHOLE]] step %c16
// CHECK-NOT: vector.load
// CHECK: memref.load %[[P]]
// CHECK: memref.load %[[L]]
// CHECK: nvvm.mma.sync
// CHECK: %[[TAIL:.*]] = arith.cmpi ult, %[[WHOLE]], %[[KEYS]]
// CHECK: scf.if %[[TAIL]]
// CHECK: arith.minui
// CHECK: memref.load %[[P]]
// CHECK: arith.select
// CHECK: memref.store {{.*}}, %[[O]]
// CHECK: gdn.tensor_core_projection
// CHECK: %[[PV:.*]] = memref.subview %[[P]]
// CHECK: %[[OV:.*]] = memref.subview %[[O]]
// CHECK: linalg.generic {{.*}} ins(%[[PV]], %[[L]] : {{.*}}) outs(%[[OV]] :
// COUNT-LABEL: func.func @attended
// COUNT-COUNT-96: nvvm.mma.sync
// COUNT-NOT: nvvm.mma.sync
// ROUNDED-LABEL: func.func @attended
// ROUNDED-COUNT-32: nvvm.mma.sync
// ROUNDED-NOT: nvvm.mma.sync
func.func @attended(%p: memref<?x12x?x?xf32>, %l: memref<?x?x32xf32, strided<[?, 32, 1]>>, %o: memref<?x?x12x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, t, n, s, c) -> (b, n, t, s)>, affine_map<(b, t, n, s, c) -> (b, s, c)>, affine_map<(b, t, n, s, c) -> (b, t, n, c)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%p, %l : memref<?x12x?x?xf32>, memref<?x?x32xf32, strided<[?, 32, 1]>>) outs(%o : memref<?x?x12x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %m : f32
    linalg.yield %sum : f32
  }
  return
}

// -----

// MLA's products with a weight per head: the queries into the latent space
// (w[n, k, o], K down the weight's columns: read element by element) and
// the values out of it (w[n, o, k], a strided view of kv_b_proj: element
// by element too), bf16 weights, per (sequence, head) on the grid's depth;
// the token rows after the whole blocks stay the generics on views. An f32
// weight needs f32-weights.
// CHECK-LABEL: func.func @head_products
// CHECK-SAME: (%[[X:[^:]+]]: memref<?x?x12x64xf32>, %[[WK:[^:]+]]: memref<12x64x256xbf16>, %[[Q:[^:]+]]: memref<?x?x12x256xf32>, %[[WV:[^:]+]]: memref<12x64x256xbf16, strided<[32768, 256, 1], offset: 16384>>, %[[O:[^:]+]]: memref<?x?x12x64xf32>
// CHECK: %[[BATCH:.*]] = memref.dim %[[X]], %c0
// CHECK: %[[HEADS:.*]] = memref.dim %[[X]], %c2
// CHECK: %[[DEPTH:.*]] = arith.muli %[[BATCH]], %[[HEADS]]
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c4{{.*}}, {{.*}}, %{{.*}} = %[[DEPTH]])
// CHECK: vector.load %[[X]]{{.*}} : memref<?x?x12x64xf32>, vector<4xf32>
// CHECK-COUNT-4: memref.load %[[WK]]
// CHECK: memref.store {{.*}}, %[[Q]]
// CHECK: gdn.tensor_core_projection
// CHECK: %[[XV:.*]] = memref.subview %[[X]]
// CHECK: %[[QV:.*]] = memref.subview %[[Q]]
// CHECK: linalg.generic {{.*}} ins(%[[XV]], %[[WK]] : {{.*}}) outs(%[[QV]] :
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c1{{.*}}, {{.*}}, {{.*}})
// CHECK: memref.load %[[WV]]
// CHECK: memref.store {{.*}}, %[[O]]
// CHECK: gdn.tensor_core_projection
// CHECK: linalg.generic
// CHECK-NOT: gpu.launch
// CHECK: return
// Two products per tile and step with split activations (lo x w, hi x w:
// the bf16 weight is exact), two steps per iteration: 64 per product.
// COUNT-LABEL: func.func @head_products
// COUNT-COUNT-128: nvvm.mma.sync
// COUNT-NOT: nvvm.mma.sync
// ROUNDED-LABEL: func.func @head_products
// ROUNDED-COUNT-64: nvvm.mma.sync
// ROUNDED-NOT: nvvm.mma.sync
// F32-LABEL: func.func @head_products
// F32-COUNT-3: gpu.launch
// F32-NOT: gpu.launch
func.func @head_products(%x: memref<?x?x12x64xf32>, %wk: memref<12x64x256xbf16>, %q: memref<?x?x12x256xf32>,
                         %wv: memref<12x64x256xbf16, strided<[32768, 256, 1], offset: 16384>>, %o: memref<?x?x12x64xf32>,
                         %wf: memref<12x64x256xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, t, n, o, k) -> (b, t, n, k)>, affine_map<(b, t, n, o, k) -> (n, k, o)>, affine_map<(b, t, n, o, k) -> (b, t, n, o)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x, %wk : memref<?x?x12x64xf32>, memref<12x64x256xbf16>) outs(%q : memref<?x?x12x256xf32>) {
  ^bb0(%a: f32, %w: bf16, %acc: f32):
    %wide = arith.extf %w : bf16 to f32
    %m = arith.mulf %a, %wide : f32
    %sum = arith.addf %acc, %m : f32
    linalg.yield %sum : f32
  }
  linalg.generic {indexing_maps = [affine_map<(b, t, n, o, k) -> (b, t, n, k)>, affine_map<(b, t, n, o, k) -> (n, o, k)>, affine_map<(b, t, n, o, k) -> (b, t, n, o)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %wv : memref<?x?x12x256xf32>, memref<12x64x256xbf16, strided<[32768, 256, 1], offset: 16384>>) outs(%o : memref<?x?x12x64xf32>) {
  ^bb0(%a: f32, %w: bf16, %acc: f32):
    %wide = arith.extf %w : bf16 to f32
    %m = arith.mulf %a, %wide : f32
    %sum = arith.addf %acc, %m : f32
    linalg.yield %sum : f32
  }
  linalg.generic {indexing_maps = [affine_map<(b, t, n, o, k) -> (b, t, n, k)>, affine_map<(b, t, n, o, k) -> (n, k, o)>, affine_map<(b, t, n, o, k) -> (b, t, n, o)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x, %wf : memref<?x?x12x64xf32>, memref<12x64x256xf32>) outs(%q : memref<?x?x12x256xf32>) {
  ^bb0(%a: f32, %w: f32, %acc: f32):
    %m = arith.mulf %a, %w : f32
    %sum = arith.addf %acc, %m : f32
    linalg.yield %sum : f32
  }
  return
}

// -----

#x = affine_map<(b, t, o, i) -> (b, t, i)>
#w = affine_map<(b, t, o, i) -> (o, i)>
#y = affine_map<(b, t, o, i) -> (b, t, o)>

// A projection whose zero fill was folded into it (gdn-gpu-fold-fills):
// the kernel's accumulators start at 0 without reading the output, and
// the contract on the rest of the rows keeps the fill's value.
// CHECK-LABEL: func.func @folded_fill
// COUNT-LABEL: func.func @folded_fill
// ROUNDED-LABEL: func.func @folded_fill
// F32-LABEL: func.func @folded_fill
// CHECK-SAME: %[[Y:[a-z0-9]*]]: memref<?x?x100xf32>
// CHECK: %[[YR:.*]] = memref.collapse_shape %[[Y]]
// CHECK: gpu.launch
// CHECK-NOT: memref.load %[[YR]]
// CHECK: memref.store {{.*}}, %[[YR]]
// CHECK: gpu.terminator
// CHECK: linalg.contract {{.*}}gdn.reduction_init = 0.000000e+00 : f32
func.func @folded_fill(%x: memref<?x?x64xf32>, %w: memref<100x64xbf16>, %y: memref<?x?x100xf32>) {
  linalg.contract indexing_maps = [#x, #w, #y] ins(%x, %w : memref<?x?x64xf32>, memref<100x64xbf16>) outs(%y : memref<?x?x100xf32>) {gdn.reduction_init = 0.0 : f32}
  return
}

// -----

// The residual add after a projection runs in its kernels: the tiles add
// the residual to each value of C as they store it and write the sum, and
// the rest rows get the add again on views of the same rows, right after
// their contract (where the warp reduction runs it). A column vector (a
// bias) is read by the column.
#x = affine_map<(b, t, o, i) -> (b, t, i)>
#w = affine_map<(b, t, o, i) -> (o, i)>
#y = affine_map<(b, t, o, i) -> (b, t, o)>
// CHECK-LABEL: func.func @residual
// CHECK: gpu.launch
// CHECK: nvvm.mma.sync
// CHECK: memref.store %[[C:.*]], %collapse_shape{{.*}}[%[[ROW:.*]], %[[COL:.*]]]
// CHECK: %[[RES:.*]] = memref.load %{{.*}}[%[[ROW]], %[[COL]]]
// CHECK: %[[BIAS:.*]] = memref.load %arg4[%[[COL]]]
// CHECK: %[[SUM:.*]] = arith.addf %[[C]], %[[RES]]
// CHECK: arith.addf %[[SUM]], %[[BIAS]]
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK: linalg.contract {{.*}} outs(%[[REST:[a-z_0-9]+]] :
// CHECK: linalg.generic {{.*}} ins(%[[REST]], %{{.*}}, %arg4 :
// CHECK-NOT: linalg.generic
// CHECK: return
// NOEPILOGUE-LABEL: func.func @residual
// NOEPILOGUE: gpu.terminator
// NOEPILOGUE: linalg.contract
// NOEPILOGUE: linalg.generic {{.*}} ins(%arg2, %arg3, %arg4 :
// RUN: gdn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(gdn-gpu-tensor-core-projections{fuse-epilogues=false}))' | FileCheck %s --check-prefix=NOEPILOGUE
func.func @residual(%x: memref<?x?x64xf32>, %w: memref<128x64xbf16>, %y: memref<?x?x128xf32>, %r: memref<?x?x128xf32>, %bias: memref<128xf32>, %out: memref<?x?x128xf32>) {
  linalg.contract indexing_maps = [#x, #w, #y] ins(%x, %w : memref<?x?x64xf32>, memref<128x64xbf16>) outs(%y : memref<?x?x128xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, t, o) -> (b, t, o)>, affine_map<(b, t, o) -> (b, t, o)>,
                                   affine_map<(b, t, o) -> (o)>, affine_map<(b, t, o) -> (b, t, o)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%y, %r, %bias : memref<?x?x128xf32>, memref<?x?x128xf32>, memref<128xf32>) outs(%out : memref<?x?x128xf32>) {
  ^bb0(%v: f32, %res: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %res : f32
    %t = arith.addf %s, %b : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// An epilogue whose other rows have a dynamic length cannot be viewed
// like C's rows: it stays an op of its own after the rest rows.
#x = affine_map<(b, t, o, i) -> (b, t, i)>
#w = affine_map<(b, t, o, i) -> (o, i)>
#y = affine_map<(b, t, o, i) -> (b, t, o)>
// CHECK-LABEL: func.func @dynamic_residual
// CHECK: gpu.terminator
// CHECK: linalg.contract
// CHECK: linalg.generic {{.*}} ins(%arg2, %arg3 :
func.func @dynamic_residual(%x: memref<?x?x64xf32>, %w: memref<128x64xbf16>, %y: memref<?x?x128xf32>, %r: memref<?x?x?xf32>, %out: memref<?x?x?xf32>) {
  linalg.contract indexing_maps = [#x, #w, #y] ins(%x, %w : memref<?x?x64xf32>, memref<128x64xbf16>) outs(%y : memref<?x?x128xf32>)
  linalg.generic {indexing_maps = [affine_map<(b, t, o) -> (b, t, o)>, affine_map<(b, t, o) -> (b, t, o)>,
                                   affine_map<(b, t, o) -> (b, t, o)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%y, %r : memref<?x?x128xf32>, memref<?x?x?xf32>) outs(%out : memref<?x?x?xf32>) {
  ^bb0(%v: f32, %res: f32, %o: f32):
    %s = arith.addf %v, %res : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The attended latents of a decode step in groups of 32 keys (the absorbed
// form's key-split): with small-row-blocks, the heads of a sequence's
// tokens are the rows of one product per (sequence, group), 32 keys deep,
// the grid's depth batch x groups, so all the heads share each load of the
// group's latents; below small-row-blocks rows the generic, over the
// tokens from the first on, or over none. The latents are read four keys
// of a channel at a time (element by element: they run down a column),
// and the partial sums are stored at [sequence, token, head, channel,
// group]. The pass's default small-row-blocks (8) takes them too.
// CHECK-LABEL: func.func @attended_partials
// CHECK: gpu.launch
// CHECK-COUNT-24: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: linalg.generic
// SMALL-LABEL: func.func @attended_partials
// SMALL-SAME: (%[[P:.*]]: memref<?x12x?x?x32xf32>, %[[L:.*]]: memref<?x?x32x64xf32>, %[[O:.*]]: memref<?x?x12x64x?xf32>)
// SMALL: %[[BATCH:.*]] = memref.dim %[[P]], %c0
// SMALL: %[[HEADS:.*]] = memref.dim %[[P]], %c1
// SMALL: %[[TOKENS:.*]] = memref.dim %[[P]], %c2
// SMALL: %[[GROUPS:.*]] = memref.dim %[[P]], %c3
// SMALL: %[[ROWS:.*]] = arith.muli %[[TOKENS]], %[[HEADS]]
// SMALL: %[[ENOUGH:.*]] = arith.cmpi uge, %[[ROWS]], %c8
// SMALL: %[[TAKEN:.*]] = arith.select %[[ENOUGH]], %[[ROWS]], %c0
// SMALL: %[[BLOCKS:.*]] = arith.ceildivui %[[TAKEN]], %c64
// SMALL: %[[DEPTH:.*]] = arith.muli %[[BATCH]], %[[GROUPS]]
// SMALL: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}} = %[[BLOCKS]], {{.*}} = %[[DEPTH]]) threads({{.*}}) in ({{.*}} = %c256,
// SMALL: %[[GROUPCOUNT:.*]] = memref.dim %[[P]], %c3
// SMALL: %[[SEQ:.*]] = arith.divui %{{.*}}, %[[GROUPCOUNT]]
// SMALL: %[[GROUP:.*]] = arith.remui %{{.*}}, %[[GROUPCOUNT]]
// SMALL: vector.load %[[P]][%[[SEQ]], %{{.*}}, %{{.*}}, %[[GROUP]], %{{.*}}]
// SMALL: memref.load %[[L]][%[[SEQ]], %[[GROUP]], %{{.*}}, %{{.*}}]
// SMALL-COUNT-3: memref.load %[[L]]
// SMALL: nvvm.mma.sync
// SMALL: memref.store %{{.*}}, %[[O]][%[[SEQ]], %{{.*}}, %{{.*}}, %{{.*}}, %[[GROUP]]]
// SMALL: block = array<i64: 64, 64>
// SMALL: %[[FIRST:.*]] = arith.select %[[ENOUGH]], %[[TOKENS]], %c0
// SMALL: memref.subview %[[P]][0, 0, %[[FIRST]], 0, 0]
// SMALL: memref.subview %[[O]][0, %[[FIRST]], 0, 0, 0]
// SMALL: linalg.generic
func.func @attended_partials(%p: memref<?x12x?x?x32xf32>, %l: memref<?x?x32x64xf32>, %o: memref<?x?x12x64x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, t, n, g, c, s) -> (b, n, t, g, s)>, affine_map<(b, t, n, g, c, s) -> (b, g, s, c)>, affine_map<(b, t, n, g, c, s) -> (b, t, n, c, g)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %l : memref<?x12x?x?x32xf32>, memref<?x?x32x64xf32>) outs(%o : memref<?x?x12x64x?xf32>) attrs = {gdn.reduction_init = 0.0 : f32} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %m : f32
    linalg.yield %sum : f32
  }
  return
}

// -----

// The RoPE part of the scores: the queries are a slice of each head's
// row (a strided view), read element by element like the cached keys.
// CHECK-LABEL: func.func @rope_scores
// CHECK-SAME: (%[[Q:.*]]: memref<?x?x12x64xf32, strided<[?, 1152, 96, 1], offset: 32>>,
// CHECK: gpu.launch
// CHECK-COUNT-4: memref.load %[[Q]]
// CHECK: nvvm.mma.sync
// CHECK: gdn.tensor_core_projection
func.func @rope_scores(%q: memref<?x?x12x64xf32, strided<[?, 1152, 96, 1], offset: 32>>, %k: memref<?x?x64xf32, strided<[?, 64, 1]>>, %s: memref<?x12x?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, n, t, s, r) -> (b, t, n, r)>, affine_map<(b, n, t, s, r) -> (b, s, r)>, affine_map<(b, n, t, s, r) -> (b, n, t, s)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : memref<?x?x12x64xf32, strided<[?, 1152, 96, 1], offset: 32>>, memref<?x?x64xf32, strided<[?, 64, 1]>>) outs(%s : memref<?x12x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %sum = arith.addf %acc, %p : f32
    linalg.yield %sum : f32
  }
  return
}
