// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @norm_weight(%x: tensor<?x?x8xf32>, %p0: tensor<8x8xf32>, %p1: tensor<8x8xf32>, %p2: tensor<8x8xf32>, %p3: tensor<8x8xf32>, %p4: tensor<8xf32>, %p5: tensor<2x8xf32>, %p6: tensor<2xf32>, %p7: tensor<2x8xf32>, %p8: tensor<2xf32>, %p9: tensor<8x8xf32>, %p10: tensor<8xf32>, %p11: tensor<2xf32>, %p12: tensor<8x1x4xf32>, %p13: tensor<8xf32>, %p14: tensor<8x1x4xf32>, %p15: tensor<8xf32>, %p16: tensor<8x1x4xf32>, %p17: tensor<8xf32>, %p18: tensor<8xf32>) {
  // expected-error @+1 {{norm.weight must have the head dimension d_out / num_heads = 8 / 2, but has 8}}
  %y, %s, %c = gdn.gated_deltanet %x weights(%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8, %p9, %p10, %p11, %p12, %p13, %p14, %p15, %p16, %p17, %p18) {num_heads = 2 : i64} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x4x4xf32>, tensor<?x3x24xf32>)
  return
}

// -----

func.func @heads(%x: tensor<?x?x8xf32>, %p0: tensor<8x8xf32>, %p1: tensor<8x8xf32>, %p2: tensor<8x8xf32>, %p3: tensor<8x8xf32>, %p4: tensor<8xf32>, %p5: tensor<2x8xf32>, %p6: tensor<2xf32>, %p7: tensor<2x8xf32>, %p8: tensor<2xf32>, %p9: tensor<8x8xf32>, %p10: tensor<8xf32>, %p11: tensor<2xf32>, %p12: tensor<8x1x4xf32>, %p13: tensor<8xf32>, %p14: tensor<8x1x4xf32>, %p15: tensor<8xf32>, %p16: tensor<8x1x4xf32>, %p17: tensor<8xf32>, %p18: tensor<4xf32>) {
  // expected-error @+1 {{num_heads = 4 must equal the heads of alpha.weight, beta.weight and log_alpha (2)}}
  %y, %s, %c = gdn.gated_deltanet %x weights(%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8, %p9, %p10, %p11, %p12, %p13, %p14, %p15, %p16, %p17, %p18) {num_heads = 4 : i64} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<4xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x4x4xf32>, tensor<?x3x24xf32>)
  return
}

// -----

func.func @key_weight(%x: tensor<?x?x8xf32>, %p0: tensor<8x8xf32>, %p1: tensor<8x6xf32>, %p2: tensor<8x8xf32>, %p3: tensor<8x8xf32>, %p4: tensor<8xf32>, %p5: tensor<2x8xf32>, %p6: tensor<2xf32>, %p7: tensor<2x8xf32>, %p8: tensor<2xf32>, %p9: tensor<8x8xf32>, %p10: tensor<8xf32>, %p11: tensor<2xf32>, %p12: tensor<8x1x4xf32>, %p13: tensor<8xf32>, %p14: tensor<8x1x4xf32>, %p15: tensor<8xf32>, %p16: tensor<8x1x4xf32>, %p17: tensor<8xf32>, %p18: tensor<4xf32>) {
  // expected-error @+1 {{weight 'W_key.weight' must have shape [d_out, d_model] = [8, 8] (d_model = 8 from operand 'x'), but got 'tensor<8x6xf32>'}}
  %y, %s, %c = gdn.gated_deltanet %x weights(%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8, %p9, %p10, %p11, %p12, %p13, %p14, %p15, %p16, %p17, %p18) {num_heads = 2 : i64} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x6xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<4xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x4x4xf32>, tensor<?x3x24xf32>)
  return
}

// -----

func.func @conv_not_depthwise(%x: tensor<?x?x8xf32>, %p0: tensor<8x8xf32>, %p1: tensor<8x8xf32>, %p2: tensor<8x8xf32>, %p3: tensor<8x8xf32>, %p4: tensor<8xf32>, %p5: tensor<2x8xf32>, %p6: tensor<2xf32>, %p7: tensor<2x8xf32>, %p8: tensor<2xf32>, %p9: tensor<8x8xf32>, %p10: tensor<8xf32>, %p11: tensor<2xf32>, %p12: tensor<8x2x4xf32>, %p13: tensor<8xf32>, %p14: tensor<8x1x4xf32>, %p15: tensor<8xf32>, %p16: tensor<8x1x4xf32>, %p17: tensor<8xf32>, %p18: tensor<4xf32>) {
  // expected-error @+1 {{conv_k.weight must be a depthwise kernel [d_out, 1, kernel], but got 'tensor<8x2x4xf32>'}}
  %y, %s, %c = gdn.gated_deltanet %x weights(%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8, %p9, %p10, %p11, %p12, %p13, %p14, %p15, %p16, %p17, %p18) {num_heads = 2 : i64} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2xf32>, tensor<8x2x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<4xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x4x4xf32>, tensor<?x3x24xf32>)
  return
}

// -----

