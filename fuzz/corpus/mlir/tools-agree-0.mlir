func.func @prefill(%q: tensor<2x70x1x16xbf16>, %k: tensor<2x70x1x16xbf16>, %v: tensor<2x70x2x16xbf16>, %g: tensor<2x70x2xf32>, %beta: tensor<2x70x2xf32>) -> (tensor<2x70x2x16xbf16>, tensor<2x2x16x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta {scale = 0.25 : f32} : (tensor<2x70x1x16xbf16>, tensor<2x70x1x16xbf16>, tensor<2x70x2x16xbf16>, tensor<2x70x2xf32>, tensor<2x70x2xf32>) -> (tensor<2x70x2x16xbf16>, tensor<2x2x16x16xf32>)
  return %o, %s : tensor<2x70x2x16xbf16>, tensor<2x2x16x16xf32>
}

func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
