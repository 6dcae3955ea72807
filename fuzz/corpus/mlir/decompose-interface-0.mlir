func.func @norm(%x: tensor<2x3x8xf32>, %w: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %y = gdn.rms_norm %x, %w {eps = 1.0e-6 : f32} : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %norm = transform.structured.match ops{["gdn.rms_norm"]} in %root : (!transform.any_op) -> !transform.any_op
    %parts = transform.structured.decompose_interface %norm : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