func.func @missing_weight(%x: tensor<?x?x8xf32>, %p0: tensor<8x8xf32>, %p1: tensor<8x8xf32>, %p2: tensor<8x8xf32>, %p3: tensor<8x8xf32>, %p4: tensor<8xf32>, %p5: tensor<2x8xf32>, %p6: tensor<2xf32>, %p7: tensor<2x8xf32>, %p8: tensor<2xf32>, %p9: tensor<8x8xf32>, %p10: tensor<8xf32>, %p11: tensor<2xf32>, %p12: tensor<8x1x4xf32>, %p13: tensor<8xf32>, %p14: tensor<8x1x4xf32>, %p15: tensor<8xf32>, %p16: tensor<8x1x4xf32>, %p17: tensor<8xf32>) {
  // expected-error @+1 {{expects 19 weights (the reference state_dict: W_query.weight ... norm.weight), but got 18}}
  %y, %s, %c = gdn.gated_deltanet %x weights(%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8, %p9, %p10, %p11, %p12, %p13, %p14, %p15, %p16, %p17) {num_heads = 2 : i64} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x4x4xf32>, tensor<?x3x24xf32>)
  return
}

// -----

func.func @bf16_weight(%x: tensor<?x?x8xf32>, %p0: tensor<8x8xf32>, %p1: tensor<8x8xf32>, %p2: tensor<8x8xf32>, %p3: tensor<8x8xf32>, %p4: tensor<8xf32>, %p5: tensor<2x8xf32>, %p6: tensor<2xf32>, %p7: tensor<2x8xf32>, %p8: tensor<2xf32>, %p9: tensor<8x8xf32>, %p10: tensor<8xbf16>, %p11: tensor<2xf32>, %p12: tensor<8x1x4xf32>, %p13: tensor<8xf32>, %p14: tensor<8x1x4xf32>, %p15: tensor<8xf32>, %p16: tensor<8x1x4xf32>, %p17: tensor<8xf32>, %p18: tensor<4xf32>) {
  // expected-error @+1 {{gate.bias must have element type f32, but got 'bf16'}}
  %y, %s, %c = gdn.gated_deltanet %x weights(%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8, %p9, %p10, %p11, %p12, %p13, %p14, %p15, %p16, %p17, %p18) {num_heads = 2 : i64} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<8x8xf32>, tensor<8xbf16>, tensor<2xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<4xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x4x4xf32>, tensor<?x3x24xf32>)
  return
}

// -----

func.func @conv_state_width(%x: tensor<?x?x8xf32>, %conv: tensor<?x3x16xf32>, %s0: tensor<?x2x4x4xf32>, %p0: tensor<8x8xf32>, %p1: tensor<8x8xf32>, %p2: tensor<8x8xf32>, %p3: tensor<8x8xf32>, %p4: tensor<8xf32>, %p5: tensor<2x8xf32>, %p6: tensor<2xf32>, %p7: tensor<2x8xf32>, %p8: tensor<2xf32>, %p9: tensor<8x8xf32>, %p10: tensor<8xf32>, %p11: tensor<2xf32>, %p12: tensor<8x1x4xf32>, %p13: tensor<8xf32>, %p14: tensor<8x1x4xf32>, %p15: tensor<8xf32>, %p16: tensor<8x1x4xf32>, %p17: tensor<8xf32>, %p18: tensor<4xf32>) {
  // expected-error @+1 {{operand 'conv_state' must be [B, kernel - 1, 3 d_out] = [B, 3, 24], but got 'tensor<?x3x16xf32>'}}
  %y, %s, %c = gdn.gated_deltanet %x weights(%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8, %p9, %p10, %p11, %p12, %p13, %p14, %p15, %p16, %p17, %p18) state(%conv, %s0) {num_heads = 2 : i64} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<?x3x16xf32>, tensor<?x2x4x4xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x4x4xf32>, tensor<?x3x24xf32>)
  return
}

// -----

func.func @final_conv_state(%x: tensor<?x?x8xf32>, %conv: tensor<?x3x24xf32>, %s0: tensor<?x2x4x4xf32>, %p0: tensor<8x8xf32>, %p1: tensor<8x8xf32>, %p2: tensor<8x8xf32>, %p3: tensor<8x8xf32>, %p4: tensor<8xf32>, %p5: tensor<2x8xf32>, %p6: tensor<2xf32>, %p7: tensor<2x8xf32>, %p8: tensor<2xf32>, %p9: tensor<8x8xf32>, %p10: tensor<8xf32>, %p11: tensor<2xf32>, %p12: tensor<8x1x4xf32>, %p13: tensor<8xf32>, %p14: tensor<8x1x4xf32>, %p15: tensor<8xf32>, %p16: tensor<8x1x4xf32>, %p17: tensor<8xf32>, %p18: tensor<4xf32>) {
  // expected-error @+1 {{result 'final_conv_state' must be [B, kernel - 1, 3 d_out] = [B, 3, 24], but got 'tensor<?x4x24xf32>'}}
  %y, %s, %c = gdn.gated_deltanet %x weights(%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8, %p9, %p10, %p11, %p12, %p13, %p14, %p15, %p16, %p17, %p18) state(%conv, %s0) {num_heads = 2 : i64} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<8x1x4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<?x3x24xf32>, tensor<?x2x4x4xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x4x4xf32>, tensor<?x4x24xf32>)
  return
}
