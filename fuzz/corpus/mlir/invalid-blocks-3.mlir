func.func @lm_head_vocab(%x: tensor<?x?x16xf32>, %w: tensor<50x16xf32>) {
  %l = gdn.lm_head %x, %w : (tensor<?x?x16xf32>, tensor<50x16xf32>) -> tensor<?x?x49xf32>
  return
}
