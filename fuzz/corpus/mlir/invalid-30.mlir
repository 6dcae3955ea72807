func.func @delta_rule_step_state_shape(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x32x32xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x32x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}
