// RUN: gdn-opt %s -split-input-file -gdn-chunk-delta-rule=chunk-size=16 \
// RUN:   | FileCheck %s --check-prefixes=CHECK,C16 -D'$CHUNK=16'
// RUN: gdn-opt %s -split-input-file -gdn-chunk-delta-rule \
// RUN:   | FileCheck %s --check-prefixes=CHECK,C64 -D'$CHUNK=64'
// RUN: gdn-opt %s -split-input-file -gdn-chunk-delta-rule | FileCheck %s --check-prefix=GONE
// RUN: gdn-opt %s -split-input-file -gdn-chunk-delta-rule="chunk-size=16 recurrent-below=8" \
// RUN:   | FileCheck %s --check-prefix=REC
// RUN: not gdn-opt %s -split-input-file -gdn-chunk-delta-rule=chunk-size=0 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD

// No gdn.delta_rule is left in any function; gdn.delta_rule_step is.
// GONE-NOT: {{gdn.delta_rule }}
// GONE: gdn.delta_rule_step
// GONE-NOT: {{gdn.delta_rule }}

// [[$CHUNK]] is the chunk size of the run (16, or the default 64). Every
// gdn.delta_rule becomes an scf.forall over (B, Hv) whose tasks scan the full
// chunks with an scf.for, then a last, zero-padded chunk in an scf.if; per
// chunk the work is linalg on static f32 tiles.

