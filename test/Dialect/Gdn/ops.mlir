// RUN: gdn-opt %s | gdn-opt | FileCheck %s

// Round trip of gdn.delta_rule and gdn.delta_rule_step through the custom
// assembly format. The default scale (1.0) is elided when printed; any other
// scale is kept.

//===----------------------------------------------------------------------===//
// gdn.delta_rule
//===----------------------------------------------------------------------===//

// Dynamic B and T, grouped value heads (H = 2, Hv = 4), K != V, bf16
// activations with an f32 beta, an initial state, and an explicit scale equal
// to the default.

// CHECK-LABEL: func.func @delta_rule_initial_state_dynamic
// CHECK-SAME:    %[[Q:[a-z0-9_]+]]: tensor<?x?x2x64xbf16>, %[[K:[a-z0-9_]+]]: tensor<?x?x2x64xbf16>
// CHECK-SAME:    %[[V:[a-z0-9_]+]]: tensor<?x?x4x128xbf16>, %[[G:[a-z0-9_]+]]: tensor<?x?x4xf32>
// CHECK-SAME:    %[[BETA:[a-z0-9_]+]]: tensor<?x?x4xf32>, %[[H0:[a-z0-9_]+]]: tensor<?x4x64x128xf32>
// CHECK:         %[[O:[a-z0-9_]+]], %[[S:[a-z0-9_]+]] = gdn.delta_rule %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]] initial_state(%[[H0]])
// CHECK-NOT:     scale
// CHECK-SAME:    : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x64x128xf32>)
// CHECK-SAME:    -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>)
// CHECK:         return %[[O]], %[[S]] : tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>
func.func @delta_rule_initial_state_dynamic(
    %q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>,
    %v: tensor<?x?x4x128xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>,
    %h0: tensor<?x4x64x128xf32>)
    -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      {scale = 1.0 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x128xbf16>,
         tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x64x128xf32>)
      -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>)
  return %o, %s : tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>
}

// Fully static shapes, f32, no initial state, scale omitted.

// CHECK-LABEL: func.func @delta_rule_static_no_initial_state
// CHECK-SAME:    %[[Q:[a-z0-9_]+]]: tensor<2x16x4x32xf32>, %[[K:[a-z0-9_]+]]: tensor<2x16x4x32xf32>
// CHECK-SAME:    %[[V:[a-z0-9_]+]]: tensor<2x16x4x32xf32>, %[[G:[a-z0-9_]+]]: tensor<2x16x4xf32>
// CHECK-SAME:    %[[BETA:[a-z0-9_]+]]: tensor<2x16x4xf32>)
// CHECK:         %[[O:[a-z0-9_]+]], %[[S:[a-z0-9_]+]] = gdn.delta_rule %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]]
// CHECK-NOT:     initial_state
// CHECK-NOT:     scale
// CHECK-SAME:    : (tensor<2x16x4x32xf32>, tensor<2x16x4x32xf32>, tensor<2x16x4x32xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32>)
// CHECK-SAME:    -> (tensor<2x16x4x32xf32>, tensor<2x4x32x32xf32>)
// CHECK:         return %[[O]], %[[S]] : tensor<2x16x4x32xf32>, tensor<2x4x32x32xf32>
func.func @delta_rule_static_no_initial_state(
    %q: tensor<2x16x4x32xf32>, %k: tensor<2x16x4x32xf32>,
    %v: tensor<2x16x4x32xf32>, %g: tensor<2x16x4xf32>, %beta: tensor<2x16x4xf32>)
    -> (tensor<2x16x4x32xf32>, tensor<2x4x32x32xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (tensor<2x16x4x32xf32>, tensor<2x16x4x32xf32>, tensor<2x16x4x32xf32>,
         tensor<2x16x4xf32>, tensor<2x16x4xf32>)
      -> (tensor<2x16x4x32xf32>, tensor<2x4x32x32xf32>)
  return %o, %s : tensor<2x16x4x32xf32>, tensor<2x4x32x32xf32>
}

