// RUN: gdn-compile %s --emit=mlir-linalg -o %t.mlir
// RUN: FileCheck %s --check-prefixes=CHECK,DEFAULT --input-file=%t.mlir
// RUN: FileCheck %s --check-prefix=NO-GDN --input-file=%t.mlir
// RUN: gdn-opt %t.mlir -o /dev/null
// RUN: gdn-compile %s --emit=mlir-linalg --chunk-size=16 --recurrent-below=0 -o - \
// RUN:   | FileCheck %s --check-prefixes=CHECK,CHUNKS
// RUN: gdn-compile %s --emit=mlir-linalg --delta-rule-form=recurrent -o - \
// RUN:   | FileCheck %s --check-prefix=RECURRENT

// --emit=mlir-linalg stops after the gdn ops are lowered to linalg, scf and
// tensor ops on tensors; the output is valid IR for gdn-opt.

// NO-GDN-NOT: gdn.

// The chunked form (the default) is an scf.forall over batch x value heads.
// By default each task runs the token recurrence when T < 64 and chunks of
// 64 otherwise; --recurrent-below=0 always takes chunks.

// CHECK-LABEL: func.func @prefill
// CHECK-NOT: gdn.
// DEFAULT-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHUNKS-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK: %[[T:.+]] = tensor.dim %{{.+}}, %[[C1]] : tensor<?x?x2x16xf32>
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (%{{.+}}, 2) shared_outs(
// DEFAULT: %[[SHORT:.+]] = arith.cmpi ult, %[[T]], %[[C64]] : index
// DEFAULT-NEXT: scf.if %[[SHORT]]
// DEFAULT-NEXT: scf.for %{{.+}} = %{{.+}} to %[[T]] step %[[C1]]
// DEFAULT: } else {
// DEFAULT: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[C64]]
// DEFAULT: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<64x8xf32>, tensor<8x64xf32>) outs(%{{.+}} : tensor<64x64xf32>)
// CHUNKS-NOT: arith.cmpi ult
// CHUNKS: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[C16]]
// CHUNKS: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<16x8xf32>, tensor<8x16xf32>) outs(%{{.+}} : tensor<16x16xf32>)
// CHECK: scf.forall.in_parallel
// CHECK-NOT: gdn.
// CHECK: return

// The decode step is one task per head as well.

// CHECK-LABEL: func.func @decode
// CHECK-NOT: gdn.
// CHECK: scf.forall
// CHECK: linalg.vecmat
// CHECK-NOT: gdn.
// CHECK: return

// The recurrent form is one sequential scf.for over the tokens, carrying the
// state and the output, with no scf.forall and no chunk matmuls.

// RECURRENT-LABEL: func.func @prefill
// RECURRENT-NOT: scf.forall
// RECURRENT-DAG: %[[C1:.+]] = arith.constant 1 : index
// RECURRENT-DAG: %[[C0:.+]] = arith.constant 0 : index
// RECURRENT: %[[T:.+]] = tensor.dim %{{.+}}, %[[C1]] : tensor<?x?x2x16xf32>
// RECURRENT: %[[LOOP:.+]]:2 = scf.for %{{.+}} = %[[C0]] to %[[T]] step %[[C1]] iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<?x2x8x16xf32>, tensor<?x?x2x16xf32>)
// RECURRENT-NOT: scf.forall
// RECURRENT-NOT: linalg.matmul
// RECURRENT: return %[[LOOP]]#1, %[[LOOP]]#0
// RECURRENT-LABEL: func.func @decode
// RECURRENT-NOT: scf.forall
// RECURRENT-NOT: gdn.
// RECURRENT: return

func.func @prefill(%q: tensor<?x?x1x8xf32>, %k: tensor<?x?x1x8xf32>, %v: tensor<?x?x2x16xf32>, %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>)
  return %o, %s : tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>
}

func.func @decode(%q: tensor<?x1x8xf32>, %k: tensor<?x1x8xf32>, %v: tensor<?x2x16xf32>, %g: tensor<?x2xf32>, %beta: tensor<?x2xf32>, %state: tensor<?x2x8x16xf32>) -> (tensor<?x2x16xf32>, tensor<?x2x8x16xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %state : (tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<?x2x16xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2x8x16xf32>) -> (tensor<?x2x16xf32>, tensor<?x2x8x16xf32>)
  return %o, %s : tensor<?x2x16xf32>, tensor<?x2x8x16xf32>
}
