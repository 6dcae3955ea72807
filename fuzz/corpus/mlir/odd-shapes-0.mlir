func.func @mixed(%q: tensor<?x7x1x4xf32>, %k: tensor<?x7x1x4xf32>, %v: tensor<?x7x3x4xf32>, %g: tensor<?x7x3xf32>, %b: tensor<?x7x3xf32>) -> (tensor<?x?x3x4xf32>, tensor<?x3x4x4xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b : (tensor<?x7x1x4xf32>, tensor<?x7x1x4xf32>, tensor<?x7x3x4xf32>, tensor<?x7x3xf32>, tensor<?x7x3xf32>) -> (tensor<?x?x3x4xf32>, tensor<?x3x4x4xf32>)
  return %o, %s : tensor<?x?x3x4xf32>, tensor<?x3x4x4xf32>
}
func.func @empty(%q: tensor<2x0x1x4xf32>, %k: tensor<2x0x1x4xf32>, %v: tensor<2x0x3x4xf32>, %g: tensor<2x0x3xf32>, %b: tensor<2x0x3xf32>) -> (tensor<2x0x3x4xf32>, tensor<2x3x4x4xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b : (tensor<2x0x1x4xf32>, tensor<2x0x1x4xf32>, tensor<2x0x3x4xf32>, tensor<2x0x3xf32>, tensor<2x0x3xf32>) -> (tensor<2x0x3x4xf32>, tensor<2x3x4x4xf32>)
  return %o, %s : tensor<2x0x3x4xf32>, tensor<2x3x4x4xf32>
}
func.func @step(%q: tensor<2x1x4xf32>, %k: tensor<2x1x4xf32>, %v: tensor<2x3x4xf32>, %g: tensor<2x3xf32>, %b: tensor<2x3xf32>, %s0: tensor<2x3x4x4xf32>) -> (tensor<?x3x4xf32>, tensor<2x3x4x4xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %b, %s0 : (tensor<2x1x4xf32>, tensor<2x1x4xf32>, tensor<2x3x4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x4x4xf32>) -> (tensor<?x3x4xf32>, tensor<2x3x4x4xf32>)
  return %o, %s : tensor<?x3x4xf32>, tensor<2x3x4x4xf32>
}
