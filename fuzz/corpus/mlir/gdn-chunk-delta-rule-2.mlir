func.func @static_tail(%q: tensor<1x40x2x4xf32>, %k: tensor<1x40x2x4xf32>, %v: tensor<1x40x2x4xf32>, %g: tensor<1x40x2xf32>, %beta: tensor<1x40x2xf32>) -> (tensor<1x40x2x4xf32>, tensor<1x2x4x4xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<1x40x2x4xf32>, tensor<1x40x2x4xf32>, tensor<1x40x2x4xf32>, tensor<1x40x2xf32>, tensor<1x40x2xf32>) -> (tensor<1x40x2x4xf32>, tensor<1x2x4x4xf32>)
  return %o, %s : tensor<1x40x2x4xf32>, tensor<1x2x4x4xf32>
}
