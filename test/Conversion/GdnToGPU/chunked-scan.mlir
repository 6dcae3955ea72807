// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy=context-segments=1 -convert-gdn-to-gpu | FileCheck %s
// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy='value-tile=32 scan-warps=8 context-segments=1' -convert-gdn-to-gpu | FileCheck %s --check-prefix=TILE
// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy='chunked-prefill=false' -convert-gdn-to-gpu | FileCheck %s --check-prefix=RECURRENT
// RUN: not gdn-opt %s -split-input-file -gdn-choose-scan-strategy=scan-warps=3 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: not gdn-opt %s -split-input-file -gdn-choose-scan-strategy=value-tile=12 2>&1 | FileCheck %s --check-prefix=VTILE
// RUN: gdn-opt %s -split-input-file --pass-pipeline='builtin.module(gdn-lower-to-cuda{binary-format=isa context-segments=1})' | FileCheck %s --check-prefix=PTX

// WARPS: gdn-choose-scan-strategy: scan-warps must be 4 or 8, but got 3
// VTILE: gdn-choose-scan-strategy: value-tile must be a positive multiple of 8, but got 12

// bf16 prefill becomes the chunked scan, two launches over global scratch
// (per chunk row: T diag(beta) and P in bf16, G in f32): the WY kernel
// over (chunks, Hv, B) computes the state-independent part of every chunk
// at once; the state kernel over (Hv x V / value tile, B) walks the chunks
// in order. Both have 4 warps, tiles in dynamic workgroup memory and every
// product on mma.sync.
// CHECK-LABEL: func.func @prefill
// CHECK-NOT: gdn.delta_rule
// CHECK: %[[CHUNKS:.+]] = arith.ceildivui %dim_{{[0-9]+}}, %c64
// CHECK: %[[TP:.+]] = arith.muli %[[CHUNKS]], %c64
// The scratch is allocated like any temporary (device memory and its
// stream order come later, from gdn-gpu-device-buffers and
// gpu-async-region): no synchronization of its own.
// CHECK-NOT: gpu.wait
// CHECK: %[[TB:[a-z0-9_]+]] = memref.alloc(%dim, %[[TP]]) : memref<?x4x?x64xbf16>
// CHECK: %[[P:[a-z0-9_]+]] = memref.alloc(%dim, %[[TP]]) : memref<?x4x?x64xbf16>
// CHECK: %[[G:[a-z0-9_]+]] = memref.alloc(%dim, %[[TP]]) : memref<?x4x?xf32>
// CHECK-NOT: gpu.alloc
// CHECK-NOT: gpu.wait
// bf16 K, Q [64, 136] (T's diagonal blocks [64, 17] f32 later in Q's
// place); f32 A, then T in place [64, 68]; three chunk vectors: 52992
// bytes.
// CHECK: gpu.launch blocks({{.+}}) in (%{{[a-z0-9_]+}} = %[[CHUNKS]], %{{[a-z0-9_]+}} = %c4{{[_0-9]*}}, %{{[a-z0-9_]+}} = %dim)
// CHECK-SAME: threads({{.+}}) in (%{{[a-z0-9_]+}} = %c128,
// CHECK-SAME: dynamic_shared_memory_size %c52992_i32
// CHECK: gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.+}} to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[TS:.+]] = memref.view {{.+}} to memref<64x68xf32, #gpu.address_space<workgroup>>
// The gates' loads issue first (zeros past the end of the sequence); bf16
// q and k go by cp.async into row-major tiles, 16 bytes per copy (a whole
// chunk without clamping, the last one zero-filled past the end of the
// sequence), in flight while the gates are stored and summed; the
// cumulative log-decays go to global memory. v is not read.
// CHECK: %[[GATES:.+]]:2 = scf.if
// CHECK: memref.load %{{.+}} : memref<?x?x4xf32>
// CHECK: %[[WHOLE:.+]] = arith.cmpi ule, %{{.+}}, %dim
// CHECK: scf.if %[[WHOLE]] {
// CHECK: nvgpu.device_async_copy %{{.+}}, %{{.+}}, 8 {bypassL1} : memref<?x?x2x128xbf16> to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK: } else {
// CHECK: %[[INSIDE:.+]] = arith.cmpi ult, %{{.+}}, %dim
// CHECK: %[[ELEMENTS:.+]] = arith.select %[[INSIDE]], %c8{{[_0-9]*}}, %c0
// CHECK: nvgpu.device_async_copy %{{.+}}, %{{.+}}, 8, %[[ELEMENTS]] {bypassL1} : memref<?x?x2x128xbf16> to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK-NOT: memref<?x?x4x128xbf16> to
// CHECK: %[[INPUTS:.+]] = nvgpu.device_async_create_group
// CHECK: memref.store %[[GATES]]#0
// CHECK: memref.store %[[GATES]]#1
// CHECK: gpu.barrier
// CHECK: memref.store %{{.+}}, %[[G]]
// CHECK: nvgpu.device_async_wait %[[INPUTS]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// Fragments by ldmatrix: four 8 x 8 matrices of A, two of B^T.
// CHECK: nvgpu.ldmatrix %{{.+}} {numTiles = 4 : i32, transpose = false} : memref<64x136xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK: nvgpu.ldmatrix %{{.+}} {numTiles = 2 : i32, transpose = false} : memref<64x136xbf16, #gpu.address_space<workgroup>> -> vector<2x2xbf16>
// CHECK: nvvm.mma.sync A[{{.+}}] B[{{.+}}] C[{{.+}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// The products' results leave in pairs of neighbours (one 4-byte store).
// CHECK: vector.store %{{.+}}, %[[P]][{{.+}}] {alignment = 4 : i64} : memref<?x4x?x64xbf16>, vector<2xbf16>
// After the solve, T diag(beta) leaves in rows of 16-byte stores: 8
// columns of T and of beta per step.
// CHECK: %[[T8:.+]] = vector.load %[[TS]][{{.+}}] {alignment = 16 : i64} : memref<64x68xf32, #gpu.address_space<workgroup>>, vector<8xf32>
// CHECK: %[[BETA8:.+]] = vector.load %{{.+}} {alignment = 16 : i64} : memref<64xf32, #gpu.address_space<workgroup>>, vector<8xf32>
// CHECK: %[[TBETA:.+]] = arith.mulf %[[T8]], %[[BETA8]] : vector<8xf32>
// CHECK: %[[HALVES:.+]] = arith.truncf %[[TBETA]] : vector<8xf32> to vector<8xbf16>
// CHECK: vector.store %[[HALVES]], %[[TB]][{{.+}}] {alignment = 16 : i64} : memref<?x4x?x64xbf16>, vector<8xbf16>
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
// CHECK-NEXT: } {gdn.chunked_scan = {chunk = 64 : i64, copy_warps = 0 : i64, kernel = "wy", mma = "m16n8k16.bf16", value_tile = 128 : i64, warps = 4 : i64}}
// The widest value tile (not below 32) whose grid has a block for 7/8 of
// the 132 multiprocessors: 4 heads x 2 tiles of 64 x B >= 115: tile 64;
// else tile 32. Both are launched, and the one not chosen returns at
// once (an scf.if in host code would cut its stream into synchronized
// pieces).
// CHECK: %[[B64:.+]] = arith.muli %dim, %c8
// CHECK: %[[BUSY64:.+]] = arith.cmpi uge, %[[B64]], %c115
// CHECK: %[[IDLE64:.+]] = arith.cmpi ult, %[[B64]], %c115
// Two slots each of bf16 Q, K [64, 136], T diag(beta), P and V [64, 72],
// of the chunk's f32 log-decays [64] and row factors [2, 64]; X, Vnew and
// its decayed rows [64, 72], S [128, 72]: 172544 bytes (the f32 state and
// exp(G) Q S stay in registers). Four compute warps and two copy warps.
// CHECK: gpu.launch blocks({{.+}}) in (%{{[a-z0-9_]+}} = %c8{{[_0-9]*}}, %{{[a-z0-9_]+}} = %dim
// CHECK-SAME: threads({{.+}}) in (%{{[a-z0-9_]+}} = %c192,
// CHECK-SAME: dynamic_shared_memory_size %c172544_i32
// CHECK-NEXT: scf.if %[[BUSY64]]
// CHECK: %[[QSLOTS:.+]] = memref.view {{.+}} to memref<2x64x136xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[KSLOTS:.+]] = memref.view {{.+}} to memref<2x64x136xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[TSLOTS:.+]] = memref.view {{.+}} to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[PSLOTS:.+]] = memref.view {{.+}} to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[VSLOTS:.+]] = memref.view {{.+}} to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[GSLOTS:.+]] = memref.view {{.+}} to memref<2x64xf32, #gpu.address_space<workgroup>>
// CHECK: %[[FSLOTS:.+]] = memref.view {{.+}} to memref<2x2x64xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: xf32, #gpu.address_space<workgroup>>
// The compute warps (threads 0-127) walk the chunks with the f32 state
// tile in registers, 64 elements per thread carried by the chunk loop:
// each chunk starts at the hand-over barrier of all 192 threads (the
// unaligned barrier.sync: the copy warps reach it from other code); then
// the chunk's row factors from its gates and a barrier of the 128,
// X = V - e^G K S and Y = e^G Q S, a barrier of the 128, Vnew = T diag(beta) X,
// another barrier, the state update and O, and a last barrier of the 128
// (the warps reach the next hand-over together); no global load.
// CHECK: %[[COMPUTES:.+]] = arith.cmpi ult, %{{.+}}, %c128
// CHECK: scf.if %[[COMPUTES]] {
// CHECK: %[[FINAL:.+]]:64 = scf.for {{.+}} -> (f32, f32,
// CHECK: llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.count"(%c1_i32, %c192_i32)
// CHECK: memref.load %[[GSLOTS]]
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: memref.store %{{.+}}, %[[FSLOTS]]
// CHECK: nvvm.barrier id = %{{.+}} number_of_threads = %c128_i32
// CHECK-NOT: nvvm.barrier
// CHECK-NOT: vector.load
// K S and Q S in one pass over S's fragments; v's pairs in 4-byte loads.
// CHECK: nvgpu.ldmatrix %[[KSLOTS]]
// CHECK: nvgpu.ldmatrix %[[QSLOTS]]
// CHECK: nvvm.mma.sync
// CHECK: vector.load %[[VSLOTS]][{{.+}}] {alignment = 4 : i64} : memref<2x64x72xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK: nvvm.barrier id = %{{.+}} number_of_threads = %c128_i32
// CHECK-NOT: nvvm.barrier
// CHECK: nvgpu.ldmatrix %[[TSLOTS]]
// CHECK: nvvm.barrier id = %{{.+}} number_of_threads = %c128_i32
// CHECK-NOT: nvvm.barrier
// CHECK: nvgpu.ldmatrix %[[KSLOTS]]{{.+}}transpose = true
// CHECK: nvgpu.ldmatrix %[[PSLOTS]]
// CHECK: nvvm.barrier id = %{{.+}} number_of_threads = %c128_i32
// CHECK-NEXT: scf.yield
// Each thread stores the final state it holds, in pairs, without a barrier.
// CHECK-NOT: nvvm.barrier
// CHECK: %[[PAIR:.+]] = vector.from_elements %[[FINAL]]#0, %[[FINAL]]#1 : vector<2xf32>
// CHECK-NEXT: vector.store %[[PAIR]], %{{.+}} {alignment = 8 : i64} : memref<?x4x128x128xf32>, vector<2xf32>
// The copy warps put every operand of a chunk into its slot by cp.async,
// q, k and v straight from the operands: a whole chunk without clamping, the
// last (partial) one zero-filled past the end of the sequence. Chunk 0
// first, then in each iteration the wait for the chunk's copies, the
// hand-over, and the next chunk's copies into the other slots: the copy
// warps store nothing but by cp.async.
// CHECK: } else {
// CHECK-NOT: nvvm.mma.sync
// CHECK: %[[WHOLE:.+]] = arith.cmpi ule, %{{.+}}, %dim
// CHECK: scf.if %[[WHOLE]] {
// CHECK: nvgpu.device_async_copy %{{.+}}[{{.+}}], %[[QSLOTS]][%c0{{[_0-9]*}}, {{.+}}], 8 {bypassL1} : memref<?x?x2x128xbf16> to memref<2x64x136xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.+}}[{{.+}}], %[[KSLOTS]][{{.+}}], 8 {bypassL1} : memref<?x?x2x128xbf16> to memref<2x64x136xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.+}}[{{.+}}], %[[VSLOTS]][{{.+}}], 8 {bypassL1} : memref<?x?x4x128xbf16> to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: } else {
// CHECK: nvgpu.device_async_copy %{{.+}}[{{.+}}], %[[QSLOTS]][{{.+}}], 8, %{{.+}} {bypassL1} : memref<?x?x2x128xbf16> to memref<2x64x136xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.+}}[{{.+}}], %[[KSLOTS]][{{.+}}], 8, %{{.+}} {bypassL1} : memref<?x?x2x128xbf16> to memref<2x64x136xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.+}}[{{.+}}], %[[VSLOTS]][{{.+}}], 8, %{{.+}} {bypassL1} : memref<?x?x4x128xbf16> to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: }
// CHECK: nvgpu.device_async_copy %[[TB]][{{.+}}], %[[TSLOTS]]
// CHECK: nvgpu.device_async_copy %[[P]][{{.+}}], %[[PSLOTS]]
// CHECK: nvgpu.device_async_copy %[[G]][{{.+}}], %[[GSLOTS]][{{.+}}], 4 {bypassL1} : memref<?x4x?xf32> to memref<2x64xf32, #gpu.address_space<workgroup>>
// CHECK: %[[CHUNK0:.+]] = nvgpu.device_async_create_group
// CHECK: scf.yield %[[CHUNK0]]
// CHECK: } else {
// CHECK: %[[NOTHING:.+]] = nvgpu.device_async_create_group
// CHECK: scf.yield %[[NOTHING]]
// CHECK: scf.for {{.+}} iter_args(%[[CARRIED:.+]] = %{{.+}})
// CHECK: nvgpu.device_async_wait %[[CARRIED]] {numGroups = 0 : i32}
// CHECK-NOT: memref.store
// CHECK: llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.count"(%c1_i32{{[_0-9]*}}, %c192_i32{{[_0-9]*}})
// CHECK: nvgpu.device_async_copy %{{.+}}, %[[QSLOTS]]
// CHECK: nvgpu.device_async_create_group
// CHECK: scf.yield
// CHECK: nvgpu.device_async_wait
// CHECK: gpu.terminator
// CHECK-NEXT: } {gdn.chunked_scan = {chunk = 64 : i64, copy_warps = 2 : i64, kernel = "state", mma = "m16n8k16.bf16", value_tile = 64 : i64, warps = 4 : i64}}
// CHECK: gpu.launch blocks({{.+}}) in (%{{[a-z0-9_]+}} = %c16{{[_0-9]*}}, %{{[a-z0-9_]+}} = %dim
// CHECK-SAME: dynamic_shared_memory_size %c143872_i32
// CHECK-NEXT: scf.if %[[IDLE64]]
// CHECK: {gdn.chunked_scan = {chunk = 64 : i64, copy_warps = 2 : i64, kernel = "state", mma = "m16n8k16.bf16", value_tile = 32 : i64, warps = 4 : i64}}
// CHECK-NOT: value_tile = 16
// CHECK-NOT: gpu.wait
// CHECK-NOT: gpu.dealloc
// TILE: threads({{.+}}) in (%{{[a-z0-9_]+}} = %c256,
// TILE: {gdn.chunked_scan = {chunk = 64 : i64, copy_warps = 0 : i64, kernel = "wy", mma = "m16n8k16.bf16", value_tile = 128 : i64, warps = 8 : i64}}
// TILE: threads({{.+}}) in (%{{[a-z0-9_]+}} = %c320,
// TILE: {gdn.chunked_scan = {chunk = 64 : i64, copy_warps = 2 : i64, kernel = "state", mma = "m16n8k16.bf16", value_tile = 32 : i64, warps = 8 : i64}}
// TILE-NOT: value_tile = 64
// TILE-NOT: value_tile = 16
// RECURRENT-LABEL: func.func @prefill
// RECURRENT-NOT: gdn.chunked_scan
// RECURRENT-NOT: nvvm.mma.sync
// PTX-LABEL: llvm.func @prefill(
// Three blocks of the WY kernel and one of the state kernel fit a
// multiprocessor by workgroup memory; registers are kept to match
// (.minnctapersm). The state kernel stages by cp.async.
// PTX: gpu.binary @gdn_scan_wy {{.+}}.target sm_90a
// PTX-SAME: .minnctapersm 3
// PTX-SAME: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-SAME: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX: gpu.binary @gdn_scan_state {{.+}}.minnctapersm 1
// PTX-SAME: barrier.sync {{[^;]+}}, 192;
// PTX-SAME: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
// PTX-SAME: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-SAME: bar.sync {{[^;]+}}, 128;
// PTX-SAME: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-SAME: cp.async.cg.shared.global [%rd{{[0-9+]+}}], [%rd{{[0-9]+}}], 16;
// PTX-SAME: cp.async.wait_group {{.+}}0;
// PTX: gpu.binary @gdn_scan_state_0 {{.+}}.minnctapersm 1
// PTX-NOT: gpu.binary @gdn_scan_segment
func.func @prefill(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x4x128xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>, %h: tensor<?x4x128x128xf32>) -> (tensor<?x?x4x128xbf16>, tensor<?x4x128x128xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h) {scale = 0.088 : f32} : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x128x128xf32>) -> (tensor<?x?x4x128xbf16>, tensor<?x4x128x128xf32>)
  return %o, %s : tensor<?x?x4x128xbf16>, tensor<?x4x128x128xf32>
}

