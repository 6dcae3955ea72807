// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy -convert-gdn-to-gpu | FileCheck %s

// Packed sequences and pools of states are operands of the chunked scan's
// two kernels, with no table of the lengths on the host: the WY kernel's
// grid has ceil(total / 64) + N chunk rows (sequence n's chunks from row
// start_n / 64 + n), each block finds its sequence by a binary search over
// the offsets and zeros o's rows outside every sequence; the state kernel
// has a block row per sequence.

// CHECK-LABEL: func.func @packed
// CHECK: %[[ENTRIES:.+]] = memref.dim %{{.+}}, %c0{{.*}} : memref<?xi32>
// CHECK: %[[MINUS:.+]] = arith.subi %[[ENTRIES]], %c1
// CHECK: %[[N:.+]] = arith.maxsi %[[MINUS]], %c0
// The final states, one per sequence.
// CHECK: memref.alloc(%[[N]]) : memref<?x4x64x128xf32>
// CHECK: %[[WHOLE:.+]] = arith.ceildivui %dim_{{[0-9]+}}, %c64
// CHECK: %[[ROWS:.+]] = arith.addi %[[WHOLE]], %[[N]]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ROWS]], {{.*}} = %c4, {{.*}} = %c1{{.*}})
// Rows outside [offsets[0], offsets[N]) are zeroed, 8 elements a store.
// CHECK: vector.store %{{.+}}, %alloc[%c0{{.*}}] {alignment = 16 : i64} : memref<1x?x4x128xbf16>, vector<8xbf16>
// CHECK: scf.while
// CHECK: } {gdn.chunked_scan = {{{.*}}kernel = "wy"
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c8{{.*}}, {{.*}} = %[[N]], {{.*}} = %c1{{.*}})
// CHECK: } {gdn.chunked_scan = {{{.*}}kernel = "state"{{.*}}value_tile = 64
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c16{{.*}}, {{.*}} = %[[N]], {{.*}} = %c1{{.*}})
// CHECK: } {gdn.chunked_scan = {{{.*}}kernel = "state"{{.*}}value_tile = 32
func.func @packed(%q: tensor<1x?x2x64xbf16>, %v: tensor<1x?x4x128xbf16>, %g: tensor<1x?x4xf32>, %h0: tensor<?x4x64x128xf32>, %cu: tensor<?xi32>) -> (tensor<1x?x4x128xbf16>, tensor<?x4x64x128xf32>) {
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g initial_state(%h0) cu_seqlens(%cu) : (tensor<1x?x2x64xbf16>, tensor<1x?x2x64xbf16>, tensor<1x?x4x128xbf16>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, tensor<?x4x64x128xf32>, tensor<?xi32>) -> (tensor<1x?x4x128xbf16>, tensor<?x4x64x128xf32>)
  return %o, %s : tensor<1x?x4x128xbf16>, tensor<?x4x64x128xf32>
}

// -----

// A pool is read and written in place: its buffer is writable, no final
// state is allocated, and the state kernel loads the slot only where the
// index names one (-1 and anything outside [0, S): zeros) and stores the
// final state only where the write index does.
// CHECK-LABEL: func.func @pool
// CHECK: %[[POOL:.+]] = bufferization.to_buffer %arg5 : tensor<?x4x64x128xf32> to memref<?x4x64x128xf32>
// CHECK-NOT: memref.alloc({{.*}}) : memref<?x4x64x128xf32>
// CHECK: } {gdn.chunked_scan = {{{.*}}kernel = "wy"
// CHECK: %[[SLOTS:.+]] = memref.dim %[[POOL]], %c0
// CHECK: arith.cmpi slt, %{{.+}}, %[[SLOTS]]
// CHECK: scf.if
// CHECK: memref.load %[[POOL]]
// CHECK: scf.if
// CHECK: vector.store %{{.+}}, %[[POOL]]
// CHECK: } {gdn.chunked_scan = {{{.*}}kernel = "state"
// CHECK: return %{{.+}}, %{{.+}} : tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>
func.func @pool(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x128xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>, %pool: tensor<?x4x64x128xf32>, %read: tensor<?xi32>, %write: tensor<?xi32>) -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%pool) state_indices(%read) write_indices(%write) : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x64x128xf32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>)
  return %o, %s : tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>
}

// -----

// Raw gates: the WY kernel computes g = -exp(A_log) softplus(a + dt_bias)
// and beta = sigmoid(b) as it reads a row's a and b (ex2.approx for the
// exponentials, lg2.approx for softplus's logarithm, no libdevice); the
// state kernel reads the gates from its scratch as before.
// CHECK-LABEL: func.func @gated
// CHECK: %[[ALOG:.+]] = bufferization.to_buffer %arg4 read_only : tensor<4xf32> to memref<4xf32>
// CHECK: %[[BIAS:.+]] = bufferization.to_buffer %arg5 read_only : tensor<4xf32> to memref<4xf32>
// CHECK: gpu.launch
// CHECK: memref.load %[[ALOG]]
// CHECK: memref.load %[[BIAS]]
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"
// CHECK: } {gdn.chunked_scan = {{{.*}}kernel = "wy"
// CHECK-NOT: memref.load %[[ALOG]]
// CHECK: } {gdn.chunked_scan = {{{.*}}kernel = "state"
func.func @gated(%q: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x128xbf16>, %a: tensor<?x?x4xf32>, %h0: tensor<?x4x64x128xf32>, %alog: tensor<4xf32>, %dt: tensor<4xf32>) -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>) {
  %o, %s = gdn.delta_rule %q, %q, %v, %a, %a initial_state(%h0) gates(%alog, %dt) : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x64x128xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>)
  return %o, %s : tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>
}

// -----

// The decode step reads its raw gates the same way.
// CHECK-LABEL: func.func @gated_step
// CHECK: gpu.launch
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"
func.func @gated_step(%q: tensor<?x2x64xbf16>, %v: tensor<?x4x128xbf16>, %a: tensor<?x4xf32>, %s0: tensor<?x4x64x128xf32>, %alog: tensor<4xf32>, %dt: tensor<4xf32>) -> (tensor<?x4x128xbf16>, tensor<?x4x64x128xf32>) {
  %o, %s = gdn.delta_rule_step %q, %q, %v, %a, %a, %s0 gates(%alog, %dt) : (tensor<?x2x64xbf16>, tensor<?x2x64xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x64x128xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4x128xbf16>, tensor<?x4x64x128xf32>)
  return %o, %s : tensor<?x4x128xbf16>, tensor<?x4x64x128xf32>
}

// -----

// bf16 states are storage: the final states are allocated in bf16 and
// rounded as they are stored (the state tile itself stays f32).
// CHECK-LABEL: func.func @bf16_states
// CHECK: %[[FINAL:.+]] = memref.alloc(%{{.+}}) : memref<?x4x64x128xbf16>
// CHECK: } {gdn.chunked_scan = {{{.*}}kernel = "wy"
// CHECK: arith.truncf %{{.+}} : vector<2xf32> to vector<2xbf16>
// CHECK: vector.store %{{.+}}, %[[FINAL]]
// CHECK: } {gdn.chunked_scan = {{{.*}}kernel = "state"
func.func @bf16_states(%q: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x128xbf16>, %g: tensor<?x?x4xf32>, %h0: tensor<?x4x64x128xbf16>) -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xbf16>) {
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g initial_state(%h0) : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x64x128xbf16>) -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xbf16>)
  return %o, %s : tensor<?x?x4x128xbf16>, tensor<?x4x64x128xbf16>
}
