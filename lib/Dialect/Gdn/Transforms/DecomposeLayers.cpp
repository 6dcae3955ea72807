//===- DecomposeLayers.cpp - layer ops to core ops and linalg -------------===//
//
// gdn.gated_deltanet, step by step as in the design document's reference
// module; the float64 transcription is python/gdn/layers.py.
//
//===----------------------------------------------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "gdn/Dialect/Gdn/Transforms/Passes.h"
#include "gdn/Dialect/Gdn/Transforms/Transforms.h"
#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <limits>

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNDECOMPOSELAYERSPASS
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {
using utils::IteratorType;

/// Builders of the layer's pieces on f32 tensors of rank 3 ([B, T, C]) or 4
/// ([B, T, H, D]).
class LayerBuilder {
public:
  LayerBuilder(OpBuilder &b, Location loc)
      : b(b), loc(loc), f32(b.getF32Type()) {}

  Value constant(float value) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  }

  AffineMap map(unsigned dims, ArrayRef<unsigned> results) {
    SmallVector<AffineExpr> exprs;
    for (unsigned r : results)
      exprs.push_back(b.getAffineDimExpr(r));
    return AffineMap::get(dims, 0, exprs, b.getContext());
  }

  /// [B, T, O] tensor.empty for an input x [B, T, I].
  Value emptyRows(Value x, int64_t columns) {
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    sizes.back() = b.getIndexAttr(columns);
    return createEmpty(b, loc, sizes, f32);
  }

  /// x [B, T, I] times weight^T ([O, I], PyTorch layout), plus bias [O].
  ///
  /// T is dynamic, but gdn-cpu-vectorize gives its register-tiled FMA
  /// schedule only to matmuls of static shape. So each sequence's tokens go
  /// in blocks of kRowBlock (one scf.forall task per batch x block), then
  /// tiles of kRowTile, each a static [rows, I] x [I, O] linalg.matmul on
  /// the weight transposed once per call; the last tokens (fewer than
  /// kRowTile, as in decode) stay a contraction on loops, without the
  /// transposition.
  static constexpr int64_t kRowBlock = 64, kRowTile = 8;
  Value linear(Value x, Value weight, Value bias) {
    auto weightType = cast<RankedTensorType>(weight.getType());
    int64_t outputs = weightType.getDimSize(0),
            inputs = weightType.getDimSize(1);
    Value init = emptyRows(x, outputs);
    if (bias)
      init = buildElementwise(
          b, loc, bias, init, map(3, {2}),
          [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    else
      init = fillWith(b, loc, init, 0.0f);
    auto index = [&](OpBuilder &nb, int64_t v) -> Value {
      return arith::ConstantIndexOp::create(nb, loc, v);
    };
    Value batch = tensor::DimOp::create(b, loc, x, 0);
    Value tokens = tensor::DimOp::create(b, loc, x, 1);
    // [1, rows, width] at (sequence, first, 0), rank-reduced to 2-D.
    auto rowsOf = [&](OpBuilder &nb, Value source, Value sequence,
                      Value first, int64_t rows, int64_t width) {
      auto type = RankedTensorType::get({rows, width}, f32);
      return tensor::ExtractSliceOp::create(
                 nb, loc, type, source,
                 ArrayRef<OpFoldResult>{sequence, first, nb.getIndexAttr(0)},
                 ArrayRef<OpFoldResult>{nb.getIndexAttr(1),
                                        nb.getIndexAttr(rows),
                                        nb.getIndexAttr(width)},
                 ArrayRef<OpFoldResult>{nb.getIndexAttr(1), nb.getIndexAttr(1),
                                        nb.getIndexAttr(1)})
          .getResult();
    };
    auto offsets = [&](OpBuilder &nb, Value sequence, Value first) {
      return SmallVector<OpFoldResult>{sequence, first, nb.getIndexAttr(0)};
    };
    auto sizes = [&](OpBuilder &nb, int64_t rows) {
      return SmallVector<OpFoldResult>{nb.getIndexAttr(1),
                                       nb.getIndexAttr(rows),
                                       nb.getIndexAttr(outputs)};
    };
    SmallVector<OpFoldResult> unitStrides(3, b.getIndexAttr(1));
    // Tokens [0, tiled) of every sequence go in static tiles.
    Value tiled = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, tokens, index(b, kRowTile)),
        index(b, kRowTile));
    Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, tiled,
                                      index(b, 0));
    auto blockedPart = scf::IfOp::create(
        b, loc, any,
        [&](OpBuilder &tb, Location) {
          Value transposed =
              linalg::TransposeOp::create(
                  tb, loc, weight,
                  createEmpty(tb, loc,
                              {tb.getIndexAttr(inputs),
                               tb.getIndexAttr(outputs)},
                              f32),
                  ArrayRef<int64_t>{1, 0})
                  .getResult()[0];
          auto tileProduct = [&](OpBuilder &nb, Value acc, Value sequence,
                                 Value first, int64_t rows) {
            return linalg::MatmulOp::create(
                       nb, loc,
                       ValueRange{rowsOf(nb, x, sequence, first, rows, inputs),
                                  transposed},
                       ValueRange{rowsOf(nb, acc, sequence, first, rows,
                                         outputs)})
                .getResult(0);
          };
          // Blocks of kRowBlock tokens, one task per sequence x block.
          Value blocks =
              arith::DivUIOp::create(tb, loc, tokens, index(tb, kRowBlock));
          auto forall = scf::ForallOp::create(
              tb, loc,
              ArrayRef<OpFoldResult>{OpFoldResult(batch), OpFoldResult(blocks)},
              ValueRange{init}, std::nullopt,
              [&](OpBuilder &fb, Location, ValueRange args) {
                Value first = arith::MulIOp::create(fb, loc, args[1],
                                                    index(fb, kRowBlock));
                Value tile = tileProduct(fb, args[2], args[0], first,
                                         kRowBlock);
                auto terminator = scf::InParallelOp::create(fb, loc);
                OpBuilder ib = OpBuilder::atBlockBegin(terminator.getBody());
                tensor::ParallelInsertSliceOp::create(
                    ib, loc, tile, args[2], offsets(ib, args[0], first),
                    sizes(ib, kRowBlock), unitStrides);
              });
          // Then tiles of kRowTile tokens up to `tiled`, per sequence.
          Value start =
              arith::MulIOp::create(tb, loc, blocks, index(tb, kRowBlock));
          auto sequences = scf::ForOp::create(
              tb, loc, index(tb, 0), batch, index(tb, 1),
              ValueRange{forall.getResult(0)},
              [&](OpBuilder &sb, Location, Value sequence, ValueRange acc) {
                auto rowTiles = scf::ForOp::create(
                    sb, loc, start, tiled, index(sb, kRowTile), acc,
                    [&](OpBuilder &lb, Location, Value first,
                        ValueRange inner) {
                      Value tile = tileProduct(lb, inner[0], sequence, first,
                                               kRowTile);
                      Value updated = tensor::InsertSliceOp::create(
                          lb, loc, tile, inner[0],
                          offsets(lb, sequence, first), sizes(lb, kRowTile),
                          unitStrides);
                      scf::YieldOp::create(lb, loc, updated);
                    });
                scf::YieldOp::create(sb, loc, rowTiles.getResult(0));
              });
          scf::YieldOp::create(tb, loc, sequences.getResult(0));
        },
        [&](OpBuilder &eb, Location) { scf::YieldOp::create(eb, loc, init); });
    // The last tokens of every sequence on loops.
    Value rest = arith::SubIOp::create(b, loc, tokens, tiled);
    SmallVector<OpFoldResult> restOffsets = {b.getIndexAttr(0), tiled,
                                             b.getIndexAttr(0)};
    Value restX = tensor::ExtractSliceOp::create(
        b, loc, x, restOffsets,
        ArrayRef<OpFoldResult>{batch, rest, b.getIndexAttr(inputs)},
        unitStrides);
    SmallVector<OpFoldResult> restSizes = {batch, rest,
                                           b.getIndexAttr(outputs)};
    Value restAcc = tensor::ExtractSliceOp::create(
        b, loc, blockedPart.getResult(0), restOffsets, restSizes, unitStrides);
    Value restOut = buildGeneric(
        b, loc, ValueRange{restX, weight}, restAcc,
        {map(4, {0, 1, 3}), map(4, {2, 3}), map(4, {0, 1, 2})},
        {IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
         IteratorType::reduction},
        [](OpBuilder &nb, Location nl, ValueRange args) {
          Value product = arith::MulFOp::create(nb, nl, args[0], args[1]);
          return arith::AddFOp::create(nb, nl, args[2], product).getResult();
        });
    return tensor::InsertSliceOp::create(b, loc, restOut,
                                         blockedPart.getResult(0), restOffsets,
                                         restSizes, unitStrides);
  }

  Value sigmoid(OpBuilder &nb, Location nl, Value z) {
    Value negated = arith::NegFOp::create(nb, nl, z);
    Value e = math::ExpOp::create(nb, nl, negated);
    Value one = arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(1.0f));
    Value denominator = arith::AddFOp::create(nb, nl, one, e);
    return arith::DivFOp::create(nb, nl, one, denominator);
  }

  Value silu(OpBuilder &nb, Location nl, Value z) {
    return arith::MulFOp::create(nb, nl, z, sigmoid(nb, nl, z));
  }

  /// x[..., offset : offset + size] along the last dimension.
  Value sliceLast(Value x, int64_t offset, int64_t size) {
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank();
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    offsets.back() = b.getIndexAttr(offset);
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    sizes.back() = b.getIndexAttr(size);
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    SmallVector<int64_t> shape(type.getShape());
    shape.back() = size;
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(shape, f32), x, offsets, sizes, strides);
  }

  /// SiLU of the causal depthwise convolution of z [B, T, C] with weight
  /// [C, 1, W] and bias [C]: out[t] = bias + sum_j w[j] z[t + j - (W - 1)],
  /// where the W - 1 inputs before the first token are `history`
  /// [B, W - 1, C], or zeros without one. Also returns the history for the
  /// next call: the last W - 1 inputs.
  std::pair<Value, Value> causalConvSilu(Value z, Value weight, Value bias,
                                         Value history) {
    auto weightType = cast<RankedTensorType>(weight.getType());
    int64_t kernel = weightType.getDimSize(2);
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, z);
    SmallVector<OpFoldResult> paddedSizes = sizes;
    Value tokens = getValueOrCreateConstantIndexOp(b, loc, sizes[1]);
    paddedSizes[1] =
        arith::AddIOp::create(
            b, loc, tokens, arith::ConstantIndexOp::create(b, loc, kernel - 1))
            .getResult();
    SmallVector<OpFoldResult> unit(3, b.getIndexAttr(1));
    SmallVector<OpFoldResult> historySizes = sizes;
    historySizes[1] = b.getIndexAttr(kernel - 1);
    Value padded;
    if (history) {
      padded = tensor::InsertSliceOp::create(
          b, loc, history, createEmpty(b, loc, paddedSizes, f32),
          SmallVector<OpFoldResult>(3, b.getIndexAttr(0)), historySizes, unit);
    } else {
      padded = createZeros(b, loc, paddedSizes, f32);
    }
    padded = tensor::InsertSliceOp::create(
        b, loc, z, padded,
        ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(kernel - 1),
                               b.getIndexAttr(0)},
        sizes, unit);
    auto zType = cast<RankedTensorType>(z.getType());
    Value nextHistory = tensor::ExtractSliceOp::create(
        b, loc,
        RankedTensorType::get(
            {zType.getDimSize(0), kernel - 1, zType.getDimSize(2)}, f32),
        padded,
        ArrayRef<OpFoldResult>{b.getIndexAttr(0), tokens, b.getIndexAttr(0)},
        historySizes, unit);
    Value init = buildElementwise(
        b, loc, bias, createEmpty(b, loc, sizes, f32), map(3, {2}),
        [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    AffineExpr bDim = b.getAffineDimExpr(0), t = b.getAffineDimExpr(1),
               c = b.getAffineDimExpr(2), j = b.getAffineDimExpr(3);
    AffineMap shifted = AffineMap::get(4, 0, {bDim, t + j, c}, b.getContext());
    AffineMap taps = AffineMap::get(4, 0, {c, b.getAffineConstantExpr(0), j},
                                    b.getContext());
    Value conv = buildGeneric(
        b, loc, ValueRange{padded, weight}, init,
        {shifted, taps, map(4, {0, 1, 2})},
        {IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
         IteratorType::reduction},
        [](OpBuilder &nb, Location nl, ValueRange args) {
          Value product = arith::MulFOp::create(nb, nl, args[0], args[1]);
          return arith::AddFOp::create(nb, nl, args[2], product).getResult();
        });
    Value activated = buildElementwise(
        b, loc, ValueRange{}, conv, {},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          return silu(nb, nl, args[0]);
        });
    return {activated, nextHistory};
  }

  /// [B, T, H*D] -> [B, T, H, D].
  Value splitHeads(Value x, int64_t heads) {
    auto type = cast<RankedTensorType>(x.getType());
    int64_t headDim = type.getDimSize(2) / heads;
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    SmallVector<OpFoldResult> shape = {
        sizes[0], sizes[1], b.getIndexAttr(heads), b.getIndexAttr(headDim)};
    auto resultType = RankedTensorType::get(
        {type.getDimSize(0), type.getDimSize(1), heads, headDim}, f32);
    return tensor::ExpandShapeOp::create(
        b, loc, resultType, x,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}}, shape);
  }

  /// [B, T, H, D] -> [B, T, H*D].
  Value mergeHeads(Value x) {
    return tensor::CollapseShapeOp::create(
        b, loc, x, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  }

  /// Maps of an iteration space of `rank` dims: all of them, and all but
  /// the last (the reduced dimension).
  AffineMap allDims(unsigned rank) { return b.getMultiDimIdentityMap(rank); }
  AffineMap leadingDims(unsigned rank) {
    SmallVector<unsigned> dims;
    for (unsigned d = 0; d + 1 < rank; ++d)
      dims.push_back(d);
    return map(rank, dims);
  }

  /// Sum of squares over the last dimension: [..., D] -> [...].
  Value sumOfSquares(Value x) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    sizes.pop_back();
    Value init = createZeros(b, loc, sizes, f32);
    SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
    iterators.back() = IteratorType::reduction;
    return buildGeneric(
        b, loc, x, init, {allDims(rank), leadingDims(rank)}, iterators,
        [](OpBuilder &nb, Location nl, ValueRange args) {
          Value square = arith::MulFOp::create(nb, nl, args[0], args[0]);
          return arith::AddFOp::create(nb, nl, args[1], square).getResult();
        });
  }

  /// F.normalize over the last dimension: x / max(|x|, 1e-12).
  Value l2Normalize(Value x) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    Value squares = sumOfSquares(x);
    Value floor = constant(1e-12f);
    return buildElementwise(
        b, loc, ValueRange{x, squares}, createEmptyLike(b, loc, x, f32),
        {allDims(rank), leadingDims(rank)},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value norm = math::SqrtOp::create(nb, nl, args[1]);
          Value safe = arith::MaximumFOp::create(nb, nl, norm, floor);
          return arith::DivFOp::create(nb, nl, args[0], safe).getResult();
        });
  }

  /// RMSNorm over the last dimension: x / sqrt(mean(x^2) + eps) * weight.
  Value rmsNorm(Value x, Value weight, float eps) {
    auto type = cast<RankedTensorType>(x.getType());
    unsigned rank = type.getRank();
    Value squares = sumOfSquares(x);
    Value count = constant(static_cast<float>(type.getShape().back()));
    Value epsilon = constant(eps);
    return buildElementwise(
        b, loc, ValueRange{x, squares, weight}, createEmptyLike(b, loc, x, f32),
        {allDims(rank), leadingDims(rank), map(rank, {rank - 1})},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value mean = arith::DivFOp::create(nb, nl, args[1], count);
          Value shifted = arith::AddFOp::create(nb, nl, mean, epsilon);
          Value inverse = math::RsqrtOp::create(nb, nl, shifted);
          Value scaled = arith::MulFOp::create(nb, nl, args[0], inverse);
          return arith::MulFOp::create(nb, nl, scaled, args[2]).getResult();
        });
  }

  /// g = -exp(log_alpha) * softplus(a), with PyTorch's softplus (identity
  /// above 20), for a [B, T, H].
  Value logForgetGate(Value a, Value logAlpha) {
    Value threshold = constant(20.0f);
    return buildElementwise(
        b, loc, ValueRange{a, logAlpha}, createEmptyLike(b, loc, a, f32),
        {map(3, {0, 1, 2}), map(3, {2})},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value e = math::ExpOp::create(nb, nl, args[0]);
          Value soft = math::Log1pOp::create(nb, nl, e);
          Value large = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT,
                                              args[0], threshold);
          Value softplus =
              arith::SelectOp::create(nb, nl, large, args[0], soft);
          Value rate = math::ExpOp::create(nb, nl, args[1]);
          Value product = arith::MulFOp::create(nb, nl, rate, softplus);
          return arith::NegFOp::create(nb, nl, product).getResult();
        });
  }

  Value sigmoidTensor(Value z) {
    return buildElementwise(b, loc, ValueRange{}, z, {},
                            [&](OpBuilder &nb, Location nl, ValueRange args) {
                              return sigmoid(nb, nl, args[0]);
                            });
  }

  /// o * silu(gate), element-wise on [B, T, C].
  Value gated(Value o, Value gate) {
    AffineMap id = b.getMultiDimIdentityMap(3);
    return buildElementwise(b, loc, ValueRange{gate}, o, {id},
                            [&](OpBuilder &nb, Location nl, ValueRange args) {
                              return arith::MulFOp::create(
                                         nb, nl, args[1], silu(nb, nl, args[0]))
                                  .getResult();
                            });
  }