// Static shapes with a non-default scale, an initial state, K != V and a large
// group (H = 1, Hv = 8).

// CHECK-LABEL: func.func @delta_rule_static_grouped_scale
// CHECK-SAME:    %[[Q:[a-z0-9_]+]]: tensor<1x32x1x64xf32>, %[[K:[a-z0-9_]+]]: tensor<1x32x1x64xf32>
// CHECK-SAME:    %[[V:[a-z0-9_]+]]: tensor<1x32x8x16xf32>, %[[G:[a-z0-9_]+]]: tensor<1x32x8xf32>
// CHECK-SAME:    %[[BETA:[a-z0-9_]+]]: tensor<1x32x8xf32>, %[[H0:[a-z0-9_]+]]: tensor<1x8x64x16xf32>
// CHECK:         %[[O:[a-z0-9_]+]], %[[S:[a-z0-9_]+]] = gdn.delta_rule %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]] initial_state(%[[H0]])
// CHECK-SAME:    {scale = 1.250000e-01 : f32}
// CHECK-SAME:    : (tensor<1x32x1x64xf32>, tensor<1x32x1x64xf32>, tensor<1x32x8x16xf32>, tensor<1x32x8xf32>, tensor<1x32x8xf32>, tensor<1x8x64x16xf32>)
// CHECK-SAME:    -> (tensor<1x32x8x16xf32>, tensor<1x8x64x16xf32>)
// CHECK:         return %[[O]], %[[S]]
func.func @delta_rule_static_grouped_scale(
    %q: tensor<1x32x1x64xf32>, %k: tensor<1x32x1x64xf32>,
    %v: tensor<1x32x8x16xf32>, %g: tensor<1x32x8xf32>, %beta: tensor<1x32x8xf32>,
    %h0: tensor<1x8x64x16xf32>)
    -> (tensor<1x32x8x16xf32>, tensor<1x8x64x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      {scale = 0.125 : f32}
      : (tensor<1x32x1x64xf32>, tensor<1x32x1x64xf32>, tensor<1x32x8x16xf32>,
         tensor<1x32x8xf32>, tensor<1x32x8xf32>, tensor<1x8x64x16xf32>)
      -> (tensor<1x32x8x16xf32>, tensor<1x8x64x16xf32>)
  return %o, %s : tensor<1x32x8x16xf32>, tensor<1x8x64x16xf32>
}

// Dynamic B with static T, K != V (K = 64, V = 128), H = Hv.

// CHECK-LABEL: func.func @delta_rule_k_ne_v
// CHECK-SAME:    %[[Q:[a-z0-9_]+]]: tensor<?x7x2x64xf32>, %[[K:[a-z0-9_]+]]: tensor<?x7x2x64xf32>
// CHECK-SAME:    %[[V:[a-z0-9_]+]]: tensor<?x7x2x128xf32>, %[[G:[a-z0-9_]+]]: tensor<?x7x2xf32>
// CHECK-SAME:    %[[BETA:[a-z0-9_]+]]: tensor<?x7x2xf32>)
// CHECK:         %[[O:[a-z0-9_]+]], %[[S:[a-z0-9_]+]] = gdn.delta_rule %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]]
// CHECK-NOT:     scale
// CHECK-SAME:    : (tensor<?x7x2x64xf32>, tensor<?x7x2x64xf32>, tensor<?x7x2x128xf32>, tensor<?x7x2xf32>, tensor<?x7x2xf32>)
// CHECK-SAME:    -> (tensor<?x7x2x128xf32>, tensor<?x2x64x128xf32>)
// CHECK:         return %[[O]], %[[S]]
func.func @delta_rule_k_ne_v(
    %q: tensor<?x7x2x64xf32>, %k: tensor<?x7x2x64xf32>,
    %v: tensor<?x7x2x128xf32>, %g: tensor<?x7x2xf32>, %beta: tensor<?x7x2xf32>)
    -> (tensor<?x7x2x128xf32>, tensor<?x2x64x128xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (tensor<?x7x2x64xf32>, tensor<?x7x2x64xf32>, tensor<?x7x2x128xf32>,
         tensor<?x7x2xf32>, tensor<?x7x2xf32>)
      -> (tensor<?x7x2x128xf32>, tensor<?x2x64x128xf32>)
  return %o, %s : tensor<?x7x2x128xf32>, tensor<?x2x64x128xf32>
}