// -----

// f32 inputs keep the exact recurrence; so does the decode step.
// CHECK-LABEL: func.func @prefill_f32
// CHECK-NOT: gdn.chunked_scan
// CHECK-NOT: nvvm.mma.sync
// CHECK: return
// CHECK-LABEL: func.func @step_bf16
// CHECK-NOT: gdn.chunked_scan
// CHECK: return
// TILE-LABEL: func.func @prefill_f32
// RECURRENT-LABEL: func.func @prefill_f32
// PTX-LABEL: llvm.func @prefill_f32(
// PTX-NOT: mma.sync
func.func @prefill_f32(%q: tensor<?x?x2x64xf32>, %k: tensor<?x?x2x64xf32>, %v: tensor<?x?x2x64xf32>, %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>)
  return %o, %s : tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>
}
func.func @step_bf16(%q: tensor<?x2x128xbf16>, %k: tensor<?x2x128xbf16>, %v: tensor<?x4x128xbf16>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %state: tensor<?x4x128x128xf32>) -> (tensor<?x4x128xbf16>, tensor<?x4x128x128xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %state : (tensor<?x2x128xbf16>, tensor<?x2x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x128x128xf32>) -> (tensor<?x4x128xbf16>, tensor<?x4x128x128xf32>)
  return %o, %s : tensor<?x4x128xbf16>, tensor<?x4x128x128xf32>
}