protected:
  OpBuilder &b;
  Location loc;
  Type f32;
};

struct DecomposeGatedDeltaNet : OpRewritePattern<GatedDeltaNetOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GatedDeltaNetOp op,
                                PatternRewriter &rewriter) const override {
    using W = GatedDeltaNetOp::Weight;
    Location loc = op.getLoc();
    LayerBuilder lb(rewriter, loc);
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
        lb.linear(x, op.getWeight(W::AlphaWeight), op.getWeight(W::AlphaBias)),
        op.getWeight(W::LogAlpha));
    Value beta = lb.sigmoidTensor(
        lb.linear(x, op.getWeight(W::BetaWeight), op.getWeight(W::BetaBias)));

    auto oType = cast<RankedTensorType>(v.getType());
    auto stateType = cast<RankedTensorType>(op.getFinalState().getType());
    auto core = DeltaRuleOp::create(rewriter, loc, TypeRange{oType, stateType},
                                    q, k, v, g, beta, op.getInitialState(),
                                    rewriter.getF32FloatAttr(1.0f));
    Value o = lb.mergeHeads(lb.rmsNorm(core.getO(), norm, eps));
    Value gate =
        lb.linear(x, op.getWeight(W::GateWeight), op.getWeight(W::GateBias));
    Value y = lb.linear(lb.gated(o, gate), op.getWeight(W::OutProjWeight),
                        op.getWeight(W::OutProjBias));
    Value convState = concatAlong(rewriter, loc, histories, 2);
    rewriter.replaceOp(op, castToTypes(rewriter, loc,
                                       {y, core.getFinalState(), convState},
                                       op->getResultTypes()));
    return success();
  }
};