// B and T may be dynamic in some operands and static in others.

// CHECK-LABEL: func.func @delta_rule_mixed_dynamic_static
// CHECK-SAME:    %[[Q:[a-z0-9_]+]]: tensor<?x?x2x16xf32>, %[[K:[a-z0-9_]+]]: tensor<3x?x2x16xf32>
// CHECK-SAME:    %[[V:[a-z0-9_]+]]: tensor<?x5x2x16xf32>, %[[G:[a-z0-9_]+]]: tensor<3x5x2xf32>
// CHECK-SAME:    %[[BETA:[a-z0-9_]+]]: tensor<?x?x2xf32>, %[[H0:[a-z0-9_]+]]: tensor<?x2x16x16xf32>
// CHECK:         gdn.delta_rule %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]] initial_state(%[[H0]])
// CHECK-SAME:    -> (tensor<3x5x2x16xf32>, tensor<?x2x16x16xf32>)
func.func @delta_rule_mixed_dynamic_static(
    %q: tensor<?x?x2x16xf32>, %k: tensor<3x?x2x16xf32>,
    %v: tensor<?x5x2x16xf32>, %g: tensor<3x5x2xf32>, %beta: tensor<?x?x2xf32>,
    %h0: tensor<?x2x16x16xf32>)
    -> (tensor<3x5x2x16xf32>, tensor<?x2x16x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<?x?x2x16xf32>, tensor<3x?x2x16xf32>, tensor<?x5x2x16xf32>,
         tensor<3x5x2xf32>, tensor<?x?x2xf32>, tensor<?x2x16x16xf32>)
      -> (tensor<3x5x2x16xf32>, tensor<?x2x16x16xf32>)
  return %o, %s : tensor<3x5x2x16xf32>, tensor<?x2x16x16xf32>
}

// bf16 activations with beta of the element type of v (bf16).

// CHECK-LABEL: func.func @delta_rule_bf16_beta_bf16
// CHECK-SAME:    %[[Q:[a-z0-9_]+]]: tensor<?x?x2x64xbf16>, %[[K:[a-z0-9_]+]]: tensor<?x?x2x64xbf16>
// CHECK-SAME:    %[[V:[a-z0-9_]+]]: tensor<?x?x4x128xbf16>, %[[G:[a-z0-9_]+]]: tensor<?x?x4xf32>
// CHECK-SAME:    %[[BETA:[a-z0-9_]+]]: tensor<?x?x4xbf16>)
// CHECK:         %[[O:[a-z0-9_]+]], %[[S:[a-z0-9_]+]] = gdn.delta_rule %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]]
// CHECK-NOT:     scale
// CHECK-SAME:    : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xbf16>)
// CHECK-SAME:    -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>)
// CHECK:         return %[[O]], %[[S]]
func.func @delta_rule_bf16_beta_bf16(
    %q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>,
    %v: tensor<?x?x4x128xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xbf16>)
    -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x128xbf16>,
         tensor<?x?x4xf32>, tensor<?x?x4xbf16>)
      -> (tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>)
  return %o, %s : tensor<?x?x4x128xbf16>, tensor<?x4x64x128xf32>
}

// f16 activations with an f32 beta and a non-default scale.

