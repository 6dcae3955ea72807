func.func @rms_norm_negative_eps(%x: tensor<?x?x16xf32>, %w: tensor<16xf32>) {
  %n = gdn.rms_norm %x, %w {eps = -1.0 : f32} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}
