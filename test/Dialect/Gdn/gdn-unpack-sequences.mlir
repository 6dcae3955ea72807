// RUN: gdn-opt %s --gdn-unpack-sequences -split-input-file | FileCheck %s

// Packed sequences: a loop over the N = max(entries - 1, 0) sequences, each
// a dense gdn.delta_rule on its clamped slice of the tokens, from its own
// initial state; the output starts as zeros.

// CHECK-LABEL: func.func @packed
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<1x?x2x16xf32>
// CHECK-SAME: %[[H:[a-z0-9]+]]: tensor<?x4x16x8xf32>, %[[CU:[a-z0-9]+]]: tensor<?xi32>
// CHECK: %[[ENTRIES:.+]] = tensor.dim %[[CU]]
// CHECK: %[[LESS:.+]] = arith.subi %[[ENTRIES]]
// CHECK: %[[N:.+]] = arith.maxsi %[[LESS]]
// CHECK: %[[ROWS:.+]] = tensor.dim %[[H]]
// CHECK: %[[COUNT:.+]] = arith.minsi %[[N]], %[[ROWS]]
// CHECK: %[[ZEROS:.+]] = linalg.fill
// CHECK: scf.for %[[SEQ:.+]] = %{{.+}} to %[[COUNT]] step %{{.+}} iter_args(%[[O:.+]] = %[[ZEROS]], %[[S:.+]] = %[[H]])
// CHECK: tensor.extract %[[CU]][%[[SEQ]]]
// CHECK: arith.maxsi
// CHECK: %[[START:.+]] = arith.minsi
// CHECK: tensor.extract %[[CU]]
// CHECK: arith.maxsi {{.*}}, %[[START]]
// CHECK: %[[END:.+]] = arith.minsi
// CHECK: %[[LEN:.+]] = arith.subi %[[END]], %[[START]]
// CHECK: tensor.extract_slice %[[Q]][0, %[[START]], 0, 0] [1, %[[LEN]], 2, 16]
// CHECK: %[[INIT:.+]] = tensor.extract_slice %[[H]][%[[SEQ]], 0, 0, 0] [1, 4, 16, 8]
// CHECK: %[[OUT:.+]], %[[FINAL:.+]] = gdn.delta_rule {{.*}} initial_state(%[[INIT]]) {scale = 5.000000e-01 : f32} : {{.*}} -> (tensor<1x?x4x8xf32>, tensor<1x4x16x8xf32>)
// CHECK: tensor.insert_slice %[[OUT]] into %[[O]][0, %[[START]], 0, 0] [1, %[[LEN]], 4, 8]
// CHECK: tensor.insert_slice %[[FINAL]] into %[[S]][%[[SEQ]], 0, 0, 0]
// CHECK-NOT: gdn.delta_rule {{.*}} cu_seqlens
func.func @packed(%q: tensor<1x?x2x16xf32>, %k: tensor<1x?x2x16xf32>, %v: tensor<1x?x4x8xf32>, %g: tensor<1x?x4xf32>, %beta: tensor<1x?x4xf32>, %h: tensor<?x4x16x8xf32>, %cu: tensor<?xi32>) -> (tensor<1x?x4x8xf32>, tensor<?x4x16x8xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h) cu_seqlens(%cu) {scale = 0.5 : f32} : (tensor<1x?x2x16xf32>, tensor<1x?x2x16xf32>, tensor<1x?x4x8xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, tensor<?x4x16x8xf32>, tensor<?xi32>) -> (tensor<1x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return %o, %s : tensor<1x?x4x8xf32>, tensor<?x4x16x8xf32>
}

// -----

// A pool read through state_indices and written through write_indices: the
// slots that name one ([0, S)) are gathered into per-entry states, each
// entry's row written once (zeros where the index names no slot), the
// dense step runs, and its states are inserted into the pool operand
// itself, after every read.

