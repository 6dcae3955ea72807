//===- LayerDecompositions.cpp - what layer ops decompose into ------------===//
//
// Every layer op of gdn implements linalg::AggregatedOpInterface, as
// linalg.softmax does: decomposeOperation builds the op's semantics from
// core gdn ops (gdn.delta_rule) and linalg on tensors, step by step as in
// the design document's reference module (the float64 transcription is
// python/gdn/reference.py). gdn-decompose-layers, and
// transform.structured.decompose_interface, call it.
//
//===----------------------------------------------------------------------===//

#include "BlockedAttention.h"
#include "LayerBuilder.h"

#include "gdn/Dialect/Gdn/IR/GdnDialect.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/Transforms/Transforms.h"
#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::gdn;

namespace {

/// The Gated DeltaNet layer: projections, causal convolutions with SiLU,
/// q/k L2 normalisation, the gates, the delta rule, the output norm and
/// gate, and the output projection.
struct GatedDeltaNetDecomposition
    : LayerDecomposition<GatedDeltaNetDecomposition, GatedDeltaNetOp> {
  static SmallVector<Value> decompose(GatedDeltaNetOp op, OpBuilder &b) {
    using W = GatedDeltaNetOp::Weight;
    Location loc = op.getLoc();
    LayerBuilder lb(b, loc);
    int64_t heads = static_cast<int64_t>(op.getNumHeads());
    float eps = op.getEps().convertToFloat();
    Value x = op.getX();
    Value norm = op.getWeight(W::NormWeight);

    int64_t dOut =
        cast<RankedTensorType>(op.getWeight(W::WQuery).getType()).getDimSize(0);
    // The conv state holds the q, k and v histories side by side.
    SmallVector<Value> histories;
    auto branch = [&](W projection, W convWeight, W convBias, int64_t part) {
      Value projected = lb.linear(x, op.getWeight(projection), Value());
      Value history;
      if (op.getConvState())
        history = lb.sliceLast(op.getConvState(), part * dOut, dOut);
      auto [mixed, next] = lb.causalConvSilu(
          projected, op.getWeight(convWeight), op.getWeight(convBias), history);
      histories.push_back(next);
      return lb.splitHeads(mixed, heads);
    };
    Value q =
        lb.l2Normalize(branch(W::WQuery, W::ConvQWeight, W::ConvQBias, 0));
    Value k = lb.l2Normalize(branch(W::WKey, W::ConvKWeight, W::ConvKBias, 1));
    Value v = lb.rmsNorm(branch(W::WValue, W::ConvVWeight, W::ConvVBias, 2),
                         norm, eps);

    Value g = lb.logForgetGate(
        lb.linear(x, op.getWeight(W::AlphaWeight), Value()),
        op.getWeight(W::LogAlpha), op.getWeight(W::AlphaBias));
    Value beta =
        lb.sigmoidTensor(lb.linear(x, op.getWeight(W::BetaWeight), Value()),
                         op.getWeight(W::BetaBias));

    auto oType = cast<RankedTensorType>(v.getType());
    auto stateType = cast<RankedTensorType>(op.getFinalState().getType());
    auto core =
        DeltaRuleOp::create(b, loc, TypeRange{oType, stateType}, q, k, v, g,
                            beta, op.getInitialState(), /*cu_seqlens=*/Value(),
                            /*state_indices=*/Value(),
                            /*write_indices=*/Value(), /*a_log=*/Value(),
        /*dt_bias=*/Value(), b.getF32FloatAttr(1.0f),
                            /*strategy=*/ScanStrategyAttr(),
        /*checkpoint_every=*/IntegerAttr());
    Value o = lb.mergeHeads(lb.rmsNorm(core.getO(), norm, eps));
    Value gate =
        lb.linear(x, op.getWeight(W::GateWeight), op.getWeight(W::GateBias));
    Value y = lb.linear(lb.gated(o, gate), op.getWeight(W::OutProjWeight),
                        op.getWeight(W::OutProjBias));
    Value convState = concatAlong(b, loc, histories, 2);
    return castToTypes(b, loc, {y, core.getFinalState(), convState},
                       op->getResultTypes());
  }
};

/// Multi-head latent attention over the past latents and RoPE keys and the
/// new tokens.
struct MlaDecomposition : LayerDecomposition<MlaDecomposition, MlaOp> {
  static SmallVector<Value> decompose(MlaOp op, OpBuilder &b) {
    Location loc = op.getLoc();
    AttentionBuilder ab(b, loc);
    int64_t heads = static_cast<int64_t>(op.getNumHeads());
    int64_t kvLora = static_cast<int64_t>(op.getKvLoraRank());
    int64_t nope = static_cast<int64_t>(op.getQkNopeHeadDim());
    int64_t rope = static_cast<int64_t>(op.getQkRopeHeadDim());
    int64_t vDim = static_cast<int64_t>(op.getVHeadDim());
    float eps = op.getEps().convertToFloat();
    float theta = op.getRopeTheta().convertToFloat();
    Value x = op.getX();
    ValueRange w = op.getWeights();
    unsigned next = 0;

    Value q;
    if (op.getQLoraRank() == 0) {
      q = ab.linear(x, w[next++], Value());
    } else {
      Value down = ab.linear(x, w[next++], Value());
      Value normed = ab.rmsNorm(down, w[next++], eps);
      q = ab.linear(normed, w[next++], Value());
    }
    // The new tokens sit at positions past..past+T-1.
    Value past =
        cachedRows(b, loc, op.getPastLatent(), x, op.getInPlaceCache());
    Value qHeads = ab.splitHeads(q, heads);
    Value qNope = ab.sliceLast(qHeads, 0, nope);
    Value qRope = ab.rope(ab.sliceLast(qHeads, nope, rope), theta, past);

    Value kvA = ab.linear(x, w[next++], Value());
    Value latent = ab.rmsNorm(ab.sliceLast(kvA, 0, kvLora), w[next++], eps);
    Value kRope = ab.rope(ab.sliceLast(kvA, kvLora, rope), theta, past);
    Value allLatent = latent, allKRope = kRope;
    if (op.getInPlaceCache()) {
      allLatent = insertAlong(b, loc, latent, op.getPastLatent(), 1, past);
      allKRope = insertAlong(b, loc, kRope, op.getPastKRope(), 1, past);
    } else if (op.getPastLatent()) {
      allLatent = concatAlong(b, loc, {op.getPastLatent(), latent}, 1);
      allKRope = concatAlong(b, loc, {op.getPastKRope(), kRope}, 1);
    }
    Value kvB = w[next++];
    float scale = 1.0f / std::sqrt(static_cast<float>(nope + rope));
    // The first `rows` rows along the tokens of [B, T, ...] `x`.
    auto leading = [&](Value x, OpFoldResult rows) -> Value {
      auto type = cast<RankedTensorType>(x.getType());
      SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
      SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
      sizes[1] = rows;
      return tensor::ExtractSliceOp::create(b, loc, x, offsets, sizes, strides);
    };
    auto absorbed = [&](Value queriesNope, Value queriesRope) {
      return ab.absorbedAttention(queriesNope, queriesRope, allLatent, allKRope,
                                  ab.headRows(kvB, heads, 0, nope),
                                  ab.headRows(kvB, heads, nope, vDim), scale,
                                  past, op.getKeySplit().value_or(0));
    };
    // The keys of the expanded form are the latents through kv_b_proj; its
    // queries the last of them.
    auto expanded = [&](std::optional<uint64_t> block, Value queriesNope,
                        Value queriesRope, Value latents,
                        Value kRopes) -> Value {
      Value kv = ab.splitHeads(ab.linear(latents, kvB, Value()), heads);
      Value kNope = ab.sliceLast(kv, 0, nope);
      Value values = ab.sliceLast(kv, nope, vDim);
      if (!block) {
        Value probabilities = ab.causalSoftmax(
            ab.scores(queriesNope, kNope, queriesRope, kRopes), scale, past);
        return ab.weightedValues(probabilities, values);
      }
      // Per head: queries [nope | rope], keys [k_nope | the shared k_rope].
      Value queries = concatAlong(b, loc, {queriesNope, queriesRope}, 3);
      Value keys =
          concatAlong(b, loc, {kNope, ab.broadcastHeads(kRopes, heads)}, 3);
      auto type = RankedTensorType::get(
          {ShapedType::kDynamic, ShapedType::kDynamic, heads, vDim},
          b.getF32Type());
      return CausalAttentionOp::create(b, loc, type, queries, keys, values,
                                       b.getF32FloatAttr(scale),
                                       b.getI64IntegerAttr(*block))
          .getO();
    };
    std::optional<uint64_t> block = op.getAttentionBlock();
    Value attended;
    if (op.getAbsorbed() && block) {
      // Chosen per call: a few new tokens (decode) in the absorbed form, a
      // prompt in blocks. Not an scf.if: each form takes a leading slice of
      // the queries (and the expanded one of the keys), all or nothing, so
      // that the form not chosen has empty operands. The step then has no
      // control flow on the host, which a GPU's one stream of launches (and
      // a CUDA graph of it) needs: the empty form's kernels have no blocks
      // and are not launched.
      Value tokens = tensor::DimOp::create(b, loc, x, 1);
      Value few = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ult, tokens,
          arith::ConstantIndexOp::create(b, loc, static_cast<int64_t>(*block)));
      Value none = arith::ConstantIndexOp::create(b, loc, 0);
      Value fewTokens = arith::SelectOp::create(b, loc, few, tokens, none);
      Value manyTokens = arith::SubIOp::create(b, loc, tokens, fewTokens);
      Value keys = arith::SelectOp::create(
          b, loc, few, none, tensor::DimOp::create(b, loc, allLatent, 1));
      Value fewNope = leading(qNope, fewTokens);
      Value fewRope = leading(qRope, fewTokens);
      Value fewForm = absorbed(fewNope, fewRope);
      Value manyNope = leading(qNope, manyTokens);
      Value manyRope = leading(qRope, manyTokens);
      Value keyLatents = leading(allLatent, keys);
      Value keyRopes = leading(allKRope, keys);
      Value manyForm =
          expanded(block, manyNope, manyRope, keyLatents, keyRopes);
      attended = concatAlong(b, loc, {fewForm, manyForm}, 1);
    } else if (op.getAbsorbed()) {
      attended = absorbed(qNope, qRope);
    } else {
      attended = expanded(block, qNope, qRope, allLatent, allKRope);
    }
    Value y = ab.linear(ab.mergeHeads(attended), w[next++], Value());
    if (op.getInPlaceCache())
      return castToTypes(b, loc, {y, allLatent, allKRope},
                         op->getResultTypes());
    return castToTypes(b, loc, {y, latent, kRope}, op->getResultTypes());
  }
};

