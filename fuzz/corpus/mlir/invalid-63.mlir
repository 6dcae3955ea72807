func.func @delta_rule_step_hv_less_than_h(
    %q: tensor<2x3x16xf32>, %k: tensor<2x3x16xf32>, %v: tensor<2x2x32xf32>,
    %g: tensor<2x2xf32>, %beta: tensor<2x2xf32>, %s0: tensor<2x2x16x32xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x2x32xf32>,
         tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2x16x32xf32>)
      -> (tensor<2x2x32xf32>, tensor<2x2x16x32xf32>)
  return
}
