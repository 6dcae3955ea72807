func.func @swiglu_down(%x: tensor<?x?x16xf32>, %g: tensor<24x16xf32>, %u: tensor<24x16xf32>, %d: tensor<16x20xf32>) {
  %m = gdn.swiglu_mlp %x weights(%g, %u, %d) : (tensor<?x?x16xf32>, tensor<24x16xf32>, tensor<24x16xf32>, tensor<16x20xf32>) -> tensor<?x?x16xf32>
  return
}
