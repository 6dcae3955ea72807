//===- ModelCosts.cpp - cache bytes and attention FLOPs of a model --------===//

#include "gdn/Frontend/ModelCosts.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::gdn;

static int64_t product(llvm::ArrayRef<int64_t> sizes) {
  int64_t result = 1;
  for (int64_t size : sizes)
    result *= size;
  return result;
}

std::vector<LayerKindCost> mlir::gdn::layerKindCosts(const ModelConfig &config) {
  std::vector<LayerKindCost> costs;
  std::vector<CacheLayout> caches = cacheLayouts(config);
  for (size_t index = 0; index < config.layers.size(); ++index) {
    LayerKind kind = config.layers[index];
    auto existing = llvm::find_if(
        costs, [&](const LayerKindCost &cost) { return cost.kind == kind; });
    if (existing != costs.end()) {
      ++existing->layers;
      continue;
    }
    LayerKindCost cost;
    cost.kind = kind;
    cost.layers = 1;
    // The caches as the compiled step keeps them.
    for (const CacheLayout &cache :
         llvm::ArrayRef<CacheLayout>(caches).slice(2 * index, 2)) {
      if (cache.growsWithTokens)
        cost.cacheElementsPerToken +=
            product(llvm::ArrayRef<int64_t>(cache.innerShape).drop_front());
      else
        cost.fixedCacheElements += product(cache.innerShape);
    }
    switch (kind) {
    case LayerKind::GDN: {
      const GdnSettings &g = *config.gdn;
      cost.constantFlops = 7 * g.numHeads * g.headDim * g.headDim;
      break;
    }
    case LayerKind::QwenGDN: {
      const QwenGdnSettings &g = *config.qwenGdn;
      cost.constantFlops =
          7 * g.numValueHeads * g.keyHeadDim * g.valueHeadDim;
      break;
    }
    case LayerKind::MLA: {
      const MlaSettings &m = *config.mla;
      int64_t r = m.kvLoraRank;
      cost.constantFlops =
          m.numHeads * (2 * m.qkNopeHeadDim * r + 2 * r * m.vHeadDim);
      cost.flopsPerContextToken =
          m.numHeads * (2 * (r + m.qkRopeHeadDim) + 2 * r);
      break;
    }
    case LayerKind::Attention: {
      const AttentionSettings &a = *config.attention;
      cost.flopsPerContextToken = 4 * a.numHeads * a.headDim;
      break;
    }
    }
    costs.push_back(cost);
  }
  return costs;
}
