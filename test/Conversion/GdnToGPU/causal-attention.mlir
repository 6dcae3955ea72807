// RUN: gdn-opt %s -split-input-file -convert-gdn-to-gpu | FileCheck %s
// RUN: gdn-opt %s -split-input-file -convert-gdn-to-gpu=split-attention-operands=false | FileCheck %s --check-prefix=ROUNDED
// RUN: gdn-opt %s -split-input-file --pass-pipeline='builtin.module(gdn-lower-to-cuda{binary-format=isa})' | FileCheck %s --check-prefix=PTX
// RUN: gdn-opt %s -split-input-file -convert-gdn-to-gpu=attention-vector-rows=1 | FileCheck %s --check-prefix=VECTOR

// MLA's heads (96 query/key elements: 64 nope + 32 rope; 64 values),
// grouped: one launch over (query blocks of 64, heads, sequences) of four
// warps, with the hi and lo bf16 tiles of Q, K [64, 96 + 8] and V [64, 64 +
// 8] in workgroup memory (2 x (13312 + 13312 + 9216) bytes).
// CHECK-LABEL: func.func @grouped
// CHECK-NOT: gdn.causal_attention
// CHECK: %[[O:.+]] = memref.alloc(%{{.+}}, %[[T:.+]]) : memref<?x?x4x64xf32>
// CHECK: %[[BLOCKS:.+]] = arith.ceildivui %[[T]], %c64
// CHECK: %[[SMEM:.+]] = arith.constant 71680 : i32
// CHECK: gpu.launch blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %[[BLOCKS]], %{{.+}} = %c4{{.*}}, %{{.+}} = %dim{{.*}}) threads(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %c128{{.*}}, %{{.+}} = %c1{{.*}}, %{{.+}} = %c1{{.*}}) dynamic_shared_memory_size %[[SMEM]]
// The query head's key head: h / 2.
// CHECK: arith.divui %{{.+}}, %c2
// The key blocks up to the block's last query position, carrying the
// running maximum and sum of the lane's two rows and its 8 x 4 output
// accumulators.
// CHECK: %{{.+}}:36 = scf.for %{{.+}} = %c0{{.*}} to %{{.+}} step %c64{{.*}} iter_args(
// Keys and values staged, then the scores: 6 depth steps x 8 tiles x 3
// split products; the causal mask; the running maximum over the quad; the
// probabilities as A fragments for 4 steps x 8 value tiles x 3 products.
// CHECK: gpu.barrier
// CHECK-COUNT-144: nvvm.mma.sync
// CHECK: arith.cmpi ule
// CHECK: gpu.shuffle xor
// CHECK: llvm.nvvm.ex2.approx.ftz.f
// CHECK-COUNT-96: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK: scf.yield
// The sum over the quad, and the rows inside the sequence stored.
// CHECK: gpu.shuffle xor
// CHECK: arith.divf
// CHECK: scf.if
// CHECK: memref.store %{{.+}}, %[[O]]
// CHECK: gpu.terminator
// CHECK: } {gdn.tensor_core_attention = {key_block = 64 : i64, mma = "m16n8k16.bf16", query_block = 64 : i64, split = true, vector_rows = false, warps = 4 : i64}}
// No T x S buffer.
// CHECK-NOT: memref.alloc
// CHECK: return
// ROUNDED-LABEL: func.func @grouped
// ROUNDED: arith.constant 35840 : i32
// ROUNDED-COUNT-48: nvvm.mma.sync
// ROUNDED: split = false
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
func.func @grouped(%q: tensor<?x?x4x96xf32>, %k: tensor<?x?x2x96xf32>, %v: tensor<?x?x2x64xf32>) -> tensor<?x?x4x64xf32> {
  %o = gdn.causal_attention %q, %k, %v {scale = 0.102 : f32} : (tensor<?x?x4x96xf32>, tensor<?x?x2x96xf32>, tensor<?x?x2x64xf32>) -> tensor<?x?x4x64xf32>
  return %o : tensor<?x?x4x64xf32>
}

// -----

// Heads that are not multiples of the steps (16 query/key, 12 values) are
// zero-padded in the tiles: V's columns are masked as they are staged, and
// only the 12 real output columns are stored.
// With attention-vector-rows, rows of 96 and 64 f32 are staged 8
// elements at a time by two aligned 16-byte loads, the rows past the
// tokens zeroed by one select; no element loads.
// VECTOR-LABEL: func.func @grouped
// VECTOR-NOT: memref.load
// VECTOR: %[[LO:.+]] = vector.load %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] {alignment = 16 : i64} : memref<?x?x4x96xf32>, vector<4xf32>
// VECTOR: %[[HI:.+]] = vector.load %{{.+}} {alignment = 16 : i64} : memref<?x?x4x96xf32>, vector<4xf32>
// VECTOR: %[[ROW:.+]] = vector.shuffle %[[LO]], %[[HI]] [0, 1, 2, 3, 4, 5, 6, 7]
// VECTOR: arith.select %{{.+}}, %[[ROW]], %{{.+}} : vector<8xf32>
// VECTOR-NOT: memref.load
// VECTOR: vector.load %{{.+}} : memref<?x?x2x96xf32>, vector<4xf32>
// VECTOR-NOT: memref.load
// VECTOR: vector.load %{{.+}} : memref<?x?x2x64xf32>, vector<4xf32>
// VECTOR-NOT: memref.load %{{.+}} : memref<?x?x2x{{.+}}xf32>
// VECTOR: vector_rows = true
// Values of 12 elements, padded to 16, keep the loads of one element.
// VECTOR-LABEL: func.func @padded
// VECTOR: vector.load %{{.+}} : memref<2x70x2x16xf32>, vector<4xf32>
// VECTOR: memref.load %{{.+}} : memref<2x100x2x12xf32>
// CHECK-LABEL: func.func @padded
// CHECK: gpu.launch
// CHECK: %[[E:.+]] = arith.constant 12 : index
// CHECK: arith.cmpi ult, %{{.+}}, %[[E]]
// CHECK: memref.store
// CHECK: } {gdn.tensor_core_attention
func.func @padded(%q: tensor<2x70x2x16xf32>, %k: tensor<2x100x2x16xf32>, %v: tensor<2x100x2x12xf32>) -> tensor<2x70x2x12xf32> {
  %o = gdn.causal_attention %q, %k, %v {scale = 0.25 : f32} : (tensor<2x70x2x16xf32>, tensor<2x100x2x16xf32>, tensor<2x100x2x12xf32>) -> tensor<2x70x2x12xf32>
  return %o : tensor<2x70x2x12xf32>
}
