func.func @rms_norm_weight(%x: tensor<?x?x16xf32>, %w: tensor<8xf32>) {
  %n = gdn.rms_norm %x, %w : (tensor<?x?x16xf32>, tensor<8xf32>) -> tensor<?x?x16xf32>
  return
}
