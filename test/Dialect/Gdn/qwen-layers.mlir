// RUN: gdn-opt %s | gdn-opt | FileCheck %s
// RUN: gdn-opt %s --gdn-decompose-layers | FileCheck %s --check-prefix=DECOMPOSED

// The Qwen3-Next GDN layer (grouped projections: per key head q, k, the v
// and z of its 3 value heads), continuing a sequence from its states.
// CHECK-LABEL: func.func @qwen_next_gdn
// CHECK: gdn.qwen_gated_deltanet %{{.*}} weights({{.*}}) state(%{{.*}}, %{{.*}}) {{{.*}}layout = #gdn.projection_layout<grouped>
// DECOMPOSED-LABEL: func.func @qwen_next_gdn
// DECOMPOSED-NOT: gdn.qwen_gated_deltanet
// The conv reads [q | k | v] of the two key heads' groups.
// DECOMPOSED: tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] output_shape [%{{.*}}, %{{.*}}, 2, 72]
// DECOMPOSED: gdn.delta_rule %{{.*}} initial_state(%{{.*}}) {scale = 0.288675129 : f32} : (tensor<?x?x2x12xf32>, tensor<?x?x2x12xf32>, tensor<?x?x6x8xf32>, tensor<?x?x6xf32>, tensor<?x?x6xf32>, tensor<?x6x12x8xf32>)
func.func @qwen_next_gdn(%x: tensor<?x?x64xf32>, %qkvz: tensor<144x64xf32>,
    %ba: tensor<12x64xf32>, %conv: tensor<96x1x4xf32>, %dt: tensor<6xf32>,
    %alog: tensor<6xf32>, %norm: tensor<8xf32>, %out: tensor<64x48xf32>,
    %cs: tensor<?x3x96xf32>, %s0: tensor<?x6x12x8xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x6x12x8xf32>, tensor<?x3x96xf32>) {
  %y, %s, %c = gdn.qwen_gated_deltanet %x weights(%qkvz, %ba, %conv, %dt, %alog, %norm, %out)
      state(%cs, %s0)
      {key_head_dim = 12 : i64, layout = #gdn.projection_layout<grouped>,
       num_key_heads = 2 : i64, num_value_heads = 6 : i64, value_head_dim = 8 : i64}
      : (tensor<?x?x64xf32>, tensor<144x64xf32>, tensor<12x64xf32>, tensor<96x1x4xf32>,
         tensor<6xf32>, tensor<6xf32>, tensor<8xf32>, tensor<64x48xf32>,
         tensor<?x3x96xf32>, tensor<?x6x12x8xf32>)
      -> (tensor<?x?x64xf32>, tensor<?x6x12x8xf32>, tensor<?x3x96xf32>)
  return %y, %s, %c : tensor<?x?x64xf32>, tensor<?x6x12x8xf32>, tensor<?x3x96xf32>
}

// The Qwen3.5 layout: q, k and v in one projection, z, b and a apart.
// CHECK-LABEL: func.func @qwen35_gdn
// CHECK: layout = #gdn.projection_layout<split>
// DECOMPOSED-LABEL: func.func @qwen35_gdn
// DECOMPOSED: gdn.delta_rule {{.*}} {scale = 0.353553385 : f32} : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x4x12xf32>
func.func @qwen35_gdn(%x: tensor<?x?x64xf32>, %qkv: tensor<80x64xf32>,
    %z: tensor<48x64xf32>, %b: tensor<4x64xf32>, %a: tensor<4x64xf32>,
    %conv: tensor<80x1x4xf32>, %dt: tensor<4xf32>, %alog: tensor<4xf32>,
    %norm: tensor<12xf32>, %out: tensor<64x48xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x4x8x12xf32>, tensor<?x3x80xf32>) {
  %y, %s, %c = gdn.qwen_gated_deltanet %x weights(%qkv, %z, %b, %a, %conv, %dt, %alog, %norm, %out)
      {key_head_dim = 8 : i64, layout = #gdn.projection_layout<split>,
       num_key_heads = 2 : i64, num_value_heads = 4 : i64, value_head_dim = 12 : i64}
      : (tensor<?x?x64xf32>, tensor<80x64xf32>, tensor<48x64xf32>, tensor<4x64xf32>,
         tensor<4x64xf32>, tensor<80x1x4xf32>, tensor<4xf32>, tensor<4xf32>,
         tensor<12xf32>, tensor<64x48xf32>)
      -> (tensor<?x?x64xf32>, tensor<?x4x8x12xf32>, tensor<?x3x80xf32>)
  return %y, %s, %c : tensor<?x?x64xf32>, tensor<?x4x8x12xf32>, tensor<?x3x80xf32>
}

// Gated attention with 4 query heads over 2 key/value heads, half of each
// head rotated, after P cached tokens.
// CHECK-LABEL: func.func @gated_attention
// CHECK: gdn.gated_attention %{{.*}} weights({{.*}}) cache(%{{.*}}, %{{.*}})
// DECOMPOSED-LABEL: func.func @gated_attention
// DECOMPOSED-NOT: gdn.gated_attention
// The queries grouped by the key/value head they read.
// DECOMPOSED: tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2, 3], [4]] output_shape [%{{.*}}, %{{.*}}, 2, 2, 16] : tensor<?x?x4x16xf32> into tensor<?x?x2x2x16xf32>
// DECOMPOSED: math.exp
// DECOMPOSED: arith.divf
func.func @gated_attention(%x: tensor<?x?x64xf32>, %q: tensor<128x64xf32>,
    %k: tensor<32x64xf32>, %v: tensor<32x64xf32>, %o: tensor<64x64xf32>,
    %qn: tensor<16xf32>, %kn: tensor<16xf32>, %pk: tensor<?x?x2x16xf32>,
    %pv: tensor<?x?x2x16xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>) {
  %y, %keys, %values = gdn.gated_attention %x weights(%q, %k, %v, %o, %qn, %kn)
      cache(%pk, %pv)
      {head_dim = 16 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64,
       rope_theta = 1.0e+06 : f32, rotary_dim = 8 : i64}
      : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>,
         tensor<64x64xf32>, tensor<16xf32>, tensor<16xf32>, tensor<?x?x2x16xf32>,
         tensor<?x?x2x16xf32>)
      -> (tensor<?x?x64xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>)
  return %y, %keys, %values : tensor<?x?x64xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>
}

// The norms of these models store their weight as the offset from one: the
// zero-centred form multiplies by (1 + weight). (eps 1e-6 is the default.)
// CHECK-LABEL: func.func @zero_centered_norm
// CHECK: gdn.rms_norm %{{.*}}, %{{.*}} {zero_centered}
// DECOMPOSED-LABEL: func.func @zero_centered_norm
// DECOMPOSED: math.rsqrt
// DECOMPOSED: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// DECOMPOSED: arith.addf %[[ONE]], %{{.*}} : f32
func.func @zero_centered_norm(%x: tensor<?x?x64xf32>, %w: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %y = gdn.rms_norm %x, %w {eps = 1.0e-6 : f32, zero_centered}
      : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}
