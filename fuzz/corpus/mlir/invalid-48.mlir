func.func @delta_rule_k_type(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xbf16>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xbf16>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}