// -----

// f16 q, k, v run the tensor cores' f16 form: they go by cp.async straight
// into f16 tiles as bf16 inputs do (no copies), and every 16-bit tile and
// scratch buffer of the scan is f16, so that the inputs' 10-bit mantissas
// are not rounded to bf16's 7.
// CHECK-LABEL: func.func @prefill_f16
// CHECK-NOT: xbf16>
// CHECK: memref.alloc({{.+}}) : memref<?x4x?x64xf16>
// CHECK: memref.alloc({{.+}}) : memref<?x4x?x64xf16>
// CHECK: memref.alloc({{.+}}) : memref<?x4x?xf32>
// CHECK-NOT: xbf16>
// CHECK: nvgpu.device_async_copy {{.+}} : memref<?x?x2x64xf16> to memref<64x72xf16
// CHECK: kernel = "wy", mma = "m16n8k16.f16"
// CHECK: nvgpu.device_async_copy {{.+}} : memref<?x?x2x64xf16> to memref<2x64x72xf16
// CHECK: nvgpu.device_async_copy {{.+}} : memref<?x?x4x128xf16> to memref<2x64x72xf16
// CHECK: kernel = "state", mma = "m16n8k16.f16"
// CHECK-NOT: xbf16>
// CHECK: return
// PTX-LABEL: llvm.func @prefill_f16(
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-NOT: bf16
// PTX: {{^}}// -----
func.func @prefill_f16(%q: tensor<?x?x2x64xf16>, %k: tensor<?x?x2x64xf16>, %v: tensor<?x?x4x128xf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>) -> (tensor<?x?x4x128xf16>, tensor<?x4x64x128xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta {scale = 0.125 : f32} : (tensor<?x?x2x64xf16>, tensor<?x?x2x64xf16>, tensor<?x?x4x128xf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x128xf16>, tensor<?x4x64x128xf32>)
  return %o, %s : tensor<?x?x4x128xf16>, tensor<?x4x64x128xf32>
}

