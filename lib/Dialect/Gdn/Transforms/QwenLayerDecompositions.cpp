//===- QwenLayerDecompositions.cpp - the Qwen layers as core ops ----------===//
//
// What gdn.qwen_gated_deltanet and gdn.gated_attention decompose into
// (linalg::AggregatedOpInterface, as for the other layer ops): the
// projections, the conv, the norms and gates of Qwen3.5 and Qwen3-Next,
// gdn.delta_rule for the GDN core and a causal softmax over the cached and
// new keys for attention.
//
//===----------------------------------------------------------------------===//

#include "BlockedAttention.h"
#include "LayerBuilder.h"

#include "gdn/Dialect/Gdn/IR/GdnDialect.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/Transforms/Transforms.h"
#include "gdn/Utils/TensorBuilders.h"

#include "mlir/IR/DialectRegistry.h"

#include <cmath>

using namespace mlir;
using namespace mlir::gdn;

namespace {

/// The epsilon of the models' q/k l2norm (fla's default, kept by
/// transformers' torch fallback).
constexpr float kQwenL2NormEps = 1e-6f;

class QwenBuilder : public AttentionBuilder {
public:
  using AttentionBuilder::AttentionBuilder;

  /// Splits dimension `dim` of x into (dim / inner, inner).
  Value expandDim(Value x, int64_t dim, int64_t inner) {
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    SmallVector<int64_t> shape(type.getShape());
    int64_t outer = shape[dim] / inner;
    shape[dim] = outer;
    shape.insert(shape.begin() + dim + 1, inner);
    sizes[dim] = b.getIndexAttr(outer);
    sizes.insert(sizes.begin() + dim + 1, b.getIndexAttr(inner));
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0, out = 0; d < type.getRank(); ++d) {
      if (d == dim) {
        groups.push_back({out, out + 1});
        out += 2;
      } else {
        groups.push_back({out++});
      }
    }
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, f32), x, groups, sizes);
  }

  /// Merges dimensions `dim` and `dim + 1`.
  Value collapseDim(Value x, int64_t dim) {
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == dim + 1)
        continue;
      if (d == dim)
        groups.push_back({d, d + 1});
      else
        groups.push_back({d});
    }
    return tensor::CollapseShapeOp::create(b, loc, x, groups);
  }

  /// o * sigmoid(gate), element-wise on [B, T, C].
  Value sigmoidGated(Value o, Value gate) {
    return buildElementwise(
        b, loc, ValueRange{gate}, o, {b.getMultiDimIdentityMap(3)},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          return arith::MulFOp::create(nb, nl, args[1],
                                       sigmoid(nb, nl, args[0]))
              .getResult();
        });
  }

  /// scores[b, kv, g, t, s] = q[b, t, kv, g, :] . k[b, s, kv, :] for
  /// grouped queries q [B, T, Hkv, G, D] and keys [B, S, Hkv, D].
  Value groupedScores(Value q, Value keys) {
    auto qType = cast<RankedTensorType>(q.getType());
    OpFoldResult batch = tensor::getMixedSize(b, loc, q, 0);
    OpFoldResult tokens = tensor::getMixedSize(b, loc, q, 1);
    OpFoldResult keyCount = tensor::getMixedSize(b, loc, keys, 1);
    Value init =
        createZeros(b, loc,
                    {batch, b.getIndexAttr(qType.getDimSize(2)),
                     b.getIndexAttr(qType.getDimSize(3)), tokens, keyCount},
                    f32);
    SmallVector<IteratorType> iterators(5, IteratorType::parallel);
    iterators.push_back(IteratorType::reduction);
    // Dimensions (b, kv, g, t, s, d).
    return buildGeneric(
        b, loc, ValueRange{q, keys}, init,
        {map(6, {0, 3, 1, 2, 5}), map(6, {0, 4, 1, 5}),
         map(6, {0, 1, 2, 3, 4})},
        iterators, [](OpBuilder &nb, Location nl, ValueRange args) {
          Value product = arith::MulFOp::create(nb, nl, args[0], args[1]);
          return arith::AddFOp::create(nb, nl, args[2], product).getResult();
        });
  }

  /// out[b, t, kv, g, e] = sum_s p[b, kv, g, t, s] v[b, s, kv, e].
  Value groupedValues(Value probabilities, Value values) {
    auto pType = cast<RankedTensorType>(probabilities.getType());
    auto vType = cast<RankedTensorType>(values.getType());
    Value init = createZeros(b, loc,
                             {tensor::getMixedSize(b, loc, probabilities, 0),
                              tensor::getMixedSize(b, loc, probabilities, 3),
                              b.getIndexAttr(pType.getDimSize(1)),
                              b.getIndexAttr(pType.getDimSize(2)),
                              b.getIndexAttr(vType.getDimSize(3))},
                             f32);
    SmallVector<IteratorType> iterators(5, IteratorType::parallel);
    iterators.push_back(IteratorType::reduction);
    // Dimensions (b, t, kv, g, e, s).
    return buildGeneric(
        b, loc, ValueRange{probabilities, values}, init,
        {map(6, {0, 2, 3, 1, 5}), map(6, {0, 5, 2, 4}),
         map(6, {0, 1, 2, 3, 4})},
        iterators, [](OpBuilder &nb, Location nl, ValueRange args) {
          Value product = arith::MulFOp::create(nb, nl, args[0], args[1]);
          return arith::AddFOp::create(nb, nl, args[2], product).getResult();
        });
  }
};

