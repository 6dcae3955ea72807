// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @value_heads_not_a_multiple(%x: tensor<?x?x64xf32>, %qkvz: tensor<144x64xf32>,
    %ba: tensor<12x64xf32>, %conv: tensor<96x1x4xf32>, %dt: tensor<6xf32>,
    %alog: tensor<6xf32>, %norm: tensor<8xf32>, %out: tensor<64x48xf32>) {
  // expected-error @+1 {{num_value_heads = 6 must be a multiple of num_key_heads = 4}}
  %y, %s, %c = gdn.qwen_gated_deltanet %x weights(%qkvz, %ba, %conv, %dt, %alog, %norm, %out)
      {key_head_dim = 12 : i64, layout = #gdn.projection_layout<grouped>,
       num_key_heads = 4 : i64, num_value_heads = 6 : i64, value_head_dim = 8 : i64}
      : (tensor<?x?x64xf32>, tensor<144x64xf32>, tensor<12x64xf32>, tensor<96x1x4xf32>,
         tensor<6xf32>, tensor<6xf32>, tensor<8xf32>, tensor<64x48xf32>)
      -> (tensor<?x?x64xf32>, tensor<?x6x12x8xf32>, tensor<?x3x96xf32>)
  return
}

// -----

func.func @grouped_projection_shape(%x: tensor<?x?x64xf32>, %qkvz: tensor<140x64xf32>,
    %ba: tensor<12x64xf32>, %conv: tensor<96x1x4xf32>, %dt: tensor<6xf32>,
    %alog: tensor<6xf32>, %norm: tensor<8xf32>, %out: tensor<64x48xf32>) {
  // expected-error @+1 {{weight 'in_proj_qkvz.weight' must be 'tensor<144x64xf32>', but got 'tensor<140x64xf32>'}}
  %y, %s, %c = gdn.qwen_gated_deltanet %x weights(%qkvz, %ba, %conv, %dt, %alog, %norm, %out)
      {key_head_dim = 12 : i64, layout = #gdn.projection_layout<grouped>,
       num_key_heads = 2 : i64, num_value_heads = 6 : i64, value_head_dim = 8 : i64}
      : (tensor<?x?x64xf32>, tensor<140x64xf32>, tensor<12x64xf32>, tensor<96x1x4xf32>,
         tensor<6xf32>, tensor<6xf32>, tensor<8xf32>, tensor<64x48xf32>)
      -> (tensor<?x?x64xf32>, tensor<?x6x12x8xf32>, tensor<?x3x96xf32>)
  return
}

// -----

func.func @split_layout_weight_count(%x: tensor<?x?x64xf32>, %qkvz: tensor<144x64xf32>,
    %ba: tensor<12x64xf32>, %conv: tensor<96x1x4xf32>, %dt: tensor<6xf32>,
    %alog: tensor<6xf32>, %norm: tensor<8xf32>, %out: tensor<64x48xf32>) {
  // expected-error @+1 {{expects the weights in_proj_qkv.weight, in_proj_z.weight, in_proj_b.weight, in_proj_a.weight, conv1d.weight, dt_bias, A_log, norm.weight, out_proj.weight}}
  %y, %s, %c = gdn.qwen_gated_deltanet %x weights(%qkvz, %ba, %conv, %dt, %alog, %norm, %out)
      {key_head_dim = 12 : i64, layout = #gdn.projection_layout<split>,
       num_key_heads = 2 : i64, num_value_heads = 6 : i64, value_head_dim = 8 : i64}
      : (tensor<?x?x64xf32>, tensor<144x64xf32>, tensor<12x64xf32>, tensor<96x1x4xf32>,
         tensor<6xf32>, tensor<6xf32>, tensor<8xf32>, tensor<64x48xf32>)
      -> (tensor<?x?x64xf32>, tensor<?x6x12x8xf32>, tensor<?x3x96xf32>)
  return
}

// -----

func.func @conv_state_shape(%x: tensor<?x?x64xf32>, %qkvz: tensor<144x64xf32>,
    %ba: tensor<12x64xf32>, %conv: tensor<96x1x4xf32>, %dt: tensor<6xf32>,
    %alog: tensor<6xf32>, %norm: tensor<8xf32>, %out: tensor<64x48xf32>,
    %cs: tensor<?x4x96xf32>, %s0: tensor<?x6x12x8xf32>) {
  // expected-error @+1 {{operand 'conv_state' must be [B, 3, 96] (f32), but got 'tensor<?x4x96xf32>'}}
  %y, %s, %c = gdn.qwen_gated_deltanet %x weights(%qkvz, %ba, %conv, %dt, %alog, %norm, %out)
      state(%cs, %s0)
      {key_head_dim = 12 : i64, layout = #gdn.projection_layout<grouped>,
       num_key_heads = 2 : i64, num_value_heads = 6 : i64, value_head_dim = 8 : i64}
      : (tensor<?x?x64xf32>, tensor<144x64xf32>, tensor<12x64xf32>, tensor<96x1x4xf32>,
         tensor<6xf32>, tensor<6xf32>, tensor<8xf32>, tensor<64x48xf32>,
         tensor<?x4x96xf32>, tensor<?x6x12x8xf32>)
      -> (tensor<?x?x64xf32>, tensor<?x6x12x8xf32>, tensor<?x3x96xf32>)
  return
}