/// Pieces of multi-head latent attention.
class AttentionBuilder : public LayerBuilder {
public:
  using LayerBuilder::LayerBuilder;

  /// Rotate-half RoPE along the last dimension (size r) at the positions of
  /// dimension 1 plus `offset`:
  /// out[i] = x[i] cos(t w_j) + sign_i x[partner_i] sin(t w_j),
  /// w_j = theta^(-2j / r), j = i mod r/2, partner_i = i +- r/2 with sign
  /// -1 for the first half.
  Value rope(Value x, float theta, Value offset) {
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank();
    int64_t r = type.getShape().back();
    Value logTheta = constant(std::log(theta));
    return buildElementwise(
        b, loc, x, createEmptyLike(b, loc, x, f32),
        b.getMultiDimIdentityMap(rank),
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          SmallVector<Value> indices;
          for (int64_t d = 0; d < rank; ++d)
            indices.push_back(linalg::IndexOp::create(nb, nl, d));
          Value i = indices.back();
          Value half = arith::ConstantIndexOp::create(nb, nl, r / 2);
          Value first =
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, i, half);
          Value j = arith::RemUIOp::create(nb, nl, i, half);
          Value partner = arith::SelectOp::create(
              nb, nl, first, arith::AddIOp::create(nb, nl, i, half),
              arith::SubIOp::create(nb, nl, i, half));
          indices.back() = partner;
          Value other = tensor::ExtractOp::create(nb, nl, x, indices);
          auto toF32 = [&](Value index) {
            Value i64 =
                arith::IndexCastOp::create(nb, nl, nb.getI64Type(), index);
            return arith::SIToFPOp::create(nb, nl, nb.getF32Type(), i64)
                .getResult();
          };
          Value exponent = arith::MulFOp::create(
              nb, nl, toF32(j),
              arith::ConstantOp::create(
                  nb, nl, nb.getF32FloatAttr(-2.0f / static_cast<float>(r))));
          Value frequency = math::ExpOp::create(
              nb, nl, arith::MulFOp::create(nb, nl, exponent, logTheta));
          Value position = arith::AddIOp::create(nb, nl, indices[1], offset);
          Value angle =
              arith::MulFOp::create(nb, nl, toF32(position), frequency);
          Value cosine = math::CosOp::create(nb, nl, angle);
          Value sine = math::SinOp::create(nb, nl, angle);
          Value rotated = arith::SelectOp::create(
              nb, nl, first, arith::NegFOp::create(nb, nl, other), other);
          Value a = arith::MulFOp::create(nb, nl, args[0], cosine);
          Value c = arith::MulFOp::create(nb, nl, rotated, sine);
          return arith::AddFOp::create(nb, nl, a, c).getResult();
        });
  }

  /// scores[b, n, t, s] = q_nope[b,t,n,:] . k_nope[b,s,n,:]
  ///                    + q_rope[b,t,n,:] . k_rope[b,s,:].
  Value scores(Value qNope, Value kNope, Value qRope, Value kRope) {
    int64_t heads = cast<RankedTensorType>(qNope.getType()).getDimSize(2);
    OpFoldResult batch = tensor::getMixedSize(b, loc, qNope, 0);
    OpFoldResult tokens = tensor::getMixedSize(b, loc, qNope, 1);
    OpFoldResult keys = tensor::getMixedSize(b, loc, kNope, 1);
    Value init = createZeros(
        b, loc, {batch, b.getIndexAttr(heads), tokens, keys}, f32);
    auto iterators = SmallVector<IteratorType>(4, IteratorType::parallel);
    iterators.push_back(IteratorType::reduction);
    auto body = [](OpBuilder &nb, Location nl, ValueRange args) {
      Value product = arith::MulFOp::create(nb, nl, args[0], args[1]);
      return arith::AddFOp::create(nb, nl, args[2], product).getResult();
    };
    // Dimensions (b, n, t, s, d).
    Value nope = buildGeneric(
        b, loc, ValueRange{qNope, kNope}, init,
        {map(5, {0, 2, 1, 4}), map(5, {0, 3, 1, 4}), map(5, {0, 1, 2, 3})},
        iterators, body);
    return buildGeneric(
        b, loc, ValueRange{qRope, kRope}, nope,
        {map(5, {0, 2, 1, 4}), map(5, {0, 3, 4}), map(5, {0, 1, 2, 3})},
        iterators, body);
  }

  /// Causal softmax over s of scale * scores[b, n, t, s] for query t at
  /// position t + offset (s <= t + offset).
  Value causalSoftmax(Value scores, float scale, Value offset) {
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, scores);
    SmallVector<OpFoldResult> rowSizes(sizes.begin(), sizes.end() - 1);
    Value factor = constant(scale);
    Value lowest = constant(-std::numeric_limits<float>::infinity());
    Value zero = constant(0.0f);
    SmallVector<IteratorType> reduce(4, IteratorType::parallel);
    reduce.back() = IteratorType::reduction;
    AffineMap all = b.getMultiDimIdentityMap(4), rows = map(4, {0, 1, 2});
    auto masked = [&](OpBuilder &nb, Location nl, Value score) {
      Value t = arith::AddIOp::create(
          nb, nl, linalg::IndexOp::create(nb, nl, 2), offset);
      Value s = linalg::IndexOp::create(nb, nl, 3);
      Value causal =
          arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ule, s, t);
      Value scaled = arith::MulFOp::create(nb, nl, score, factor);
      return std::make_pair(causal, scaled);
    };
    Value maxInit =
        linalg::FillOp::create(b, loc, ValueRange{lowest},
                               ValueRange{createEmpty(b, loc, rowSizes, f32)})
            .getResult(0);
    Value maximum = buildGeneric(
        b, loc, scores, maxInit, {all, rows}, reduce,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          auto [causal, scaled] = masked(nb, nl, args[0]);
          Value candidate =
              arith::SelectOp::create(nb, nl, causal, scaled, lowest);
          return arith::MaximumFOp::create(nb, nl, args[1], candidate)
              .getResult();
        });
    Value exps = buildElementwise(
        b, loc, ValueRange{scores, maximum},
        createEmptyLike(b, loc, scores, f32), {all, rows},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          auto [causal, scaled] = masked(nb, nl, args[0]);
          Value shifted = arith::SubFOp::create(nb, nl, scaled, args[1]);
          Value safe = arith::SelectOp::create(nb, nl, causal, shifted, zero);
          Value e = math::ExpOp::create(nb, nl, safe);
          return arith::SelectOp::create(nb, nl, causal, e, zero).getResult();
        });
    Value sums = buildGeneric(
        b, loc, exps, createZeros(b, loc, rowSizes, f32), {all, rows}, reduce,
        [](OpBuilder &nb, Location nl, ValueRange args) {
          return arith::AddFOp::create(nb, nl, args[1], args[0]).getResult();
        });
    return buildElementwise(
        b, loc, ValueRange{exps, sums}, createEmptyLike(b, loc, scores, f32),
        {all, rows}, [](OpBuilder &nb, Location nl, ValueRange args) {
          return arith::DivFOp::create(nb, nl, args[0], args[1]).getResult();
        });
  }

  /// out[b, t, n, e] = sum_s p[b, n, t, s] v[b, s, n, e].
  Value weightedValues(Value probabilities, Value values) {
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, values);
    sizes[1] = tensor::getMixedSize(b, loc, probabilities, 2);
    Value init = createZeros(b, loc, sizes, f32);
    SmallVector<IteratorType> iterators(4, IteratorType::parallel);
    iterators.push_back(IteratorType::reduction);
    // Dimensions (b, t, n, e, s).
    return buildGeneric(
        b, loc, ValueRange{probabilities, values}, init,
        {map(5, {0, 2, 1, 4}), map(5, {0, 4, 2, 3}), map(5, {0, 1, 2, 3})},
        iterators, [](OpBuilder &nb, Location nl, ValueRange args) {
          Value product = arith::MulFOp::create(nb, nl, args[0], args[1]);
          return arith::AddFOp::create(nb, nl, args[2], product).getResult();
        });
  }
};

