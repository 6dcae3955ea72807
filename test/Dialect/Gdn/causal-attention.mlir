// RUN: gdn-opt %s -split-input-file | gdn-opt -split-input-file | FileCheck %s --check-prefix=ROUND
// RUN: gdn-opt %s -split-input-file -gdn-decompose-layers | FileCheck %s
// RUN: gdn-opt %s -split-input-file -gdn-decompose-layers=keep-tensor-core-attention | FileCheck %s --check-prefix=KEEP

// ROUND: gdn.causal_attention %{{.+}}, %{{.+}}, %{{.+}} {block = 32 : i64, scale = 1.250000e-01 : f32}
// On the CPU: a task per (sequence, head, block of 32 queries), the key
// blocks of each from the queries' offset S - T; the kernel-sized heads
// are kept when asked.
// CHECK-LABEL: func.func @attention
// CHECK-NOT: gdn.causal_attention
// CHECK: %[[S:.+]] = tensor.dim %{{.+}}, %c1
// CHECK: %[[T:.+]] = tensor.dim %{{.+}}, %c1
// CHECK: arith.subi %[[S]], %[[T]]
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}}, 4, %{{.+}})
// CHECK: scf.for
// KEEP: gdn.causal_attention
func.func @attention(%q: tensor<?x?x4x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x8xf32>) -> tensor<?x?x4x8xf32> {
  %o = gdn.causal_attention %q, %k, %v {scale = 0.125 : f32, block = 32} : (tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>) -> tensor<?x?x4x8xf32>
  return %o : tensor<?x?x4x8xf32>
}