struct QwenGatedDeltaNetDecomposition
    : LayerDecomposition<QwenGatedDeltaNetDecomposition, QwenGatedDeltaNetOp> {
  static SmallVector<Value> decompose(QwenGatedDeltaNetOp op, OpBuilder &b) {
    Location loc = op.getLoc();
    QwenBuilder qb(b, loc);
    int64_t hk = op.getNumKeyHeads(), hv = op.getNumValueHeads();
    int64_t dk = op.getKeyHeadDim(), dv = op.getValueHeadDim();
    int64_t group = hv / hk;
    float eps = op.getEps().convertToFloat();
    Value x = op.getX();
    ValueRange w = op.getWeights();

    // The conv input [q | k | v], the output gate z and the gate inputs b
    // and a (with dt_bias) for each layout.
    Value qkv, z, bInput, aInput, dtBias;
    unsigned next;
    if (op.getLayout() == ProjectionLayout::split) {
      qkv = qb.linear(x, w[0], Value());
      z = qb.linear(x, w[1], Value());
      bInput = qb.linear(x, w[2], Value());
      aInput = qb.linear(x, w[3], Value());
      dtBias = w[5];
      next = 4;
    } else {
      // Per key head: q [Dk], k [Dk], v [group Dv], z [group Dv].
      Value grouped = qb.splitLast(qb.linear(x, w[0], Value()), hk);
      auto part = [&](int64_t offset, int64_t size) {
        return qb.mergeLast(qb.sliceLast(grouped, offset, size));
      };
      qkv = concatAlong(
          b, loc, {part(0, dk), part(dk, dk), part(2 * dk, group * dv)}, 2);
      z = part(2 * dk + group * dv, group * dv);
      // Per key head: b, then a, of its value heads.
      Value ba = qb.splitLast(qb.linear(x, w[1], Value()), hk);
      bInput = qb.mergeLast(qb.sliceLast(ba, 0, group));
      aInput = qb.mergeLast(qb.sliceLast(ba, group, group));
      dtBias = w[3];
      next = 2;
    }
    Value convWeight = w[next], logA = w[next + 2], norm = w[next + 3],
          outProj = w[next + 4];

    auto [mixed, history] =
        qb.causalConvSilu(qkv, convWeight, Value(), op.getConvState());
    Value q = qb.l2NormalizeWithEps(
        qb.splitHeads(qb.sliceLast(mixed, 0, hk * dk), hk), kQwenL2NormEps);
    Value k = qb.l2NormalizeWithEps(
        qb.splitHeads(qb.sliceLast(mixed, hk * dk, hk * dk), hk),
        kQwenL2NormEps);
    Value v = qb.splitHeads(qb.sliceLast(mixed, 2 * hk * dk, hv * dv), hv);
    Value g = qb.logForgetGate(aInput, logA, dtBias);
    Value beta = qb.sigmoidTensor(bInput);

    auto stateType = cast<RankedTensorType>(op.getFinalState().getType());
    auto core = DeltaRuleOp::create(
        b, loc, TypeRange{v.getType(), stateType}, q, k, v, g, beta,
        op.getInitialState(), /*cu_seqlens=*/Value(),
        /*state_indices=*/Value(), /*write_indices=*/Value(), /*a_log=*/Value(),
        /*dt_bias=*/Value(),
        b.getF32FloatAttr(1.0f / std::sqrt(static_cast<float>(dk))),
        /*strategy=*/ScanStrategyAttr(),
        /*checkpoint_every=*/IntegerAttr());
    Value normed = qb.rmsNorm(core.getO(), norm, eps);
    Value o = qb.mergeHeads(qb.gated(normed, qb.splitHeads(z, hv)));
    Value y = qb.linear(o, outProj, Value());
    return castToTypes(b, loc, {y, core.getFinalState(), history},
                       op->getResultTypes());
  }
};