// CHECK-LABEL: func.func @delta_rule_f16_beta_f32
// CHECK-SAME:    %[[Q:[a-z0-9_]+]]: tensor<?x?x4x32xf16>, %[[K:[a-z0-9_]+]]: tensor<?x?x4x32xf16>
// CHECK-SAME:    %[[V:[a-z0-9_]+]]: tensor<?x?x4x48xf16>, %[[G:[a-z0-9_]+]]: tensor<?x?x4xf32>
// CHECK-SAME:    %[[BETA:[a-z0-9_]+]]: tensor<?x?x4xf32>, %[[H0:[a-z0-9_]+]]: tensor<?x4x32x48xf32>
// CHECK:         %[[O:[a-z0-9_]+]], %[[S:[a-z0-9_]+]] = gdn.delta_rule %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]] initial_state(%[[H0]])
// CHECK-SAME:    {scale = 5.000000e-01 : f32}
// CHECK-SAME:    : (tensor<?x?x4x32xf16>, tensor<?x?x4x32xf16>, tensor<?x?x4x48xf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x32x48xf32>)
// CHECK-SAME:    -> (tensor<?x?x4x48xf16>, tensor<?x4x32x48xf32>)
// CHECK:         return %[[O]], %[[S]]
func.func @delta_rule_f16_beta_f32(
    %q: tensor<?x?x4x32xf16>, %k: tensor<?x?x4x32xf16>,
    %v: tensor<?x?x4x48xf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>,
    %h0: tensor<?x4x32x48xf32>)
    -> (tensor<?x?x4x48xf16>, tensor<?x4x32x48xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      {scale = 0.5 : f32}
      : (tensor<?x?x4x32xf16>, tensor<?x?x4x32xf16>, tensor<?x?x4x48xf16>,
         tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x32x48xf32>)
      -> (tensor<?x?x4x48xf16>, tensor<?x4x32x48xf32>)
  return %o, %s : tensor<?x?x4x48xf16>, tensor<?x4x32x48xf32>
}

// f16 activations with beta of the element type of v (f16).

// CHECK-LABEL: func.func @delta_rule_f16_beta_f16
// CHECK-SAME:    %[[Q:[a-z0-9_]+]]: tensor<?x?x4x32xf16>, %[[K:[a-z0-9_]+]]: tensor<?x?x4x32xf16>
// CHECK-SAME:    %[[V:[a-z0-9_]+]]: tensor<?x?x4x32xf16>, %[[G:[a-z0-9_]+]]: tensor<?x?x4xf32>
// CHECK-SAME:    %[[BETA:[a-z0-9_]+]]: tensor<?x?x4xf16>)
// CHECK:         %[[O:[a-z0-9_]+]], %[[S:[a-z0-9_]+]] = gdn.delta_rule %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]]
// CHECK-NOT:     scale
// CHECK-SAME:    : (tensor<?x?x4x32xf16>, tensor<?x?x4x32xf16>, tensor<?x?x4x32xf16>, tensor<?x?x4xf32>, tensor<?x?x4xf16>)
// CHECK-SAME:    -> (tensor<?x?x4x32xf16>, tensor<?x4x32x32xf32>)
// CHECK:         return %[[O]], %[[S]]
func.func @delta_rule_f16_beta_f16(
    %q: tensor<?x?x4x32xf16>, %k: tensor<?x?x4x32xf16>,
    %v: tensor<?x?x4x32xf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf16>)
    -> (tensor<?x?x4x32xf16>, tensor<?x4x32x32xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (tensor<?x?x4x32xf16>, tensor<?x?x4x32xf16>, tensor<?x?x4x32xf16>,
         tensor<?x?x4xf32>, tensor<?x?x4xf16>)
      -> (tensor<?x?x4x32xf16>, tensor<?x4x32x32xf32>)
  return %o, %s : tensor<?x?x4x32xf16>, tensor<?x4x32x32xf32>
}

//===----------------------------------------------------------------------===//
// gdn.delta_rule_step
//===----------------------------------------------------------------------===//

// Dynamic B, f32, H = Hv = 16, scale omitted.