// CHECK-LABEL: func.func @grouped_f32
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<?x?x2x8xf32>, %[[K:[a-z0-9]+]]: tensor<?x?x2x8xf32>, %[[V:[a-z0-9]+]]: tensor<?x?x4x32xf32>, %[[G:[a-z0-9]+]]: tensor<?x?x4xf32>, %[[BETA:[a-z0-9]+]]: tensor<?x?x4xf32>)
// CHECK-NOT: {{gdn.delta_rule }}
// CHECK-DAG: %[[STEP:.+]] = arith.constant [[$CHUNK]] : index
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK: %[[BATCH:.+]] = tensor.dim %[[V]], %[[C0]]
// CHECK: %[[T:.+]] = tensor.dim %[[V]], %[[C1]]
// CHECK: %[[O_INIT:.+]] = tensor.empty({{.+}}) : tensor<?x?x4x32xf32>
// CHECK: %[[S_INIT:.+]] = tensor.empty({{.+}}) : tensor<?x4x8x32xf32>
// CHECK: %[[FORALL:.+]]:2 = scf.forall (%[[B:[a-z0-9]+]], %[[H:[a-z0-9]+]]) in (%[[BATCH]], 4) shared_outs(%[[O:[a-z0-9]+]] = %[[O_INIT]], %[[S:[a-z0-9]+]] = %[[S_INIT]]) -> (tensor<?x?x4x32xf32>, tensor<?x4x8x32xf32>)
// Value head h reads query/key head h / (Hv / H) = h / 2.
// CHECK:   %[[KH:.+]] = arith.divui %[[H]], %[[C2]] : index
// CHECK:   %[[O_ROWS:.+]] = tensor.extract_slice %[[O]][%[[B]], 0, %[[H]], 0] [1, %[[T]], 1, 32] [1, 1, 1, 1] : tensor<?x?x4x32xf32> to tensor<?x32xf32>
// CHECK:   %[[S_TILE:.+]] = tensor.extract_slice %[[S]][%[[B]], %[[H]], 0, 0] [1, 1, 8, 32] [1, 1, 1, 1] : tensor<?x4x8x32xf32> to tensor<8x32xf32>
// Without an initial state the state starts at zero.
// CHECK:   %[[S0:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[S_TILE]] : tensor<8x32xf32>)
// With the default recurrent-below=0 there is no run-time choice of form.
// CHECK-NOT: scf.if
// CHECK:   %[[NFULL:.+]] = arith.divui %[[T]], %[[STEP]] : index
// CHECK:   %[[TFULL:.+]] = arith.muli %[[NFULL]], %[[STEP]] : index
// CHECK:   %[[LOOP:.+]]:2 = scf.for %[[T0:[a-z0-9]+]] = %[[C0]] to %[[TFULL]] step %[[STEP]] iter_args(%[[S_IT:[a-z0-9]+]] = %[[S0]], %[[O_IT:[a-z0-9]+]] = %[[O_ROWS]]) -> (tensor<8x32xf32>, tensor<?x32xf32>)
// Static [C, K] / [C, V] tiles of q, k and v are packed from the chunk.
// CHECK:     %[[Q_SRC:.+]] = tensor.extract_slice %[[Q]][%[[B]], %[[T0]], %[[KH]], 0] [1, [[$CHUNK]], 1, 8] [1, 1, 1, 1] : tensor<?x?x2x8xf32> to tensor<[[$CHUNK]]x8xf32>
// CHECK:     %[[QC:.+]] = linalg.copy ins(%[[Q_SRC]] : tensor<[[$CHUNK]]x8xf32>)
// CHECK:     %[[K_SRC:.+]] = tensor.extract_slice %[[K]][%[[B]], %[[T0]], %[[KH]], 0] [1, [[$CHUNK]], 1, 8]
// CHECK:     %[[KC:.+]] = linalg.copy ins(%[[K_SRC]] : tensor<[[$CHUNK]]x8xf32>)
// CHECK:     %[[V_SRC:.+]] = tensor.extract_slice %[[V]][%[[B]], %[[T0]], %[[H]], 0] [1, [[$CHUNK]], 1, 32] [1, 1, 1, 1] : tensor<?x?x4x32xf32> to tensor<[[$CHUNK]]x32xf32>
// CHECK:     tensor.extract_slice %[[G]][%[[B]], %[[T0]], %[[H]]] [1, [[$CHUNK]], 1]
// CHECK:     tensor.extract_slice %[[BETA]][%[[B]], %[[T0]], %[[H]]] [1, [[$CHUNK]], 1]
// Chunk-local cumulative gates b.
// CHECK:     %[[CUM:.+]]:2 = scf.for %{{.+}} = %[[C0]] to %[[STEP]] step %[[C1]] iter_args(%{{.+}} = %[[ZERO]], %{{.+}} = %{{.+}}) -> (f32, tensor<[[$CHUNK]]xf32>)
// CHECK:     %[[KT:.+]] = linalg.transpose ins(%[[KC]] : tensor<[[$CHUNK]]x8xf32>) outs(%{{.+}} : tensor<8x[[$CHUNK]]xf32>) permutation = [1, 0]
// The causal decay D[i,j] = exp(b_i - b_j) for i >= j: the exponent is
// masked with a select before math.exp, and the result again after it.
// CHECK:     %[[DECAY:.+]] = linalg.generic {{.+}} ins(%[[CUM]]#1, %[[CUM]]#1 : tensor<[[$CHUNK]]xf32>, tensor<[[$CHUNK]]xf32>) outs(%{{.+}} : tensor<[[$CHUNK]]x[[$CHUNK]]xf32>)
// CHECK-NEXT:  ^bb0(%[[BI:.+]]: f32, %[[BJ:.+]]: f32, %{{.+}}: f32):
// CHECK-NOT:     math.exp
// CHECK:         %[[CAUSAL:.+]] = arith.cmpi uge, %{{.+}}, %{{.+}} : index
// CHECK-NOT:     math.exp
// CHECK:         %[[DIFF:.+]] = arith.subf %[[BI]], %[[BJ]] : f32
// CHECK-NEXT:    %[[SAFE:.+]] = arith.select %[[CAUSAL]], %[[DIFF]], %[[ZERO]] : f32
// CHECK-NEXT:    %[[EXP:.+]] = math.exp %[[SAFE]] : f32
// CHECK-NEXT:    %[[MASKED:.+]] = arith.select %[[CAUSAL]], %[[EXP]], %[[ZERO]] : f32
// CHECK-NEXT:    linalg.yield %[[MASKED]] : f32
// The Gram matrix k k^T on a static [C, C] tile, then A (strictly lower).
// CHECK:     %[[GRAM:.+]] = linalg.matmul ins(%[[KC]], %[[KT]] : tensor<[[$CHUNK]]x8xf32>, tensor<8x[[$CHUNK]]xf32>) outs(%{{.+}} : tensor<[[$CHUNK]]x[[$CHUNK]]xf32>)
// CHECK:     %[[A:.+]] = linalg.generic {{.+}} ins(%[[GRAM]], %[[DECAY]], %{{.+}} : tensor<[[$CHUNK]]x[[$CHUNK]]xf32>, tensor<[[$CHUNK]]x[[$CHUNK]]xf32>, tensor<[[$CHUNK]]xf32>)
// CHECK:       arith.cmpi ugt
// CHECK:       arith.select
// CHECK:     %[[IDENTITY:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<[[$CHUNK]]x[[$CHUNK]]xf32>)
// Tinv = (I + A)^-1 by forward substitution, one row per iteration from 1.
// CHECK:     %[[TINV:.+]] = scf.for %[[ROW:.+]] = %[[C1]] to %[[STEP]] step %[[C1]] iter_args(%[[ACC:.+]] = %[[IDENTITY]]) -> (tensor<[[$CHUNK]]x[[$CHUNK]]xf32>)
// CHECK:       %[[AROW:.+]] = tensor.extract_slice %[[A]][%[[ROW]], 0] [1, [[$CHUNK]]] [1, 1]
// CHECK:       linalg.vecmat ins(%[[AROW]], %[[ACC]] : tensor<[[$CHUNK]]xf32>, tensor<[[$CHUNK]]x[[$CHUNK]]xf32>)
// CHECK:       %[[NEWROW:.+]] = tensor.insert_slice %{{.+}} into %[[ACC]][%[[ROW]], 0] [1, [[$CHUNK]]] [1, 1]
// CHECK:       scf.yield %[[NEWROW]]
// U = Tinv (beta v), W = Tinv (-beta exp(b) k), v_new = U + W S.
// CHECK:     %[[U:.+]] = linalg.matmul ins(%[[TINV]], %{{.+}} : tensor<[[$CHUNK]]x[[$CHUNK]]xf32>, tensor<[[$CHUNK]]x32xf32>) outs(%{{.+}} : tensor<[[$CHUNK]]x32xf32>)
// CHECK:     %[[W:.+]] = linalg.matmul ins(%[[TINV]], %{{.+}} : tensor<[[$CHUNK]]x[[$CHUNK]]xf32>, tensor<[[$CHUNK]]x8xf32>) outs(%{{.+}} : tensor<[[$CHUNK]]x8xf32>)
// CHECK:     %[[VNEW:.+]] = linalg.matmul ins(%[[W]], %[[S_IT]] : tensor<[[$CHUNK]]x8xf32>, tensor<8x32xf32>) outs(%[[U]] : tensor<[[$CHUNK]]x32xf32>)
// The output: exp(b) (q S) + ((q k^T) . D) v_new.
// CHECK:     %[[QKT:.+]] = linalg.matmul ins(%[[QC]], %[[KT]] : tensor<[[$CHUNK]]x8xf32>, tensor<8x[[$CHUNK]]xf32>) outs(%{{.+}} : tensor<[[$CHUNK]]x[[$CHUNK]]xf32>)
// CHECK:     %[[QS:.+]] = linalg.matmul ins(%{{.+}}, %[[S_IT]] : tensor<[[$CHUNK]]x8xf32>, tensor<8x32xf32>) outs(%{{.+}} : tensor<[[$CHUNK]]x32xf32>)
// CHECK:     %[[OUT:.+]] = linalg.matmul ins(%{{.+}}, %[[VNEW]] : tensor<[[$CHUNK]]x[[$CHUNK]]xf32>, tensor<[[$CHUNK]]x32xf32>) outs(%[[QS]] : tensor<[[$CHUNK]]x32xf32>)
// The state update: exp(b_last) S + k^T (exp(b_last - b) v_new).
// CHECK:     %[[DECAYED:.+]] = linalg.generic {{.+}} ins(%[[CUM]]#1, %[[VNEW]] : tensor<[[$CHUNK]]xf32>, tensor<[[$CHUNK]]x32xf32>)
// CHECK:       arith.subf %[[CUM]]#0, %{{.+}} : f32
// CHECK:       math.exp
// CHECK:     %[[LAST:.+]] = math.exp %[[CUM]]#0 : f32
// CHECK:     %[[SCALED_S:.+]] = linalg.generic {{.+}} outs(%[[S_IT]] : tensor<8x32xf32>)
// CHECK:     %[[S_NEXT:.+]] = linalg.matmul ins(%[[KT]], %[[DECAYED]] : tensor<8x[[$CHUNK]]xf32>, tensor<[[$CHUNK]]x32xf32>) outs(%[[SCALED_S]] : tensor<8x32xf32>)
// CHECK:     %[[O_NEXT:.+]] = tensor.insert_slice %{{.+}} into %[[O_IT]][%[[T0]], 0] {{\[}}[[$CHUNK]], 32] [1, 1] : tensor<[[$CHUNK]]x32xf32> into tensor<?x32xf32>
// CHECK:     scf.yield %[[S_NEXT]], %[[O_NEXT]] : tensor<8x32xf32>, tensor<?x32xf32>
// The last T mod C tokens: the same computation on zero-padded tiles.
// CHECK:   %[[REST:.+]] = arith.subi %[[T]], %[[TFULL]] : index
// CHECK:   %[[HAS_REST:.+]] = arith.cmpi ugt, %[[REST]], %[[C0]] : index
// CHECK:   %[[TAIL:.+]]:2 = scf.if %[[HAS_REST]] -> (tensor<8x32xf32>, tensor<?x32xf32>)
// CHECK:     %[[QT_SRC:.+]] = tensor.extract_slice %[[Q]][%[[B]], %[[TFULL]], %[[KH]], 0] [1, %[[REST]], 1, 8] [1, 1, 1, 1] : tensor<?x?x2x8xf32> to tensor<?x8xf32>
// CHECK:     %[[QT_PAD:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<[[$CHUNK]]x8xf32>)
// CHECK:     tensor.extract_slice %[[QT_PAD]][0, 0] [%[[REST]], 8] [1, 1]
// CHECK:     linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<[[$CHUNK]]x8xf32>, tensor<8x[[$CHUNK]]xf32>) outs(%{{.+}} : tensor<[[$CHUNK]]x[[$CHUNK]]xf32>)
// CHECK:     linalg.vecmat
// CHECK:     tensor.extract_slice %[[LOOP]]#1[%[[TFULL]], 0] [%[[REST]], 32] [1, 1]
// CHECK:     scf.yield
// CHECK:   } else {
// CHECK:     scf.yield %[[LOOP]]#0, %[[LOOP]]#1 : tensor<8x32xf32>, tensor<?x32xf32>
// CHECK:   }
// CHECK:   scf.forall.in_parallel {
// CHECK-NEXT: tensor.parallel_insert_slice %[[TAIL]]#1 into %[[O]][%[[B]], 0, %[[H]], 0] [1, %[[T]], 1, 32] [1, 1, 1, 1] : tensor<?x32xf32> into tensor<?x?x4x32xf32>
// CHECK-NEXT: tensor.parallel_insert_slice %[[TAIL]]#0 into %[[S]][%[[B]], %[[H]], 0, 0] [1, 1, 8, 32] [1, 1, 1, 1] : tensor<8x32xf32> into tensor<?x4x8x32xf32>
// CHECK-NOT: {{gdn.delta_rule }}
// CHECK: return %[[FORALL]]#0, %[[FORALL]]#1 : tensor<?x?x4x32xf32>, tensor<?x4x8x32xf32>

