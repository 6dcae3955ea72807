func.func @delta_rule_zero_heads(
    %q: tensor<?x?x0x16xf32>, %k: tensor<?x?x0x16xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (tensor<?x?x0x16xf32>, tensor<?x?x0x16xf32>, tensor<?x?x4x32xf32>,
         tensor<?x?x4xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x32xf32>, tensor<?x4x16x32xf32>)
  return
}
