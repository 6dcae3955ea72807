// RUN: gdn-opt %s -split-input-file -gdn-decompose-layers | FileCheck %s

// MLA decomposes into projections, the latent RMSNorm, RoPE (cos/sin of
// position x frequency, the partner element read with tensor.extract), the
// scores of the no-RoPE and RoPE parts, a causal softmax (masked positions
// selected to -inf for the maximum and to 0 after exp), and o_proj.

// CHECK-LABEL: func.func @mla
// CHECK-NOT: gdn.mla
// Projections are linalg.contract ops; the causal mask puts -inf where
// s > P + t, and linalg.softmax (decomposed in the next round) does the
// rest: max, exp of the difference, sum, division.
// CHECK: linalg.contract
// CHECK: math.cos
// CHECK: math.sin
// CHECK: math.rsqrt
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.cmpi ule
// CHECK: arith.maxnumf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK-NOT: linalg.softmax
// CHECK: return
func.func @mla(%x: tensor<?x?x32xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return %y, %l, %k : tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>
}

// -----

// With a low-rank q: q_a_proj, its RMSNorm, then q_b_proj.
// CHECK-LABEL: func.func @mla_lora
// CHECK: math.rsqrt
// CHECK: math.rsqrt
func.func @mla_lora(%x: tensor<?x?x32xf32>, %w0: tensor<12x32xf32>, %w1: tensor<12xf32>, %w2: tensor<32x12xf32>, %w3: tensor<24x32xf32>, %w4: tensor<16xf32>, %w5: tensor<40x16xf32>, %w6: tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {num_heads = 2 : i64, q_lora_rank = 12 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<?x?x32xf32>, tensor<12x32xf32>, tensor<12xf32>, tensor<32x12xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return %y, %l, %k : tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>
}

// -----

// With a cache of P tokens: RoPE and the causal mask shift the new tokens
// to positions P.., the keys are the cached latents and RoPE keys followed
// by the new ones, and the results are the new tokens' latents and keys.
// CHECK-LABEL: func.func @mla_cached
// CHECK-SAME: %[[LATENT:[^:]+]]: tensor<?x?x16xf32>, %[[KROPE:[^:]+]]: tensor<?x?x8xf32>
// CHECK: %[[P:.+]] = tensor.dim %[[LATENT]], %c1
// CHECK: math.cos
// CHECK: tensor.insert_slice %[[LATENT]] into %{{.+}}[0, 0, 0]
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, %{{.+}}, 0]
// CHECK: tensor.insert_slice %[[KROPE]] into %{{.+}}[0, 0, 0]
// CHECK: arith.cmpi ule
// CHECK: return
func.func @mla_cached(%x: tensor<?x?x32xf32>, %latent: tensor<?x?x16xf32>, %k_rope: tensor<?x?x8xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) cache(%latent, %k_rope) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return %y, %l, %k : tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>
}

// -----

// With in_place_cache the caches hold P + T rows: P is their rows less T,
// the new latents and RoPE keys are written into rows P.. of the caches
// themselves (no new tensor, no copy of the cached rows), the attention
// reads those, and the results are the caches so written.
// CHECK-LABEL: func.func @mla_in_place
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x?x32xf32>, %[[LATENT:[^:]+]]: tensor<?x?x16xf32>, %[[KROPE:[^:]+]]: tensor<?x?x8xf32>
// CHECK: %[[S:.+]] = tensor.dim %[[LATENT]], %c1
// CHECK: %[[T:.+]] = tensor.dim %[[X]], %c1
// CHECK: %[[P:.+]] = arith.subi %[[S]], %[[T]]
// CHECK-NOT: tensor.empty() : tensor<?x?x16xf32>
// CHECK: %[[ALL:.+]] = tensor.insert_slice %{{.+}} into %[[LATENT]][0, %[[P]], 0]
// CHECK: %[[ALLK:.+]] = tensor.insert_slice %{{.+}} into %[[KROPE]][0, %[[P]], 0]
// CHECK: linalg.contract {{.+}} ins(%[[ALL]], 
// CHECK: return %{{.+}}, %[[ALL]], %[[ALLK]]
func.func @mla_in_place(%x: tensor<?x?x32xf32>, %latent: tensor<?x?x16xf32>, %k_rope: tensor<?x?x8xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) cache(%latent, %k_rope) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32, in_place_cache} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return %y, %l, %k : tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>
}
