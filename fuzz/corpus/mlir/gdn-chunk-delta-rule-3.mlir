func.func @step_untouched(%q: tensor<?x2x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %state: tensor<?x4x8x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8x8xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %state : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8x8xf32>)
  return %o, %s : tensor<?x4x8xf32>, tensor<?x4x8x8xf32>
}