/// Causal attention in blocks with an online softmax; the queries are the
/// last of the key positions.
struct CausalAttentionDecomposition
    : LayerDecomposition<CausalAttentionDecomposition, CausalAttentionOp> {
  static SmallVector<Value> decompose(CausalAttentionOp op, OpBuilder &b) {
    Location loc = op.getLoc();
    Value offset = arith::SubIOp::create(
        b, loc, tensor::DimOp::create(b, loc, op.getK(), 1),
        tensor::DimOp::create(b, loc, op.getQ(), 1));
    Value o = buildBlockedCausalAttention(
        b, loc, op.getQ(), op.getK(), op.getV(), op.getScale().convertToFloat(),
        offset, op.getBlock());
    return castToTypes(b, loc, {o}, op->getResultTypes());
  }
};

struct RmsNormDecomposition
    : LayerDecomposition<RmsNormDecomposition, RmsNormOp> {
  static SmallVector<Value> decompose(RmsNormOp op, OpBuilder &b) {
    LayerBuilder lb(b, op.getLoc());
    return castToTypes(b, op.getLoc(),
                       lb.rmsNorm(op.getX(), op.getWeight(),
                                  op.getEps().convertToFloat(),
                                  op.getZeroCentered()),
                       op->getResultTypes());
  }
};