// With recurrent-below=8 each task checks T < 8 at run time and then runs
// the token recurrence on its head, in place on the same state and output
// rows, instead of the chunks.

// REC-LABEL: func.func @grouped_f32
// REC-DAG: %[[LIMIT:.+]] = arith.constant 8 : index
// REC-DAG: %[[STEP:.+]] = arith.constant 16 : index
// REC-DAG: %[[C1:.+]] = arith.constant 1 : index
// REC: %[[T:.+]] = tensor.dim %{{.+}}, %[[C1]]
// REC: scf.forall
// REC: %[[O_ROWS:.+]] = tensor.extract_slice
// REC: %[[S0:.+]] = linalg.fill
// REC-NEXT: %[[SHORT:.+]] = arith.cmpi ult, %[[T]], %[[LIMIT]] : index
// REC-NEXT: %[[RES:.+]]:2 = scf.if %[[SHORT]] -> (tensor<8x32xf32>, tensor<?x32xf32>) {
// REC-NEXT: %[[TOKENS:.+]]:2 = scf.for %{{.+}} = %{{.+}} to %[[T]] step %[[C1]] iter_args(%{{.+}} = %[[S0]], %{{.+}} = %[[O_ROWS]]) -> (tensor<8x32xf32>, tensor<?x32xf32>)
// REC-NOT: linalg.matmul
// REC: scf.yield %[[TOKENS]]#0, %[[TOKENS]]#1
// REC-NEXT: } else {
// REC: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[STEP]] iter_args(%{{.+}} = %[[S0]], %{{.+}} = %[[O_ROWS]])
// REC: linalg.matmul
// REC: scf.forall.in_parallel
// REC-NEXT: tensor.parallel_insert_slice %[[RES]]#1
// REC-NEXT: tensor.parallel_insert_slice %[[RES]]#0

