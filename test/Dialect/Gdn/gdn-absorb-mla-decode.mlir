// RUN: gdn-opt %s -split-input-file -gdn-absorb-mla-decode | FileCheck %s --check-prefix=MARK
// RUN: gdn-opt %s -split-input-file -gdn-absorb-mla-decode -gdn-decompose-layers | FileCheck %s

// Only the op that continues a cache is marked.
// MARK-LABEL: func.func @cached
// MARK: gdn.mla {{.+}} cache({{.+}}) {absorbed,
// MARK-LABEL: func.func @prefill
// MARK-NOT: absorbed

// The absorbed form: kv_b_proj [2 * (8 + 12), 16] split per head into its
// key part [2, 8, 16] and value part [2, 12, 16]; no projection of the
// latents through kv_b_proj (three contractions: q_proj, kv_a and o_proj),
// the queries taken into the latent space instead, the causal softmax over
// the scores against the latents.
// CHECK-LABEL: func.func @cached
// CHECK-SAME: %[[KVB:[^:]+]]: tensor<40x16xbf16>
// CHECK-COUNT-2: linalg.contract
// CHECK: tensor.expand_shape %[[KVB]] {{\[}}[0, 1], [2]] output_shape [2, 20, 16] : tensor<40x16xbf16> into tensor<2x20x16xbf16>
// CHECK: tensor.extract_slice %{{.+}}[0, 0, 0] [2, 8, 16] [1, 1, 1]
// CHECK: tensor.expand_shape %[[KVB]]
// CHECK: tensor.extract_slice %{{.+}}[0, 8, 0] [2, 12, 16] [1, 1, 1]
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<?x?x2x8xf32>, tensor<2x8x16xbf16>)
// CHECK: arith.extf
// CHECK: arith.cmpi ule
// CHECK: math.exp
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<?x?x2x16xf32>, tensor<2x12x16xbf16>)
// CHECK: linalg.contract
// CHECK-NOT: linalg.contract
// CHECK: return
func.func @cached(%x: tensor<?x?x32xf32>, %latent: tensor<?x?x16xf32>, %k_rope: tensor<?x?x8xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %kvb: tensor<40x16xbf16>, %w4: tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %kvb, %w4) cache(%latent, %k_rope) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xbf16>, tensor<32x24xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return %y, %l, %k : tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>
}

// -----

// Without a cache the expanded form stays: four contractions, kv_b_proj's
// among them.
// CHECK-LABEL: func.func @prefill
// CHECK-COUNT-4: linalg.contract
// CHECK-NOT: tensor.expand_shape %{{.+}} {{\[}}[0, 1], [2]]
func.func @prefill(%x: tensor<?x?x32xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return %y, %l, %k : tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>
}