// CHECK-LABEL: func.func @pool_step
// CHECK-SAME: %[[POOL:[a-z0-9]+]]: tensor<?x4x16x8xf32>, %[[READ:[a-z0-9]+]]: tensor<?xi32>, %[[WRITE:[a-z0-9]+]]: tensor<?xi32>
// CHECK: %[[EMPTY:.+]] = tensor.empty(%{{.+}}) : tensor<?x4x16x8xf32>
// CHECK-NOT: linalg.fill
// CHECK: %[[SLOTS:.+]] = tensor.dim %[[POOL]]
// CHECK: %[[GATHERED:.+]] = scf.for %[[E:.+]] = {{.*}} iter_args(%[[ACC:.+]] = %[[EMPTY]])
// CHECK: %[[R:.+]] = tensor.extract %[[READ]][%[[E]]]
// CHECK: %[[SLOT:.+]] = arith.index_cast %[[R]] : i32 to index
// CHECK: arith.cmpi sge, %[[SLOT]]
// CHECK: arith.cmpi slt, %[[SLOT]], %[[SLOTS]]
// CHECK: scf.if
// CHECK: tensor.extract_slice %[[POOL]][%[[SLOT]], 0, 0, 0] [1, 4, 16, 8]
// CHECK: tensor.insert_slice {{.*}} into %[[ACC]][%[[E]], 0, 0, 0]
// CHECK: } else {
// CHECK: %[[ZERO:.+]] = linalg.fill {{.*}} -> tensor<1x4x16x8xf32>
// CHECK: tensor.insert_slice %[[ZERO]] into %[[ACC]][%[[E]], 0, 0, 0]
// CHECK: %[[OUT:.+]], %[[NEW:.+]] = gdn.delta_rule_step {{.*}}, %[[GATHERED]] :
// CHECK: scf.for %[[E2:.+]] = {{.*}} iter_args(%[[P:.+]] = %[[POOL]])
// CHECK: %[[W:.+]] = tensor.extract %[[WRITE]][%[[E2]]]
// CHECK: %[[WSLOT:.+]] = arith.index_cast %[[W]]
// CHECK: tensor.extract_slice %[[NEW]][%[[E2]], 0, 0, 0]
// CHECK: tensor.insert_slice {{.*}} into %[[P]][%[[WSLOT]], 0, 0, 0]
// CHECK-NOT: state_indices
func.func @pool_step(%q: tensor<?x2x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %pool: tensor<?x4x16x8xf32>, %read: tensor<?xi32>, %write: tensor<?xi32>) -> (tensor<?x4x8xf32>, tensor<?x4x16x8xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %pool state_indices(%read) write_indices(%write) : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x16x8xf32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x4x8xf32>, tensor<?x4x16x8xf32>)
  return %o, %s : tensor<?x4x8xf32>, tensor<?x4x16x8xf32>
}

// -----

// Packed sequences from a pool: the gather gives one state per sequence,
// the packed op takes them, and the scatter writes its final states back.

// CHECK-LABEL: func.func @packed_pool
// CHECK: scf.for
// CHECK: scf.for
// CHECK: gdn.delta_rule
// CHECK-NOT: cu_seqlens
// CHECK: scf.for
// CHECK: tensor.insert_slice
// CHECK: return
func.func @packed_pool(%q: tensor<1x?x2x16xf32>, %v: tensor<1x?x4x8xf32>, %g: tensor<1x?x4xf32>, %pool: tensor<?x4x16x8xf32>, %cu: tensor<?xi32>, %read: tensor<?xi32>) -> (tensor<1x?x4x8xf32>, tensor<?x4x16x8xf32>) {
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g initial_state(%pool) cu_seqlens(%cu) state_indices(%read) : (tensor<1x?x2x16xf32>, tensor<1x?x2x16xf32>, tensor<1x?x4x8xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, tensor<?x4x16x8xf32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<1x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return %o, %s : tensor<1x?x4x8xf32>, tensor<?x4x16x8xf32>
}

// -----

// Raw gates: g = -exp(A_log) softplus(a + dt_bias) and beta = sigmoid(b),
// element-wise in f32 with A_log and dt_bias per value head, then the op
// without them.

// CHECK-LABEL: func.func @raw_gates
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<?x4xbf16>, %[[B:[a-z0-9]+]]: tensor<?x4xbf16>
// CHECK: %[[G:.+]] = linalg.generic {{.*}} ins(%[[A]], %{{.+}}, %{{.+}} : tensor<?x4xbf16>, tensor<4xf32>, tensor<4xf32>)
// CHECK: arith.extf
// CHECK: math.log1p
// CHECK: arith.cmpf ogt
// CHECK: math.exp
// CHECK: arith.negf
// CHECK: %[[BETA:.+]] = linalg.generic {{.*}} ins(%[[B]] : tensor<?x4xbf16>)
// CHECK: gdn.delta_rule_step {{.*}}, %[[G]], %[[BETA]], {{[^ ]+}} : (tensor<?x2x16xbf16>, tensor<?x2x16xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x16x8xf32>)
func.func @raw_gates(%q: tensor<?x2x16xbf16>, %v: tensor<?x4x8xbf16>, %a: tensor<?x4xbf16>, %b: tensor<?x4xbf16>, %h: tensor<?x4x16x8xf32>, %alog: tensor<4xf32>, %dt: tensor<4xf32>) -> (tensor<?x4x8xbf16>, tensor<?x4x16x8xf32>) {
  %o, %s = gdn.delta_rule_step %q, %q, %v, %a, %b, %h gates(%alog, %dt) : (tensor<?x2x16xbf16>, tensor<?x2x16xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<?x4x16x8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4x8xbf16>, tensor<?x4x16x8xf32>)
  return %o, %s : tensor<?x4x8xbf16>, tensor<?x4x16x8xf32>
}

// -----

// A bf16 state is storage: widened before the op, rounded after it.

// CHECK-LABEL: func.func @bf16_state
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: gdn.delta_rule {{.*}} -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>)
// CHECK: arith.truncf %{{.+}} : f32 to bf16
func.func @bf16_state(%q: tensor<?x?x2x16xf32>, %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4xf32>, %h: tensor<?x4x16x8xbf16>) -> tensor<?x4x16x8xbf16> {
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g initial_state(%h) : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x8xbf16>) -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xbf16>)
  return %s : tensor<?x4x16x8xbf16>
}

