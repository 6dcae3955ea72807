// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @q_proj_shape(%x: tensor<?x?x32xf32>, %w0: tensor<30x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>)  {
  // expected-error @+1 {{weight 'q_proj.weight' must be 'tensor<32x32xf32>', but got 'tensor<30x32xf32>'}}
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<?x?x32xf32>, tensor<30x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return
}

// -----

func.func @kv_b_shape(%x: tensor<?x?x32xf32>, %w0: tensor<12x32xf32>, %w1: tensor<12xf32>, %w2: tensor<32x12xf32>, %w3: tensor<24x32xf32>, %w4: tensor<16xf32>, %w5: tensor<36x16xf32>, %w6: tensor<32x24xf32>)  {
  // expected-error @+1 {{weight 'kv_b_proj.weight' must be 'tensor<40x16xf32>', but got 'tensor<36x16xf32>'}}
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4, %w5, %w6) {num_heads = 2 : i64, q_lora_rank = 12 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<?x?x32xf32>, tensor<12x32xf32>, tensor<12xf32>, tensor<32x12xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<36x16xf32>, tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return
}

// -----

func.func @count(%x: tensor<?x?x32xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>)  {
  // expected-error @+1 {{expects 7 weights for q_lora_rank = 12, but got 5}}
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) {num_heads = 2 : i64, q_lora_rank = 12 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return
}

// -----

func.func @cache_width(%x: tensor<?x?x32xf32>, %latent: tensor<?x?x12xf32>, %k_rope: tensor<?x?x8xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) {
  // expected-error @+1 {{operand 'past_latent'}}
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) cache(%latent, %k_rope) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>, tensor<?x?x12xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return
}

// -----

func.func @cache_batch(%x: tensor<2x?x32xf32>, %latent: tensor<3x?x16xf32>, %k_rope: tensor<3x?x8xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) {
  // expected-error @+1 {{operand 'past_latent'}}
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) cache(%latent, %k_rope) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<2x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>, tensor<3x?x16xf32>, tensor<3x?x8xf32>) -> (tensor<2x?x32xf32>, tensor<2x?x16xf32>, tensor<2x?x8xf32>)
  return
}

// -----

// A head count whose products overflow int64_t (2^62 x 16) used to pass with
// a zero-sized weight.
func.func @huge_heads(%x: tensor<?x?x32xf32>, %w0: tensor<0x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<0x16xf32>, %w4: tensor<32x0xf32>)  {
  // expected-error @+1 {{attribute 'num_heads' = 4611686018427387904 exceeds the largest supported size 131072}}
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) {num_heads = 4611686018427387904 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<?x?x32xf32>, tensor<0x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<0x16xf32>, tensor<32x0xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return
}

// -----

func.func @nan_rope_theta(%x: tensor<?x?x32xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>)  {
  // expected-error @+1 {{attribute 'rope_theta' must be a positive finite number, but got nan}}
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 0x7FC00000 : f32} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return
}

// -----

func.func @in_place_without_cache(%x: tensor<?x?x32xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) {
  // expected-error @+1 {{in_place_cache needs the caches to write into: cache(%latent, %k_rope)}}
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32, in_place_cache} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return
}

// -----

// In place, the results are the whole caches: P + T rows, as the operands.
func.func @in_place_result_rows(%x: tensor<1x1x32xf32>, %latent: tensor<1x9x16xf32>, %k_rope: tensor<1x9x8xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) {
  // expected-error @+1 {{result 'latent' must have shape [B, S, kv_lora_rank] = [1, 9, 16] (S = 9 from operand 'past_latent'), but got 'tensor<1x1x16xf32>'}}
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) cache(%latent, %k_rope) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32, in_place_cache} : (tensor<1x1x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>, tensor<1x9x16xf32>, tensor<1x9x8xf32>) -> (tensor<1x1x32xf32>, tensor<1x1x16xf32>, tensor<1x1x8xf32>)
  return
}

// -----

func.func @in_place_no_room(%x: tensor<1x4x32xf32>, %latent: tensor<1x3x16xf32>, %k_rope: tensor<1x3x8xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) {
  // expected-error @+1 {{in_place_cache: the caches have 3 rows, fewer than the 4 new tokens they must make room for}}
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) cache(%latent, %k_rope) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32, in_place_cache} : (tensor<1x4x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>, tensor<1x3x16xf32>, tensor<1x3x8xf32>) -> (tensor<1x4x32xf32>, tensor<1x3x16xf32>, tensor<1x3x8xf32>)
  return
}

// -----

func.func @attention_block(%x: tensor<?x?x32xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) {
  // expected-error @+1 {{attention_block must be 1..1024, but got 0}}
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32, attention_block = 0 : i64} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return
}

// -----

func.func @key_split(%x: tensor<?x?x32xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) {
  // expected-error @+1 {{key_split must be 1..1024, but got 0}}
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32, key_split = 0 : i64} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return
}
