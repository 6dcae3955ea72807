func.func @delta_rule_step_nan_scale(
    %q: tensor<?x1x16xf32>, %k: tensor<?x1x16xf32>, %v: tensor<?x1x16xf32>,
    %g: tensor<?x1xf32>, %beta: tensor<?x1xf32>, %h: tensor<?x1x16x16xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %h {scale = 0x7FC00000 : f32}
      : (tensor<?x1x16xf32>, tensor<?x1x16xf32>, tensor<?x1x16xf32>,
         tensor<?x1xf32>, tensor<?x1xf32>, tensor<?x1x16x16xf32>)
      -> (tensor<?x1x16xf32>, tensor<?x1x16x16xf32>)
  return
}
