func.func @embed_ids(%ids: tensor<?x?xi32>, %t: tensor<50x16xf32>) {
  %x = gdn.embed %ids, %t : (tensor<?x?xi32>, tensor<50x16xf32>) -> tensor<?x?x16xf32>
  return
}