// CHECK-LABEL: func.func @delta_rule_step_dynamic
// CHECK-SAME:    %[[Q:[a-z0-9_]+]]: tensor<?x16x128xf32>, %[[K:[a-z0-9_]+]]: tensor<?x16x128xf32>
// CHECK-SAME:    %[[V:[a-z0-9_]+]]: tensor<?x16x128xf32>, %[[G:[a-z0-9_]+]]: tensor<?x16xf32>
// CHECK-SAME:    %[[BETA:[a-z0-9_]+]]: tensor<?x16xf32>, %[[S0:[a-z0-9_]+]]: tensor<?x16x128x128xf32>
// CHECK:         %[[O:[a-z0-9_]+]], %[[S1:[a-z0-9_]+]] = gdn.delta_rule_step %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]], %[[S0]]
// CHECK-NOT:     scale
// CHECK-SAME:    : (tensor<?x16x128xf32>, tensor<?x16x128xf32>, tensor<?x16x128xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16x128x128xf32>)
// CHECK-SAME:    -> (tensor<?x16x128xf32>, tensor<?x16x128x128xf32>)
// CHECK:         return %[[O]], %[[S1]] : tensor<?x16x128xf32>, tensor<?x16x128x128xf32>
func.func @delta_rule_step_dynamic(
    %q: tensor<?x16x128xf32>, %k: tensor<?x16x128xf32>, %v: tensor<?x16x128xf32>,
    %g: tensor<?x16xf32>, %beta: tensor<?x16xf32>, %s0: tensor<?x16x128x128xf32>)
    -> (tensor<?x16x128xf32>, tensor<?x16x128x128xf32>) {
  %o, %s1 = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<?x16x128xf32>, tensor<?x16x128xf32>, tensor<?x16x128xf32>,
         tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16x128x128xf32>)
      -> (tensor<?x16x128xf32>, tensor<?x16x128x128xf32>)
  return %o, %s1 : tensor<?x16x128xf32>, tensor<?x16x128x128xf32>
}

// Static B, grouped heads (H = 2, Hv = 8), K != V, bf16 activations with a
// bf16 beta, explicit default scale (elided when printed).

// CHECK-LABEL: func.func @delta_rule_step_static_grouped_bf16
// CHECK-SAME:    %[[Q:[a-z0-9_]+]]: tensor<4x2x64xbf16>, %[[K:[a-z0-9_]+]]: tensor<4x2x64xbf16>
// CHECK-SAME:    %[[V:[a-z0-9_]+]]: tensor<4x8x128xbf16>, %[[G:[a-z0-9_]+]]: tensor<4x8xf32>
// CHECK-SAME:    %[[BETA:[a-z0-9_]+]]: tensor<4x8xbf16>, %[[S0:[a-z0-9_]+]]: tensor<4x8x64x128xf32>
// CHECK:         %[[O:[a-z0-9_]+]], %[[S1:[a-z0-9_]+]] = gdn.delta_rule_step %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]], %[[S0]]
// CHECK-NOT:     scale
// CHECK-SAME:    : (tensor<4x2x64xbf16>, tensor<4x2x64xbf16>, tensor<4x8x128xbf16>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8x64x128xf32>)
// CHECK-SAME:    -> (tensor<4x8x128xbf16>, tensor<4x8x64x128xf32>)
// CHECK:         return %[[O]], %[[S1]]
func.func @delta_rule_step_static_grouped_bf16(
    %q: tensor<4x2x64xbf16>, %k: tensor<4x2x64xbf16>, %v: tensor<4x8x128xbf16>,
    %g: tensor<4x8xf32>, %beta: tensor<4x8xbf16>, %s0: tensor<4x8x64x128xf32>)
    -> (tensor<4x8x128xbf16>, tensor<4x8x64x128xf32>) {
  %o, %s1 = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0 {scale = 1.0 : f32}
      : (tensor<4x2x64xbf16>, tensor<4x2x64xbf16>, tensor<4x8x128xbf16>,
         tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8x64x128xf32>)
      -> (tensor<4x8x128xbf16>, tensor<4x8x64x128xf32>)
  return %o, %s1 : tensor<4x8x128xbf16>, tensor<4x8x64x128xf32>
}

// Dynamic B, grouped heads (H = 1, Hv = 4), bf16 activations with an f32 beta
// and a non-default scale.

