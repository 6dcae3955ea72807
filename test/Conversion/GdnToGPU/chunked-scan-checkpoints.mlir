// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy -convert-gdn-to-gpu | FileCheck %s

// Checkpoints come from the chunked scan's state kernel: at the end of a
// chunk whose last token is a checkpoint's, the state product's epilogue
// also stores the state there. Packed sequences' checkpoints follow one
// another (sequence n's first at the sum of the earlier ones), and a third
// kernel zeros the rows past the last.

// CHECK-LABEL: func.func @dense
// CHECK: %[[CHECKPOINTS:.+]] = memref.alloc(%{{.+}}, %{{.+}}) : memref<?x?x4x64x128xf32>
// CHECK: kernel = "wy"
// CHECK: arith.remui %{{.+}}, %c128
// CHECK: vector.store %{{.+}}, %[[CHECKPOINTS]][%{{.+}}] {alignment = 8 : i64} : memref<?x?x4x64x128xf32>, vector<2xf32>
// CHECK: kernel = "state"{{.*}}value_tile = 64
// CHECK: vector.store %{{.+}}, %[[CHECKPOINTS]][%{{.+}}] {alignment = 8 : i64} : memref<?x?x4x64x128xf32>, vector<2xf32>
// CHECK: kernel = "state"{{.*}}value_tile = 32
// CHECK-NOT: kernel = "checkpoint_tail"
// CHECK: return
func.func @dense(%q: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x128xbf16>, %g: tensor<?x?x4xf32>) -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>, tensor<?x?x4x64x128xf32>) {
  %o, %s, %c = gdn.delta_rule %q, %q, %v, %g, %g {checkpoint_every = 128 : i64} : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>, tensor<?x?x4x64x128xf32>)
  return %o, %s, %c : tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>, tensor<?x?x4x64x128xf32>
}

// -----

// CHECK-LABEL: func.func @packed
// CHECK: %[[TOTAL:.+]] = memref.dim %{{.+}}, %c1{{.*}} : memref<1x?x4x128xbf16>
// CHECK: %[[ROWS:.+]] = arith.divui %[[TOTAL]], %c64
// CHECK: %[[CHECKPOINTS:.+]] = memref.alloc(%[[ROWS]]) : memref<?x4x64x128xbf16>
// CHECK: kernel = "wy"
// CHECK: vector.store %{{.+}}, %[[CHECKPOINTS]][%{{.+}}] {alignment = 4 : i64} : memref<?x4x64x128xbf16>, vector<2xbf16>
// CHECK: kernel = "state"
// CHECK: kernel = "state"
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %{{.+}}, {{.*}} = %c4{{.*}}, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c128
// CHECK: scf.for
// CHECK: arith.cmpi uge
// CHECK: memref.store %{{.+}}, %[[CHECKPOINTS]]
// CHECK: kernel = "checkpoint_tail"
func.func @packed(%q: tensor<1x?x2x64xbf16>, %v: tensor<1x?x4x128xbf16>, %g: tensor<1x?x4xf32>, %cu: tensor<?xi32>) -> (tensor<1x?x4x128xbf16>, tensor<?x4x64x128xbf16>, tensor<?x4x64x128xbf16>) {
  %o, %s, %c = gdn.delta_rule %q, %q, %v, %g, %g cu_seqlens(%cu) {checkpoint_every = 64 : i64} : (tensor<1x?x2x64xbf16>, tensor<1x?x2x64xbf16>, tensor<1x?x4x128xbf16>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, tensor<?xi32>) -> (tensor<1x?x4x128xbf16>, tensor<?x4x64x128xbf16>, tensor<?x4x64x128xbf16>)
  return %o, %s, %c : tensor<1x?x4x128xbf16>, tensor<?x4x64x128xbf16>, tensor<?x4x64x128xbf16>
}

// -----

// Speculative verify runs as the token recurrence from the pool's slots,
// read only: every token's state goes to its own row of the result, and
// nothing is written to the pool.
// CHECK-LABEL: func.func @verify
// CHECK: %[[STATES:.+]] = memref.alloc(%{{.+}}, %{{.+}}) : memref<?x?x4x64x128xf32>
// CHECK: gpu.launch
// CHECK: scf.for %[[T:.+]] = %c0{{.*}} to %{{.+}} step %c1
// CHECK: memref.store %{{.+}}, %[[STATES]][%{{.+}}, %[[T]], %{{.+}}, %{{.+}}, %{{.+}}] : memref<?x?x4x64x128xf32>
// CHECK-NOT: memref.store %{{.+}}, %{{.+}} : memref<?x4x64x128xf32>
// CHECK: gpu.terminator
func.func @verify(%q: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x128xbf16>, %g: tensor<?x?x4xf32>, %pool: tensor<?x4x64x128xf32>, %idx: tensor<?xi32>) -> (tensor<?x?x4x128xbf16>, tensor<?x?x4x64x128xf32>) {
  %o, %st = gdn.delta_rule_verify %q, %q, %v, %g, %g, %pool state_indices(%idx) : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x64x128xf32>, tensor<?xi32>) -> (tensor<?x?x4x128xbf16>, tensor<?x?x4x64x128xf32>)
  return %o, %st : tensor<?x?x4x128xbf16>, tensor<?x?x4x64x128xf32>
}
