// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @rms_norm_weight(%x: tensor<?x?x16xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{operand 'weight' must have shape [D] = [16] (the last dimension of 'x'), but got 'tensor<8xf32>'}}
  %n = gdn.rms_norm %x, %w : (tensor<?x?x16xf32>, tensor<8xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @swiglu_down(%x: tensor<?x?x16xf32>, %g: tensor<24x16xf32>, %u: tensor<24x16xf32>, %d: tensor<16x20xf32>) {
  // expected-error @+1 {{weight 'down' must have shape [D, F] = [16, 24] (F = 24 from weight 'gate'), but got 'tensor<16x20xf32>'}}
  %m = gdn.swiglu_mlp %x weights(%g, %u, %d) : (tensor<?x?x16xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x20xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @embed_ids(%ids: tensor<?x?xi32>, %t: tensor<50x16xf32>) {
  // expected-error @+1 {{operand 'ids' must have element type i64, but got 'i32'}}
  %x = gdn.embed %ids, %t : (tensor<?x?xi32>, tensor<50x16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @lm_head_vocab(%x: tensor<?x?x16xf32>, %w: tensor<50x16xf32>) {
  // expected-error @+1 {{result 'logits' must have shape [B, T, vocab] = [?, ?, 50] (vocab = 50 from weight 'weight'), but got 'tensor<?x?x49xf32>'}}
  %l = gdn.lm_head %x, %w : (tensor<?x?x16xf32>, tensor<50x16xf32>) -> tensor<?x?x49xf32>
  return
}

// -----

func.func @rms_norm_negative_eps(%x: tensor<?x?x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{attribute 'eps' must be a positive finite number, but got -1}}
  %n = gdn.rms_norm %x, %w {eps = -1.0 : f32} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}