struct DecomposeMla : OpRewritePattern<MlaOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MlaOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    AttentionBuilder ab(rewriter, loc);
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
        op.getPastLatent()
            ? tensor::DimOp::create(rewriter, loc, op.getPastLatent(), 1)
                  .getResult()
            : arith::ConstantIndexOp::create(rewriter, loc, 0).getResult();
    Value qHeads = ab.splitHeads(q, heads);
    Value qNope = ab.sliceLast(qHeads, 0, nope);
    Value qRope = ab.rope(ab.sliceLast(qHeads, nope, rope), theta, past);

    Value kvA = ab.linear(x, w[next++], Value());
    Value latent = ab.rmsNorm(ab.sliceLast(kvA, 0, kvLora), w[next++], eps);
    Value kRope = ab.rope(ab.sliceLast(kvA, kvLora, rope), theta, past);
    Value allLatent = latent, allKRope = kRope;
    if (op.getPastLatent()) {
      allLatent = concatAlong(rewriter, loc, {op.getPastLatent(), latent}, 1);
      allKRope = concatAlong(rewriter, loc, {op.getPastKRope(), kRope}, 1);
    }
    Value kv = ab.splitHeads(ab.linear(allLatent, w[next++], Value()), heads);
    Value kNope = ab.sliceLast(kv, 0, nope);
    Value values = ab.sliceLast(kv, nope, vDim);

    Value probabilities =
        ab.causalSoftmax(ab.scores(qNope, kNope, qRope, allKRope),
                         1.0f / std::sqrt(static_cast<float>(nope + rope)),
                         past);
    Value attended = ab.mergeHeads(ab.weightedValues(probabilities, values));
    Value y = ab.linear(attended, w[next++], Value());
    rewriter.replaceOp(op, castToTypes(rewriter, loc, {y, latent, kRope},
                                       op->getResultTypes()));
    return success();
  }
};

