func.func @delta_rule_static_empty_batch(
    %q: tensor<0x8x1x16xf32>, %k: tensor<0x8x1x16xf32>, %v: tensor<0x8x1x16xf32>,
    %g: tensor<0x8x1xf32>, %beta: tensor<0x8x1xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (tensor<0x8x1x16xf32>, tensor<0x8x1x16xf32>, tensor<0x8x1x16xf32>,
         tensor<0x8x1xf32>, tensor<0x8x1xf32>)
      -> (tensor<0x8x1x16xf32>, tensor<0x1x16x16xf32>)
  return
}