// BAD: error: gdn-chunk-delta-rule: chunk-size must be 1..1024, but got 0{{$}}

func.func @grouped_f32(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x4x32xf32>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>) -> (tensor<?x?x4x32xf32>, tensor<?x4x8x32xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x32xf32>, tensor<?x4x8x32xf32>)
  return %o, %s : tensor<?x?x4x32xf32>, tensor<?x4x8x32xf32>
}

// -----

// bf16 inputs are widened to f32 tiles when packed (beta too, g is f32); the
// output is scaled and rounded to bf16 when stored. The initial state is the
// shared output of the state, so it seeds the chunk loop directly.

// CHECK-LABEL: func.func @bf16_initial_state
// CHECK-SAME: %[[H0:[a-z0-9]+]]: tensor<?x4x8x32xf32>)
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[O_INIT:.+]] = tensor.empty({{.+}}) : tensor<?x?x4x32xbf16>
// CHECK: scf.forall ({{.+}}) in ({{.+}}, 4) shared_outs(%{{.+}} = %[[O_INIT]], %[[S:[a-z0-9]+]] = %[[H0]]) -> (tensor<?x?x4x32xbf16>, tensor<?x4x8x32xf32>)
// CHECK: %[[S_TILE:.+]] = tensor.extract_slice %[[S]]{{.+}} to tensor<8x32xf32>
// CHECK-NOT: linalg.fill
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %[[S_TILE]], %{{.+}} = %{{.+}}) -> (tensor<8x32xf32>, tensor<?x32xbf16>)
// CHECK: %[[Q_SRC:.+]] = tensor.extract_slice {{.+}} : tensor<?x?x2x8xbf16> to tensor<[[$CHUNK]]x8xbf16>
// CHECK: linalg.generic {{.+}} ins(%[[Q_SRC]] : tensor<[[$CHUNK]]x8xbf16>) outs(%{{.+}} : tensor<[[$CHUNK]]x8xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.+]]: bf16, %{{.+}}: f32):
// CHECK-NEXT: %[[WIDE:.+]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NEXT: linalg.yield %[[WIDE]] : f32
// CHECK: %[[BETA_SRC:.+]] = tensor.extract_slice {{.+}} : tensor<?x?x4xbf16> to tensor<[[$CHUNK]]xbf16>
// CHECK: linalg.generic {{.+}} ins(%[[BETA_SRC]] : tensor<[[$CHUNK]]xbf16>) outs(%{{.+}} : tensor<[[$CHUNK]]xf32>)
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: linalg.generic {{.+}} ins(%{{.+}} : tensor<[[$CHUNK]]x32xf32>) outs(%{{.+}} : tensor<[[$CHUNK]]x32xbf16>)
// CHECK-NEXT: ^bb0(%[[OUT:.+]]: f32, %{{.+}}: bf16):
// CHECK-NEXT: %[[SCALED:.+]] = arith.mulf %[[OUT]], %[[SCALE]] : f32
// CHECK-NEXT: %[[NARROW:.+]] = arith.truncf %[[SCALED]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[NARROW]] : bf16
// CHECK: scf.if
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: scf.forall.in_parallel
func.func @bf16_initial_state(%q: tensor<?x?x2x8xbf16>, %k: tensor<?x?x2x8xbf16>, %v: tensor<?x?x4x32xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xbf16>, %h0: tensor<?x4x8x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x8x32xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0) {scale = 0.5 : f32} : (tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xbf16>, tensor<?x4x8x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x8x32xf32>)
  return %o, %s : tensor<?x?x4x32xbf16>, tensor<?x4x8x32xf32>
}

