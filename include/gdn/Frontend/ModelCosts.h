//===- ModelCosts.h - cache bytes and attention FLOPs of a model -*- C++ -*-===//
//
// What a model's layers cost per sequence as the context grows, for the cost
// report (gdn-compile --emit=report): cache elements (the caches the
// compiled step keeps, cacheLayouts) and the FLOPs of the token mixing of
// one new token. Beside them the design document's softmax baseline: every
// layer softmax attention over d_model features, 2 L t d_model cached
// elements and 4 L t d_model FLOPs per token.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_FRONTEND_MODELCOSTS_H
#define GDN_FRONTEND_MODELCOSTS_H

#include "gdn/Frontend/ModelConfig.h"

#include <cstdint>
#include <vector>

namespace mlir::gdn {

/// The cost of one layer kind of a model, per layer and per sequence.
/// FLOPs count a multiply-add as two and cover the mixing of tokens only
/// (state or attention), not the projections, norms or MLP, which cost the
/// same at every context:
///   - GDN (recurrent form, per value head): S^T k, the decay of S, the
///     rank-one update and S^T q: 7 Dk Dv;
///   - MLA in the absorbed form (per head): q_nope through the k-part of
///     kv_b_proj (2 nope r), scores over the cached latents and RoPE keys
///     (2 t (r + rope)), the weighted sum of latents (2 t r), its v-part
///     (2 r v);
///   - softmax attention (per query head): scores and weighted values,
///     4 t head_dim.
struct LayerKindCost {
  LayerKind kind;
  /// Layers of this kind in the model.
  int64_t layers = 0;
  /// Cache elements per layer that do not depend on the context (GDN conv
  /// and delta-rule states), and those added per token (MLA latents and
  /// RoPE keys, attention keys and values).
  int64_t fixedCacheElements = 0;
  int64_t cacheElementsPerToken = 0;
  /// FLOPs of one new token at context t (the tokens it attends to,
  /// itself included) per layer: constantFlops + flopsPerContextToken * t.
  int64_t constantFlops = 0;
  int64_t flopsPerContextToken = 0;

  int64_t cacheElements(int64_t tokens) const {
    return fixedCacheElements + cacheElementsPerToken * tokens;
  }
  int64_t flopsPerToken(int64_t tokens) const {
    return constantFlops + flopsPerContextToken * tokens;
  }
};

/// One entry per layer kind the model has, in the order of first use.
std::vector<LayerKindCost> layerKindCosts(const ModelConfig &config);

/// The design document's softmax baseline per layer: 2 d_model elements
/// cached per token (keys and values) and 4 d_model FLOPs per context token.
inline int64_t softmaxCacheElementsPerToken(const ModelConfig &config) {
  return 2 * config.dModel;
}
inline int64_t softmaxFlopsPerContextToken(const ModelConfig &config) {
  return 4 * config.dModel;
}

/// Bytes per cache element of the compiled step (f32 caches).
inline constexpr int64_t kCacheElementBytes = 4;

} // namespace mlir::gdn

#endif // GDN_FRONTEND_MODELCOSTS_H