// -----

func.func @attention_kv_heads(%x: tensor<?x?x64xf32>, %q: tensor<128x64xf32>,
    %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>,
    %qn: tensor<16xf32>, %kn: tensor<16xf32>) {
  // expected-error @+1 {{num_heads = 4 must be a multiple of num_kv_heads = 3}}
  %y, %keys, %values = gdn.gated_attention %x weights(%q, %k, %v, %o, %qn, %kn)
      {head_dim = 16 : i64, num_heads = 4 : i64, num_kv_heads = 3 : i64,
       rope_theta = 1.0e+06 : f32, rotary_dim = 8 : i64}
      : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>,
         tensor<64x64xf32>, tensor<16xf32>, tensor<16xf32>)
      -> (tensor<?x?x64xf32>, tensor<?x?x3x16xf32>, tensor<?x?x3x16xf32>)
  return
}

// -----

func.func @attention_query_and_gate(%x: tensor<?x?x64xf32>, %q: tensor<64x64xf32>,
    %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>,
    %qn: tensor<16xf32>, %kn: tensor<16xf32>) {
  // expected-error @+1 {{weight 'q_proj.weight' must be 'tensor<128x64xf32>', but got 'tensor<64x64xf32>'}}
  %y, %keys, %values = gdn.gated_attention %x weights(%q, %k, %v, %o, %qn, %kn)
      {head_dim = 16 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64,
       rope_theta = 1.0e+06 : f32, rotary_dim = 8 : i64}
      : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>,
         tensor<64x64xf32>, tensor<16xf32>, tensor<16xf32>)
      -> (tensor<?x?x64xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>)
  return
}

// -----

func.func @attention_rotary_dim(%x: tensor<?x?x64xf32>, %q: tensor<128x64xf32>,
    %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>,
    %qn: tensor<16xf32>, %kn: tensor<16xf32>) {
  // expected-error @+1 {{rotary_dim must be even and at most head_dim = 16, but got 7}}
  %y, %keys, %values = gdn.gated_attention %x weights(%q, %k, %v, %o, %qn, %kn)
      {head_dim = 16 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64,
       rope_theta = 1.0e+06 : f32, rotary_dim = 7 : i64}
      : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>,
         tensor<64x64xf32>, tensor<16xf32>, tensor<16xf32>)
      -> (tensor<?x?x64xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>)
  return
}

// -----

func.func @attention_cache_heads(%x: tensor<?x?x64xf32>, %q: tensor<128x64xf32>,
    %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>,
    %qn: tensor<16xf32>, %kn: tensor<16xf32>, %pk: tensor<?x?x4x16xf32>,
    %pv: tensor<?x?x4x16xf32>) {
  // expected-error @+1 {{operand 'past_keys' must have shape [B, P, Hkv, D] = [?, ?, 2, 16]}}
  %y, %keys, %values = gdn.gated_attention %x weights(%q, %k, %v, %o, %qn, %kn)
      cache(%pk, %pv)
      {head_dim = 16 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64,
       rope_theta = 1.0e+06 : f32, rotary_dim = 8 : i64}
      : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>,
         tensor<64x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<?x?x4x16xf32>,
         tensor<?x?x4x16xf32>)
      -> (tensor<?x?x64xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>)
  return
}

// -----

// In place, the keys and values results are the whole caches (S = P + T).
func.func @attention_in_place_rows(%x: tensor<1x2x64xf32>, %q: tensor<128x64xf32>,
    %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>,
    %qn: tensor<16xf32>, %kn: tensor<16xf32>, %pk: tensor<1x7x2x16xf32>,
    %pv: tensor<1x7x2x16xf32>) {
  // expected-error @+1 {{operand 'past_keys' must have shape [B, S, Hkv, D] = [1, 2, 2, 16] (S = 2 from result 'keys'), but got 'tensor<1x7x2x16xf32>'}}
  %y, %keys, %values = gdn.gated_attention %x weights(%q, %k, %v, %o, %qn, %kn)
      cache(%pk, %pv)
      {head_dim = 16 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64,
       rope_theta = 1.0e+06 : f32, rotary_dim = 8 : i64, in_place_cache}
      : (tensor<1x2x64xf32>, tensor<128x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>,
         tensor<64x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<1x7x2x16xf32>,
         tensor<1x7x2x16xf32>)
      -> (tensor<1x2x64xf32>, tensor<1x2x2x16xf32>, tensor<1x2x2x16xf32>)
  return
}

// -----

func.func @attention_in_place_without_cache(%x: tensor<?x?x64xf32>, %q: tensor<128x64xf32>,
    %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>,
    %qn: tensor<16xf32>, %kn: tensor<16xf32>) {
  // expected-error @+1 {{in_place_cache needs the caches to write into: cache(%keys, %values)}}
  %y, %keys, %values = gdn.gated_attention %x weights(%q, %k, %v, %o, %qn, %kn)
      {head_dim = 16 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64,
       rope_theta = 1.0e+06 : f32, rotary_dim = 8 : i64, in_place_cache}
      : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>,
         tensor<64x64xf32>, tensor<16xf32>, tensor<16xf32>)
      -> (tensor<?x?x64xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>)
  return
}