// -----

// With a static T = 40 the chunk loop bounds are constants: 2 full chunks of
// 16 and a tail of 8, or no full chunk of 64 and a tail of 40.

// CHECK-LABEL: func.func @static_tail
// C16-DAG: %[[TFULL:.+]] = arith.constant 32 : index
// C16-DAG: %[[REST:.+]] = arith.constant 8 : index
// C64-DAG: %[[TFULL:.+]] = arith.constant 0 : index
// C64-DAG: %[[REST:.+]] = arith.constant 40 : index
// CHECK-DAG: %[[STEP:.+]] = arith.constant [[$CHUNK]] : index
// CHECK: scf.forall ({{.+}}) in (1, 2)
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[TFULL]] step %[[STEP]]
// CHECK: scf.if %{{.+}} -> (tensor<4x4xf32>, tensor<?x4xf32>)
// CHECK: tensor.extract_slice %{{.+}}[%{{.+}}, %[[TFULL]], %{{.+}}, 0] [1, %[[REST]], 1, 4]
func.func @static_tail(%q: tensor<1x40x2x4xf32>, %k: tensor<1x40x2x4xf32>, %v: tensor<1x40x2x4xf32>, %g: tensor<1x40x2xf32>, %beta: tensor<1x40x2xf32>) -> (tensor<1x40x2x4xf32>, tensor<1x2x4x4xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<1x40x2x4xf32>, tensor<1x40x2x4xf32>, tensor<1x40x2x4xf32>, tensor<1x40x2xf32>, tensor<1x40x2xf32>) -> (tensor<1x40x2x4xf32>, tensor<1x2x4x4xf32>)
  return %o, %s : tensor<1x40x2x4xf32>, tensor<1x2x4x4xf32>
}

// -----

// The decode step is not this pass's business.

// CHECK-LABEL: func.func @step_untouched
// CHECK-NOT: scf.forall
// CHECK: = gdn.delta_rule_step
// CHECK-NOT: scf.forall
// CHECK: return
func.func @step_untouched(%q: tensor<?x2x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %state: tensor<?x4x8x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8x8xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %state : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8x8xf32>)
  return %o, %s : tensor<?x4x8xf32>, tensor<?x4x8x8xf32>
}