struct GatedAttentionDecomposition
    : LayerDecomposition<GatedAttentionDecomposition, GatedAttentionOp> {
  static SmallVector<Value> decompose(GatedAttentionOp op, OpBuilder &b) {
    using W = GatedAttentionOp::Weight;
    Location loc = op.getLoc();
    QwenBuilder qb(b, loc);
    int64_t heads = op.getNumHeads(), kvHeads = op.getNumKvHeads();
    int64_t dim = op.getHeadDim(), rotary = op.getRotaryDim();
    float eps = op.getEps().convertToFloat();
    float theta = op.getRopeTheta().convertToFloat();
    Value x = op.getX();

    // Per head: the query, then its gate.
    Value qAndGate =
        qb.splitLast(qb.linear(x, op.getWeight(W::QProj), Value()), heads);
    Value q = qb.sliceLast(qAndGate, 0, dim);
    Value gate = qb.mergeHeads(qb.sliceLast(qAndGate, dim, dim));
    Value k =
        qb.splitHeads(qb.linear(x, op.getWeight(W::KProj), Value()), kvHeads);
    Value v =
        qb.splitHeads(qb.linear(x, op.getWeight(W::VProj), Value()), kvHeads);
    Value past = cachedRows(b, loc, op.getPastKeys(), x, op.getInPlaceCache());
    q = qb.partialRope(qb.rmsNorm(q, op.getWeight(W::QNorm), eps, true), rotary,
                       theta, past);
    k = qb.partialRope(qb.rmsNorm(k, op.getWeight(W::KNorm), eps, true), rotary,
                       theta, past);
    Value allKeys = k, allValues = v;
    if (op.getInPlaceCache()) {
      allKeys = insertAlong(b, loc, k, op.getPastKeys(), 1, past);
      allValues = insertAlong(b, loc, v, op.getPastValues(), 1, past);
    } else if (op.getPastKeys()) {
      allKeys = concatAlong(b, loc, {op.getPastKeys(), k}, 1);
      allValues = concatAlong(b, loc, {op.getPastValues(), v}, 1);
    }
    float scale = 1.0f / std::sqrt(static_cast<float>(dim));
    if (std::optional<uint64_t> block = op.getAttentionBlock()) {
      Value attended = qb.mergeHeads(
          buildBlockedCausalAttention(b, loc, q, allKeys, allValues, scale,
                                      past, static_cast<int64_t>(*block)));
      Value y = qb.linear(qb.sigmoidGated(attended, gate),
                          op.getWeight(W::OProj), Value());
      return castToTypes(b, loc,
                         {y, op.getInPlaceCache() ? allKeys : k,
                          op.getInPlaceCache() ? allValues : v},
                         op->getResultTypes());
    }
    // Query head n = kv (H / Hkv) + g reads key/value head kv.
    Value scores =
        qb.groupedScores(qb.expandDim(q, 2, heads / kvHeads), allKeys);
    Value probabilities = qb.expandDim(
        qb.causalSoftmax(qb.collapseDim(scores, 1),
                         1.0f / std::sqrt(static_cast<float>(dim)), past),
        1, heads / kvHeads);
    Value attended = qb.mergeHeads(
        qb.collapseDim(qb.groupedValues(probabilities, allValues), 2));
    Value y = qb.linear(qb.sigmoidGated(attended, gate), op.getWeight(W::OProj),
                        Value());
    if (op.getInPlaceCache())
      return castToTypes(b, loc, {y, allKeys, allValues}, op->getResultTypes());
    return castToTypes(b, loc, {y, k, v}, op->getResultTypes());
  }
};

} // namespace

void mlir::gdn::registerQwenDecompositionInterfaces(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, GdnDialect *) {
    QwenGatedDeltaNetOp::attachInterface<QwenGatedDeltaNetDecomposition>(
        *context);
    GatedAttentionOp::attachInterface<GatedAttentionDecomposition>(*context);
  });
}
