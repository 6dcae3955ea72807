func.func @prefill(%q: tensor<?x?x2x8xbf16>, %k: tensor<?x?x2x8xbf16>, %v: tensor<?x?x4x8xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>) -> (tensor<?x?x4x8xbf16>, tensor<?x4x8x8xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x8xbf16>, tensor<?x4x8x8xf32>)
  return %o, %s : tensor<?x?x4x8xbf16>, tensor<?x4x8x8xf32>
}

func.func @step(%q: tensor<?x2x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4xf32>, %beta: tensor<?x4xf32>, %state: tensor<?x4x8x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8x8xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %state : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x8x8xf32>) -> (tensor<?x4x8xf32>, tensor<?x4x8x8xf32>)
  return %o, %s : tensor<?x4x8xf32>, tensor<?x4x8x8xf32>
}
