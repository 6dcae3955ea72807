func.func @grouped_f32(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x4x32xf32>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>) -> (tensor<?x?x4x32xf32>, tensor<?x4x8x32xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x32xf32>, tensor<?x4x8x32xf32>)
  return %o, %s : tensor<?x?x4x32xf32>, tensor<?x4x8x32xf32>
}