struct DecomposeRmsNorm : OpRewritePattern<RmsNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RmsNormOp op,
                                PatternRewriter &rewriter) const override {
    LayerBuilder lb(rewriter, op.getLoc());
    rewriter.replaceOp(op, lb.rmsNorm(op.getX(), op.getWeight(),
                                      op.getEps().convertToFloat()));
    return success();
  }
};

struct DecomposeSwiGluMlp : OpRewritePattern<SwiGluMlpOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SwiGluMlpOp op,
                                PatternRewriter &rewriter) const override {
    LayerBuilder lb(rewriter, op.getLoc());
    Value gate = lb.linear(op.getX(), op.getGate(), Value());
    Value up = lb.linear(op.getX(), op.getUp(), Value());
    Value y = lb.linear(lb.gated(up, gate), op.getDown(), Value());
    rewriter.replaceOp(
        op, castToTypes(rewriter, op.getLoc(), y, op->getResultTypes()));
    return success();
  }
};

struct DecomposeLmHead : OpRewritePattern<LmHeadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LmHeadOp op,
                                PatternRewriter &rewriter) const override {
    LayerBuilder lb(rewriter, op.getLoc());
    Value logits = lb.linear(op.getX(), op.getWeight(), Value());
    rewriter.replaceOp(
        op, castToTypes(rewriter, op.getLoc(), logits, op->getResultTypes()));
    return success();
  }
};

