func.func @delta_rule_huge_key_dim(
    %q: tensor<?x?x1x1099511627776xf32>, %k: tensor<?x?x1x1099511627776xf32>,
    %v: tensor<?x?x1x16xf32>, %g: tensor<?x?x1xf32>, %beta: tensor<?x?x1xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (tensor<?x?x1x1099511627776xf32>, tensor<?x?x1x1099511627776xf32>,
         tensor<?x?x1x16xf32>, tensor<?x?x1xf32>, tensor<?x?x1xf32>)
      -> (tensor<?x?x1x16xf32>, tensor<?x1x1099511627776x16xf32>)
  return
}
