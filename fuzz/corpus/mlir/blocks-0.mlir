func.func @blocks(%ids: tensor<?x?xi64>, %table: tensor<50x16xf32>, %w: tensor<16xf32>, %gate: tensor<24x16xf32>, %up: tensor<24x16xf32>, %down: tensor<16x24xf32>) -> tensor<?x?x50xf32> {
  %x = gdn.embed %ids, %table : (tensor<?x?xi64>, tensor<50x16xf32>) -> tensor<?x?x16xf32>
  %n = gdn.rms_norm %x, %w {eps = 1.0e-5 : f32} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %m = gdn.swiglu_mlp %n weights(%gate, %up, %down) : (tensor<?x?x16xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x24xf32>) -> tensor<?x?x16xf32>
  %l = gdn.lm_head %m, %table : (tensor<?x?x16xf32>, tensor<50x16xf32>) -> tensor<?x?x50xf32>
  return %l : tensor<?x?x50xf32>
}