// -----

// Where the state product's tiles do not divide among the warps (K = V =
// 16: two tiles for four warps), the f32 state stays in workgroup memory
// and the final state leaves from there, one element per store.
// CHECK-LABEL: func.func @prefill_narrow
// CHECK: kernel = "wy"
// CHECK: memref.view {{.+}} to memref<16x20xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: vector.store {{.+}} : memref<1x1x16x16xf32>
// CHECK: memref.store %{{.+}}, %{{.+}} : memref<1x1x16x16xf32>
// CHECK: kernel = "state"
func.func @prefill_narrow(%q: tensor<1x?x1x16xbf16>, %k: tensor<1x?x1x16xbf16>, %v: tensor<1x?x1x16xbf16>, %g: tensor<1x?x1xf32>, %beta: tensor<1x?x1xf32>) -> (tensor<1x?x1x16xbf16>, tensor<1x1x16x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta {scale = 0.25 : f32} : (tensor<1x?x1x16xbf16>, tensor<1x?x1x16xbf16>, tensor<1x?x1x16xbf16>, tensor<1x?x1xf32>, tensor<1x?x1xf32>) -> (tensor<1x?x1x16xbf16>, tensor<1x1x16x16xf32>)
  return %o, %s : tensor<1x?x1x16xbf16>, tensor<1x1x16x16xf32>
}