// -----

// Draft tokens to verify: the gathered state goes through T steps, each
// step's output and state inserted at its token; the pool is only read.

// CHECK-LABEL: func.func @verify
// CHECK-SAME: %[[POOL:[a-z0-9]+]]: tensor<?x4x16x8xf32>
// CHECK: tensor.extract_slice %[[POOL]]
// CHECK: scf.for %[[T:.+]] = {{.*}} iter_args(%[[S:.+]] = %{{.+}}, %[[O:.+]] = %{{.+}}, %[[ALL:.+]] = %{{.+}})
// CHECK: %[[OUT:.+]], %[[NEW:.+]] = gdn.delta_rule_step {{.*}}, %[[S]] {scale = 5.000000e-01 : f32}
// CHECK: tensor.insert_slice %[[OUT]] into %[[O]][0, %[[T]], 0, 0]
// CHECK: tensor.insert_slice %[[NEW]] into %[[ALL]][0, %[[T]], 0, 0, 0]
// CHECK: linalg.copy ins(%[[NEW]] {{.*}} outs(%[[S]]
// CHECK-NOT: tensor.insert_slice {{.*}} into %[[POOL]]
func.func @verify(%q: tensor<?x?x2x16xf32>, %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4xf32>, %pool: tensor<?x4x16x8xf32>, %i: tensor<?xi32>) -> (tensor<?x?x4x8xf32>, tensor<?x?x4x16x8xf32>) {
  %o, %s = gdn.delta_rule_verify %q, %q, %v, %g, %g, %pool state_indices(%i) {scale = 0.5 : f32} : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x8xf32>, tensor<?xi32>) -> (tensor<?x?x4x8xf32>, tensor<?x?x4x16x8xf32>)
  return %o, %s : tensor<?x?x4x8xf32>, tensor<?x?x4x16x8xf32>
}

// -----

// Checkpoints on dense tokens: segments of N tokens, each a dense op from
// the state the last one left, its final state inserted as the segment's
// checkpoint; then the tokens after the last whole segment.

// CHECK-LABEL: func.func @checkpoints
// CHECK: %[[SEGMENTS:.+]] = arith.divui %{{.+}}, %[[N:.+]] : index
// CHECK: scf.for %[[C:.+]] = %{{.+}} to %[[SEGMENTS]] step %{{.+}} iter_args(%[[S:.+]] = %{{.+}}, %[[O:.+]] = %{{.+}}, %[[ALL:.+]] = %{{.+}})
// CHECK: gdn.delta_rule {{.*}} initial_state(%[[S]]) : {{.*}}tensor<?x32x2x16xf32>
// CHECK: tensor.insert_slice %{{.+}} into %[[ALL]][0, %[[C]], 0, 0, 0]
// CHECK: gdn.delta_rule
// CHECK-NOT: checkpoint_every
func.func @checkpoints(%q: tensor<?x?x2x16xf32>, %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>, tensor<?x?x4x16x8xf32>) {
  %o, %s, %c = gdn.delta_rule %q, %q, %v, %g, %g {checkpoint_every = 32 : i64} : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>, tensor<?x?x4x16x8xf32>)
  return %o, %s, %c : tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>, tensor<?x?x4x16x8xf32>
}
