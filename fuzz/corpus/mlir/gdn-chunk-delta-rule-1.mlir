func.func @bf16_initial_state(%q: tensor<?x?x2x8xbf16>, %k: tensor<?x?x2x8xbf16>, %v: tensor<?x?x4x32xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xbf16>, %h0: tensor<?x4x8x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x8x32xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0) {scale = 0.5 : f32} : (tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xbf16>, tensor<?x4x8x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x8x32xf32>)
  return %o, %s : tensor<?x?x4x32xbf16>, tensor<?x4x8x32xf32>
}
