// RUN: gdn-opt %s -split-input-file -convert-gdn-to-gpu='block-columns=32 key-splits=1' | FileCheck %s
// RUN: gdn-opt %s -split-input-file -convert-gdn-to-gpu='block-columns=32 key-splits=2' | FileCheck %s --check-prefix=SPLIT
// RUN: not gdn-opt %s -split-input-file -convert-gdn-to-gpu=block-columns=0 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: convert-gdn-to-gpu: block-columns must be in [1, 1024], but got 0

// With two key splits, a block has two threads per column, each holding
// half of the column (4 of 8 rows), and the partial sums meet in workgroup
// memory between barriers.
// SPLIT-LABEL: func.func @prefill
// SPLIT: gpu.launch
// SPLIT-SAME: threads(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) in (%{{[a-z0-9_]+}} = %c64
// SPLIT-SAME: %[[PARTIALS:[a-z0-9_]+]] : memref<64xf32, #gpu.address_space<workgroup>>)
// SPLIT: scf.for {{.+}} -> (f32, f32, f32, f32)
// SPLIT: memref.store %{{.+}}, %[[PARTIALS]]
// SPLIT-NEXT: gpu.barrier
// SPLIT-LABEL: func.func @step

// The prefill becomes one launch over (Hv x column tiles, B) blocks of
// block-columns threads; q and k are staged in workgroup memory; each thread
// carries its K state values through the token loop and stores them once.

// CHECK-LABEL: func.func @prefill
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<?x?x2x8xbf16>
// CHECK-NOT: gdn.delta_rule
// CHECK-DAG: %[[QM:.+]] = bufferization.to_buffer %[[Q]] read_only
// CHECK-DAG: %[[OM:.+]] = memref.alloc(%{{.+}}, %{{.+}}) : memref<?x?x4x40xbf16>
// CHECK-DAG: %[[SM:.+]] = memref.alloc(%{{.+}}) : memref<?x4x8x40xf32>
// Four value heads of two column tiles (40 columns, 32 per block).
// CHECK: gpu.launch blocks(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) in (%{{[a-z0-9_]+}} = %c8, %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = %c1{{[_0-9]*}})
// CHECK-SAME: threads(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) in (%{{[a-z0-9_]+}} = %c32
// CHECK-SAME: workgroup(%[[QS:[a-z0-9_]+]] : memref<8xf32, #gpu.address_space<workgroup>>, %[[KS:[a-z0-9_]+]] : memref<8xf32, #gpu.address_space<workgroup>>, %{{[a-z0-9_]+}} : memref<32xf32, #gpu.address_space<workgroup>>)
// Threads past the 40 columns load column 0 and store nothing.
// CHECK: %[[ACTIVE:.+]] = arith.cmpi ult, %{{.+}}, %c40
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args({{.+}}) -> (f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK:   memref.store %{{.+}}, %[[QS]]
// CHECK:   gpu.barrier
// CHECK:   llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK:   arith.mulf %{{.+}}, %{{.+}} fastmath<contract> : f32
// The output is written by the active threads of the first key split.
// CHECK:   %[[WRITES:.+]] = arith.andi %[[ACTIVE]], %{{.+}} : i1
// CHECK:   scf.if %[[WRITES]]
// CHECK:     memref.store %{{.+}}, %[[OM]]
// CHECK:   gpu.barrier
// CHECK: scf.if %[[ACTIVE]]
// CHECK-COUNT-8: memref.store %{{.+}}, %[[SM]]
// CHECK: gpu.terminator
// CHECK: bufferization.to_tensor %[[OM]] restrict writable
// CHECK: bufferization.to_tensor %[[SM]] restrict writable
func.func @prefill(%q: tensor<?x?x2x8xbf16>, %k: tensor<?x?x2x8xbf16>, %v: tensor<?x?x4x40xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>) -> (tensor<?x?x4x40xbf16>, tensor<?x4x8x40xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x4x40xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x40xbf16>, tensor<?x4x8x40xf32>)
  return %o, %s : tensor<?x?x4x40xbf16>, tensor<?x4x8x40xf32>
}

// -----

// The decode step has no token loop: the state column is loaded from the
// state buffer, updated once and stored.

// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[STATE:[a-z0-9]+]]: tensor<?x4x8x32xf32>)
// CHECK: %[[SB:.+]] = bufferization.to_buffer %[[STATE]] read_only
// CHECK: gpu.launch
// CHECK-COUNT-8: memref.load %[[SB]]
// CHECK-NOT: scf.for %{{.+}} iter_args
// CHECK: gpu.terminator
func.func @step(%q: tensor<?x2x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x4x32xf32>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %state: tensor<?x4x8x32xf32>) -> (tensor<?x4x32xf32>, tensor<?x4x8x32xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %state : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x32xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x8x32xf32>) -> (tensor<?x4x32xf32>, tensor<?x4x8x32xf32>)
  return %o, %s : tensor<?x4x32xf32>, tensor<?x4x8x32xf32>
}
