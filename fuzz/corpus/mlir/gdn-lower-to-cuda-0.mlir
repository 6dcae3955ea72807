func.func @prefill(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x64xbf16>, %g: tensor<?x?x4xf32>, %b: tensor<?x?x4xf32>, %h: tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b initial_state(%h) : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>)
  return %o, %s : tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>
}