struct SwiGluMlpDecomposition
    : LayerDecomposition<SwiGluMlpDecomposition, SwiGluMlpOp> {
  static SmallVector<Value> decompose(SwiGluMlpOp op, OpBuilder &b) {
    LayerBuilder lb(b, op.getLoc());
    Value gate = lb.linear(op.getX(), op.getGate(), Value());
    Value up = lb.linear(op.getX(), op.getUp(), Value());
    Value y = lb.linear(lb.gated(up, gate), op.getDown(), Value());
    return castToTypes(b, op.getLoc(), y, op->getResultTypes());
  }
};

struct LmHeadDecomposition : LayerDecomposition<LmHeadDecomposition, LmHeadOp> {
  static SmallVector<Value> decompose(LmHeadOp op, OpBuilder &b) {
    LayerBuilder lb(b, op.getLoc());
    Value logits = lb.linear(op.getX(), op.getWeight(), Value());
    return castToTypes(b, op.getLoc(), logits, op->getResultTypes());
  }
};

/// y[b, t, d] = table[ids[b, t], d], a gather in a linalg.generic body.
struct EmbedDecomposition : LayerDecomposition<EmbedDecomposition, EmbedOp> {
  static SmallVector<Value> decompose(EmbedOp op, OpBuilder &b) {
    Location loc = op.getLoc();
    auto tableType = cast<RankedTensorType>(op.getTable().getType());
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(b, loc, op.getIds());
    sizes.push_back(b.getIndexAttr(tableType.getDimSize(1)));
    Value init = createEmpty(b, loc, sizes, b.getF32Type());
    AffineMap ids = AffineMap::get(
        3, 0, {b.getAffineDimExpr(0), b.getAffineDimExpr(1)}, b.getContext());
    Value table = op.getTable();
    Value y = buildElementwise(
        b, loc, op.getIds(), init, ids,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value row =
              arith::IndexCastOp::create(nb, nl, nb.getIndexType(), args[0]);
          Value column = linalg::IndexOp::create(nb, nl, 2);
          Value entry =
              tensor::ExtractOp::create(nb, nl, table, ValueRange{row, column});
          // A bf16 table is widened entry by entry.
          return convertFloat(nb, nl, entry, nb.getF32Type());
        });
    return castToTypes(b, loc, y, op->getResultTypes());
  }
};

} // namespace

void mlir::gdn::registerGdnDecompositionInterfaces(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, GdnDialect *) {
    GatedDeltaNetOp::attachInterface<GatedDeltaNetDecomposition>(*context);
    MlaOp::attachInterface<MlaDecomposition>(*context);
    CausalAttentionOp::attachInterface<CausalAttentionDecomposition>(*context);
    RmsNormOp::attachInterface<RmsNormDecomposition>(*context);
    SwiGluMlpOp::attachInterface<SwiGluMlpDecomposition>(*context);
    LmHeadOp::attachInterface<LmHeadDecomposition>(*context);
    EmbedOp::attachInterface<EmbedDecomposition>(*context);
  });
}