// CHECK-LABEL: func.func @delta_rule_step_grouped_bf16_scale
// CHECK-SAME:    %[[Q:[a-z0-9_]+]]: tensor<?x1x32xbf16>, %[[K:[a-z0-9_]+]]: tensor<?x1x32xbf16>
// CHECK-SAME:    %[[V:[a-z0-9_]+]]: tensor<?x4x16xbf16>, %[[G:[a-z0-9_]+]]: tensor<?x4xf32>
// CHECK-SAME:    %[[BETA:[a-z0-9_]+]]: tensor<?x4xf32>, %[[S0:[a-z0-9_]+]]: tensor<?x4x32x16xf32>
// CHECK:         %[[O:[a-z0-9_]+]], %[[S1:[a-z0-9_]+]] = gdn.delta_rule_step %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]], %[[S0]]
// CHECK-SAME:    {scale = 2.500000e-01 : f32}
// CHECK-SAME:    : (tensor<?x1x32xbf16>, tensor<?x1x32xbf16>, tensor<?x4x16xbf16>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x32x16xf32>)
// CHECK-SAME:    -> (tensor<?x4x16xbf16>, tensor<?x4x32x16xf32>)
// CHECK:         return %[[O]], %[[S1]]
func.func @delta_rule_step_grouped_bf16_scale(
    %q: tensor<?x1x32xbf16>, %k: tensor<?x1x32xbf16>, %v: tensor<?x4x16xbf16>,
    %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %s0: tensor<?x4x32x16xf32>)
    -> (tensor<?x4x16xbf16>, tensor<?x4x32x16xf32>) {
  %o, %s1 = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0 {scale = 0.25 : f32}
      : (tensor<?x1x32xbf16>, tensor<?x1x32xbf16>, tensor<?x4x16xbf16>,
         tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x32x16xf32>)
      -> (tensor<?x4x16xbf16>, tensor<?x4x32x16xf32>)
  return %o, %s1 : tensor<?x4x16xbf16>, tensor<?x4x32x16xf32>
}

// f16 activations with an f16 beta and static B.

// CHECK-LABEL: func.func @delta_rule_step_f16
// CHECK-SAME:    %[[Q:[a-z0-9_]+]]: tensor<1x2x8xf16>, %[[K:[a-z0-9_]+]]: tensor<1x2x8xf16>
// CHECK-SAME:    %[[V:[a-z0-9_]+]]: tensor<1x2x8xf16>, %[[G:[a-z0-9_]+]]: tensor<1x2xf32>
// CHECK-SAME:    %[[BETA:[a-z0-9_]+]]: tensor<1x2xf16>, %[[S0:[a-z0-9_]+]]: tensor<1x2x8x8xf32>
// CHECK:         %[[O:[a-z0-9_]+]], %[[S1:[a-z0-9_]+]] = gdn.delta_rule_step %[[Q]], %[[K]], %[[V]], %[[G]], %[[BETA]], %[[S0]]
// CHECK-NOT:     scale
// CHECK-SAME:    -> (tensor<1x2x8xf16>, tensor<1x2x8x8xf32>)
// CHECK:         return %[[O]], %[[S1]]
func.func @delta_rule_step_f16(
    %q: tensor<1x2x8xf16>, %k: tensor<1x2x8xf16>, %v: tensor<1x2x8xf16>,
    %g: tensor<1x2xf32>, %beta: tensor<1x2xf16>, %s0: tensor<1x2x8x8xf32>)
    -> (tensor<1x2x8xf16>, tensor<1x2x8x8xf32>) {
  %o, %s1 = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<1x2x8xf16>, tensor<1x2x8xf16>, tensor<1x2x8xf16>,
         tensor<1x2xf32>, tensor<1x2xf16>, tensor<1x2x8x8xf32>)
      -> (tensor<1x2x8xf16>, tensor<1x2x8x8xf32>)
  return %o, %s1 : tensor<1x2x8xf16>, tensor<1x2x8x8xf32>
}
