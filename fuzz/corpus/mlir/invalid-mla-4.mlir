func.func @cache_batch(%x: tensor<2x?x32xf32>, %latent: tensor<3x?x16xf32>, %k_rope: tensor<3x?x8xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) {
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) cache(%latent, %k_rope) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<2x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>, tensor<3x?x16xf32>, tensor<3x?x8xf32>) -> (tensor<2x?x32xf32>, tensor<2x?x16xf32>, tensor<2x?x8xf32>)
  return
}