/// y[b, t, d] = table[ids[b, t], d], a gather in a linalg.generic body.
struct DecomposeEmbed : OpRewritePattern<EmbedOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbedOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto tableType = cast<RankedTensorType>(op.getTable().getType());
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, op.getIds());
    sizes.push_back(rewriter.getIndexAttr(tableType.getDimSize(1)));
    Value init = createEmpty(rewriter, loc, sizes, rewriter.getF32Type());
    AffineMap ids = AffineMap::get(
        3, 0, {rewriter.getAffineDimExpr(0), rewriter.getAffineDimExpr(1)},
        rewriter.getContext());
    Value table = op.getTable();
    Value y = buildElementwise(
        rewriter, loc, op.getIds(), init, ids,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value row =
              arith::IndexCastOp::create(nb, nl, nb.getIndexType(), args[0]);
          Value column = linalg::IndexOp::create(nb, nl, 2);
          return tensor::ExtractOp::create(nb, nl, table,
                                           ValueRange{row, column})
              .getResult();
        });
    rewriter.replaceOp(op, castToTypes(rewriter, loc, y, op->getResultTypes()));
    return success();
  }
};

struct GdnDecomposeLayersPass
    : gdn::impl::GdnDecomposeLayersPassBase<GdnDecomposeLayersPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGdnDecomposeLayersPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace

void mlir::gdn::populateGdnDecomposeLayersPatterns(
    RewritePatternSet &patterns) {
  patterns.add<DecomposeGatedDeltaNet, DecomposeMla, DecomposeRmsNorm,
               DecomposeSwiGluMlp, DecomposeLmHead, DecomposeEmbed>(
      patterns.getContext());
}
