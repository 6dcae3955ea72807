func.func @delta_rule_hv_not_multiple_of_h(
    %q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>,
    %v: tensor<2x8x6x32xf32>, %g: tensor<2x8x6xf32>, %beta: tensor<2x8x6xf32>,
    %h0: tensor<2x6x16x32xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x6x32xf32>,
         tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x6x16x32xf32>)
      -> (tensor<2x8x6x32xf32>, tensor<2x6x16x32xf32>)
  return
}
