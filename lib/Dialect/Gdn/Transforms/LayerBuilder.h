//===- LayerBuilder.h - the pieces of gdn's layer ops -----------*- C++ -*-===//
//
// Builders of what layer ops decompose into, on f32 tensors of rank 3
// ([B, T, C]) or 4 ([B, T, H, D]): projections as linalg.matmul, the causal
// convolution, norms, gates and the pieces of multi-head latent attention.
// Target-neutral: how a projection is tiled is the target's choice
// (gdn-cpu-tile-projections on the CPU).
//
//===----------------------------------------------------------------------===//

#ifndef GDN_DIALECT_GDN_TRANSFORMS_LAYERBUILDER_H
#define GDN_DIALECT_GDN_TRANSFORMS_LAYERBUILDER_H

#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

namespace mlir::gdn {

using utils::IteratorType;

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

  /// x [B, T, I] times weight^T ([O, I], PyTorch layout), plus bias [O]:
  /// one linalg.contract (getProjectionIndexingMaps) from zeros, the bias
  /// added after it. The bias is not the contraction's initial value: a
  /// broadcast into the accumulator would be a kernel of its own on the
  /// GPU, where the add after the sum runs in the projection's kernel (an
  /// epilogue, gdn-gpu-map-parallel-loops).
  Value linear(Value x, Value weight, Value bias) {
    int64_t outputs = cast<RankedTensorType>(weight.getType()).getDimSize(0);
    Value init = fillWith(b, loc, emptyRows(x, outputs), 0.0f);
    Value product =
        linalg::ContractOp::create(b, loc, TypeRange{init.getType()},
                                   ValueRange{x, weight}, ValueRange{init},
                                   getProjectionIndexingMaps(b.getContext()))
            .getResult(0);
    return bias ? addBias(product, bias) : product;
  }

  /// x [..., C] plus bias [C] along the last dimension, in place.
  Value addBias(Value x, Value bias) {
    return mapPlusBias(x, bias, [](OpBuilder &, Location, Value sum) {
      return sum;
    });
  }

  /// f(x + bias) in place, element-wise, for x [..., C] and bias [C] along
  /// the last dimension (f(x) where the bias is null).
  Value mapPlusBias(Value x, Value bias,
                    function_ref<Value(OpBuilder &, Location, Value)> f) {
    if (!bias)
      return buildElementwise(b, loc, ValueRange{}, x, {},
                              [&](OpBuilder &nb, Location nl, ValueRange args) {
                                return f(nb, nl, args[0]);
                              });
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    return buildElementwise(
        b, loc, ValueRange{bias}, x, {map(rank, {rank - 1})},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          return f(nb, nl,
                   arith::AddFOp::create(nb, nl, args[1], args[0]).getResult());
        });
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
  /// [C, 1, W] and bias [C] (none when null): out[t] = bias + sum_j w[j] z[t +
  /// j - (W - 1)], where the W - 1 inputs before the first token are `history`
  /// [B, W - 1, C], or zeros without one. Also returns the history for the
  /// next call: the last W - 1 inputs.
  std::pair<Value, Value> causalConvSilu(Value z, Value weight, Value bias,
                                         Value history) {
    auto weightType = cast<RankedTensorType>(weight.getType());
    int64_t kernel = weightType.getDimSize(2);
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, z);
    Value tokens = getValueOrCreateConstantIndexOp(b, loc, sizes[1]);
    // The window [history | z] is read where it lies: position p of a
    // sequence is history row p for p < kernel - 1 (zero without a
    // history), z row p - (kernel - 1) after. No copy of either into a
    // padded buffer: on the GPU each would be a kernel of its own. The
    // convolution reads both rows in bounds and selects (every position
    // it reads has a z row at or before it); the next history reads only
    // the one that applies, since z may hold no token.
    auto fromZ = [z, kernel](OpBuilder &nb, Location nl, Value batch,
                             Value position, Value channel) -> Value {
      Value cut = arith::ConstantIndexOp::create(nb, nl, kernel - 1);
      Value row = arith::SubIOp::create(nb, nl, position, cut);
      return tensor::ExtractOp::create(nb, nl, z,
                                       ValueRange{batch, row, channel});
    };
    auto fromHistory = [history, kernel](OpBuilder &nb, Location nl,
                                         Value batch, Value position,
                                         Value channel) -> Value {
      if (!history)
        return arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(0));
      Value last = arith::ConstantIndexOp::create(nb, nl, kernel - 2);
      Value row = arith::MinUIOp::create(nb, nl, position, last);
      return tensor::ExtractOp::create(nb, nl, history,
                                       ValueRange{batch, row, channel});
    };
    auto inHistory = [kernel](OpBuilder &nb, Location nl, Value position) {
      Value cut = arith::ConstantIndexOp::create(nb, nl, kernel - 1);
      return arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult,
                                   position, cut)
          .getResult();
    };
    auto windowAt = [&](OpBuilder &nb, Location nl, Value batch,
                        Value position, Value channel) -> Value {
      Value cut = arith::ConstantIndexOp::create(nb, nl, kernel - 1);
      Value early = inHistory(nb, nl, position);
      Value zPosition = arith::SelectOp::create(nb, nl, early, cut, position);
      return arith::SelectOp::create(
          nb, nl, early, fromHistory(nb, nl, batch, position, channel),
          fromZ(nb, nl, batch, zPosition, channel));
    };
    auto index = [](OpBuilder &nb, Location nl, int64_t dim) -> Value {
      return linalg::IndexOp::create(nb, nl, dim);
    };
    SmallVector<OpFoldResult> historySizes = sizes;
    historySizes[1] = b.getIndexAttr(kernel - 1);
    Value nextHistory = buildGeneric(
        b, loc, ValueRange{}, createEmpty(b, loc, historySizes, f32),
        {map(3, {0, 1, 2})},
        {IteratorType::parallel, IteratorType::parallel,
         IteratorType::parallel},
        [&](OpBuilder &nb, Location nl, ValueRange) {
          Value position =
              arith::AddIOp::create(nb, nl, tokens, index(nb, nl, 1));
          Value batch = index(nb, nl, 0), channel = index(nb, nl, 2);
          return scf::IfOp::create(
                     nb, nl, inHistory(nb, nl, position),
                     [&](OpBuilder &ib, Location il) {
                       scf::YieldOp::create(
                           ib, il,
                           fromHistory(ib, il, batch, position, channel));
                     },
                     [&](OpBuilder &ib, Location il) {
                       scf::YieldOp::create(
                           ib, il, fromZ(ib, il, batch, position, channel));
                     })
              .getResult(0);
        });
    // The taps are summed from zeros and the bias added with the SiLU: on
    // the GPU both run in the convolution's kernel (an epilogue), where a
    // bias broadcast into the accumulator would be a kernel of its own.
    Value init = createZeros(b, loc, sizes, f32);
    AffineExpr c = b.getAffineDimExpr(2), j = b.getAffineDimExpr(3);
    AffineMap taps = AffineMap::get(4, 0, {c, b.getAffineConstantExpr(0), j},
                                    b.getContext());
    Value conv = buildGeneric(
        b, loc, ValueRange{weight}, init, {taps, map(4, {0, 1, 2})},
        {IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
         IteratorType::reduction},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value position = arith::AddIOp::create(nb, nl, index(nb, nl, 1),
                                                 index(nb, nl, 3));
          Value tap = windowAt(nb, nl, index(nb, nl, 0), position,
                               index(nb, nl, 2));
          Value product = arith::MulFOp::create(nb, nl, tap, args[0]);
          return arith::AddFOp::create(nb, nl, args[1], product).getResult();
        });
    Value activated = mapPlusBias(
        conv, bias,
        [&](OpBuilder &nb, Location nl, Value z) { return silu(nb, nl, z); });
    return {activated, nextHistory};
  }

  /// [..., G*C] -> [..., G, C] (any rank).
  Value splitLast(Value x, int64_t groups) {
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank();
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    sizes.back() = b.getIndexAttr(groups);
    sizes.push_back(b.getIndexAttr(type.getShape().back() / groups));
    SmallVector<int64_t> shape(type.getShape());
    shape.back() = groups;
    shape.push_back(type.getShape().back() / groups);
    SmallVector<ReassociationIndices> groupsOfDims;
    for (int64_t d = 0; d + 1 < rank; ++d)
      groupsOfDims.push_back({d});
    groupsOfDims.push_back({rank - 1, rank});
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, f32), x, groupsOfDims, sizes);
  }

  /// [..., G, C] -> [..., G*C] (any rank).
  Value mergeLast(Value x) {
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
    SmallVector<ReassociationIndices> groupsOfDims;
    for (int64_t d = 0; d + 2 < rank; ++d)
      groupsOfDims.push_back({d});
    groupsOfDims.push_back({rank - 2, rank - 1});
    return tensor::CollapseShapeOp::create(b, loc, x, groupsOfDims);
  }

  /// [B, T, H*D] -> [B, T, H, D].
  Value splitHeads(Value x, int64_t heads) { return splitLast(x, heads); }

  /// [B, T, H, D] -> [B, T, H*D].
  Value mergeHeads(Value x) { return mergeLast(x); }

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

  /// x / sqrt(sum(x^2) + eps) over the last dimension (fla's and the Qwen
  /// models' l2norm).
  Value l2NormalizeWithEps(Value x, float eps) {
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    Value squares = sumOfSquares(x);
    Value epsilon = constant(eps);
    return buildElementwise(
        b, loc, ValueRange{x, squares}, createEmptyLike(b, loc, x, f32),
        {allDims(rank), leadingDims(rank)},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value shifted = arith::AddFOp::create(nb, nl, args[1], epsilon);
          Value inverse = math::RsqrtOp::create(nb, nl, shifted);
          return arith::MulFOp::create(nb, nl, args[0], inverse).getResult();
        });
  }

  /// RMSNorm over the last dimension: x / sqrt(mean(x^2) + eps) * weight,
  /// or * (1 + weight) when `zeroCentered`.
  Value rmsNorm(Value x, Value weight, float eps, bool zeroCentered = false) {
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
          Value factor = args[2];
          if (zeroCentered)
            factor = arith::AddFOp::create(
                nb, nl,
                arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(1.0f)),
                factor);
          return arith::MulFOp::create(nb, nl, scaled, factor).getResult();
        });
  }

  /// g = -exp(log_alpha) * softplus(a + bias), with PyTorch's softplus
  /// (identity above 20), for a [B, T, H] and bias [H] (none when null).
  /// The bias is added here, not by the projection that makes `a`: on the
  /// GPU this op is the projection's epilogue, and a second one would be a
  /// kernel of its own.
  Value logForgetGate(Value a, Value logAlpha, Value bias = Value()) {
    Value threshold = constant(20.0f);
    SmallVector<Value> inputs = {a, logAlpha};
    SmallVector<AffineMap> maps = {map(3, {0, 1, 2}), map(3, {2})};
    if (bias) {
      inputs.push_back(bias);
      maps.push_back(map(3, {2}));
    }
    return buildElementwise(
        b, loc, inputs, createEmptyLike(b, loc, a, f32), maps,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value x = bias ? arith::AddFOp::create(nb, nl, args[0], args[2])
                               .getResult()
                         : args[0];
          Value e = math::ExpOp::create(nb, nl, x);
          Value soft = math::Log1pOp::create(nb, nl, e);
          Value large = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OGT,
                                              x, threshold);
          Value softplus = arith::SelectOp::create(nb, nl, large, x, soft);
          Value rate = math::ExpOp::create(nb, nl, args[1]);
          Value product = arith::MulFOp::create(nb, nl, rate, softplus);
          return arith::NegFOp::create(nb, nl, product).getResult();
        });
  }

  /// sigmoid(z + bias) in place, for z [..., C] and bias [C] (none when
  /// null); the bias added here for the reason logForgetGate gives.
  Value sigmoidTensor(Value z, Value bias = Value()) {
    return mapPlusBias(z, bias, [&](OpBuilder &nb, Location nl, Value x) {
      return sigmoid(nb, nl, x);
    });
  }

  /// o * silu(gate), element-wise on tensors of one shape.
  Value gated(Value o, Value gate) {
    AffineMap id =
        b.getMultiDimIdentityMap(cast<RankedTensorType>(o.getType()).getRank());
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

  /// RoPE on the first `rotaryDim` channels of the last dimension; the
  /// others pass unchanged.
  Value partialRope(Value x, int64_t rotaryDim, float theta, Value offset) {
    int64_t width = cast<RankedTensorType>(x.getType()).getShape().back();
    if (rotaryDim == 0)
      return x;
    if (rotaryDim == width)
      return rope(x, theta, offset);
    Value rotated = rope(sliceLast(x, 0, rotaryDim), theta, offset);
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
    return concatAlong(b, loc,
                       {rotated, sliceLast(x, rotaryDim, width - rotaryDim)},
                       rank - 1);
  }

  /// scores[b, n, t, s] = q_nope[b,t,n,:] . k_nope[b,s,n,:]
  ///                    + q_rope[b,t,n,:] . k_rope[b,s,:].
  Value scores(Value qNope, Value kNope, Value qRope, Value kRope) {
    int64_t heads = cast<RankedTensorType>(qNope.getType()).getDimSize(2);
    OpFoldResult batch = tensor::getMixedSize(b, loc, qNope, 0);
    OpFoldResult tokens = tensor::getMixedSize(b, loc, qNope, 1);
    OpFoldResult keys = tensor::getMixedSize(b, loc, kNope, 1);
    Value init =
        createZeros(b, loc, {batch, b.getIndexAttr(heads), tokens, keys}, f32);
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

  /// `keys` keys split into `count` whole groups of `size`, the first
  /// `whole` = count x size of them, and the rest.
  struct KeyGroups {
    int64_t size;
    Value count, whole;
  };
  KeyGroups splitKeys(OpFoldResult keys, int64_t size) {
    Value keyCount = getValueOrCreateConstantIndexOp(b, loc, keys);
    Value groupSize = arith::ConstantIndexOp::create(b, loc, size);
    Value count = arith::DivUIOp::create(b, loc, keyCount, groupSize);
    return {size, count, arith::MulIOp::create(b, loc, count, groupSize)};
  }

  /// Causal softmax over s of scale * scores[b, n, t, s] for query t at
  /// position t + offset (s <= t + offset): the masked, scaled scores
  /// through linalg.softmax, which decomposes itself (AggregatedOpInterface)
  /// into max, exp, sum and division.
  Value causalSoftmax(Value scores, float scale, Value offset,
                      const KeyGroups *groups = nullptr) {
    Value factor = constant(scale);
    Value lowest = constant(-std::numeric_limits<float>::infinity());
    Value masked = buildElementwise(
        b, loc, ValueRange{scores}, createEmptyLike(b, loc, scores, f32),
        {b.getMultiDimIdentityMap(4)},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value t = arith::AddIOp::create(
              nb, nl, linalg::IndexOp::create(nb, nl, 2), offset);
          Value s = linalg::IndexOp::create(nb, nl, 3);
          Value causal =
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ule, s, t);
          Value scaled = arith::MulFOp::create(nb, nl, args[0], factor);
          return arith::SelectOp::create(nb, nl, causal, scaled, lowest)
              .getResult();
        });
    if (groups)
      return groupedSoftmax(masked, *groups);
    return linalg::SoftmaxOp::create(b, loc, masked.getType(), masked,
                                     createEmptyLike(b, loc, scores, f32),
                                     /*dimension=*/3)
        .getResult()[0];
  }

  /// The first `g.whole` keys of x along `keyDim`, [..., S, ...] as
  /// [..., g.count, g.size, ...]: the keys of one group together. With
  /// `interleaved`, as [..., g.size, g.count]: group j holds keys j,
  /// j + count, j + 2 count, ..., so that the groups' i-th keys lie side
  /// by side.
  Value keyGroups(Value x, unsigned keyDim, const KeyGroups &g,
                  bool interleaved = false) {
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    sizes[keyDim] = g.whole;
    Value slice =
        tensor::ExtractSliceOp::create(b, loc, x, offsets, sizes, strides);
    SmallVector<int64_t> shape(type.getShape());
    OpFoldResult count = g.count, size = b.getIndexAttr(g.size);
    if (interleaved)
      std::swap(count, size);
    shape[keyDim] = interleaved ? g.size : ShapedType::kDynamic;
    shape.insert(shape.begin() + keyDim + 1,
                 interleaved ? ShapedType::kDynamic : g.size);
    sizes[keyDim] = count;
    sizes.insert(sizes.begin() + keyDim + 1, size);
    SmallVector<ReassociationIndices> reassociation;
    for (unsigned d = 0, e = type.getRank(); d < e; ++d) {
      unsigned first = d <= keyDim ? d : d + 1;
      reassociation.push_back(d == keyDim
                                  ? ReassociationIndices{first, first + 1}
                                  : ReassociationIndices{first});
    }
    return tensor::ExpandShapeOp::create(
               b, loc, RankedTensorType::get(shape, type.getElementType()),
               slice, reassociation, sizes)
        .getResult();
  }

  /// The keys of x [..., S] from `from` on, along `keyDim`.
  Value keysFrom(Value x, unsigned keyDim, Value from) {
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    Value count = getValueOrCreateConstantIndexOp(b, loc, sizes[keyDim]);
    offsets[keyDim] = from;
    sizes[keyDim] = arith::SubIOp::create(b, loc, count, from).getResult();
    return tensor::ExtractSliceOp::create(b, loc, x, offsets, sizes, strides);
  }

  /// x [B, n, T, S] reduced over s by `combine` from `identity`: over each
  /// group of keys, then over the groups, then the keys left over. On a GPU
  /// every row gets a thread per group for its partial results, where one
  /// warp walked the whole row. The groups interleave (keyGroups), so that
  /// a warp's threads read neighbouring keys at each step of their walks,
  /// one memory transaction where contiguous groups took one per thread.
  Value groupedRowReduce(Value x, const KeyGroups &g, float identity,
                         GenericBody combine) {
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    auto filled = [&](ArrayRef<OpFoldResult> shape) {
      return fillWith(b, loc, createEmpty(b, loc, shape, f32), identity);
    };
    SmallVector<IteratorType> fiveLoops(4, IteratorType::parallel);
    fiveLoops.push_back(IteratorType::reduction);
    SmallVector<IteratorType> fourLoops(3, IteratorType::parallel);
    fourLoops.push_back(IteratorType::reduction);
    Value partial = buildGeneric(
        b, loc, ValueRange{keyGroups(x, 3, g, /*interleaved=*/true)},
        filled({sizes[0], sizes[1], sizes[2], g.count}),
        {map(5, {0, 1, 2, 4, 3}), map(5, {0, 1, 2, 3})}, fiveLoops, combine);
    SmallVector<AffineMap> rowMaps = {map(4, {0, 1, 2, 3}), map(4, {0, 1, 2})};
    Value total = buildGeneric(b, loc, ValueRange{partial},
                               filled({sizes[0], sizes[1], sizes[2]}), rowMaps,
                               fourLoops, combine);
    return buildGeneric(b, loc, ValueRange{keysFrom(x, 3, g.whole)}, total,
                        rowMaps, fourLoops, combine);
  }

  /// softmax over s of x [B, n, T, S] with its maximum and sum taken in
  /// groups of keys (groupedRowReduce): a decode step's rows are as long
  /// as the context and few (one per head and sequence).
  Value groupedSoftmax(Value x, const KeyGroups &g) {
    Value maximum = groupedRowReduce(
        x, g, -std::numeric_limits<float>::infinity(),
        [](OpBuilder &nb, Location nl, ValueRange args) {
          return arith::MaximumFOp::create(nb, nl, args[1], args[0])
              .getResult();
        });
    SmallVector<AffineMap> withRow = {b.getMultiDimIdentityMap(4),
                                      map(4, {0, 1, 2})};
    Value exponentials = buildElementwise(
        b, loc, ValueRange{x, maximum}, createEmptyLike(b, loc, x, f32),
        withRow, [](OpBuilder &nb, Location nl, ValueRange args) {
          Value shifted = arith::SubFOp::create(nb, nl, args[0], args[1]);
          return math::ExpOp::create(nb, nl, shifted).getResult();
        });
    Value sum = groupedRowReduce(
        exponentials, g, 0.0f, [](OpBuilder &nb, Location nl, ValueRange args) {
          return arith::AddFOp::create(nb, nl, args[1], args[0]).getResult();
        });
    return buildElementwise(
        b, loc, ValueRange{exponentials, sum}, createEmptyLike(b, loc, x, f32),
        withRow, [](OpBuilder &nb, Location nl, ValueRange args) {
          return arith::DivFOp::create(nb, nl, args[0], args[1]).getResult();
        });
  }

  /// x [B, S, r], one head shared by all, as `heads` heads [B, S, heads, r].
  Value broadcastHeads(Value x, int64_t heads) {
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    sizes.insert(sizes.begin() + 2, b.getIndexAttr(heads));
    return buildElementwise(
        b, loc, x, createEmpty(b, loc, sizes, f32), map(4, {0, 1, 3}),
        [](OpBuilder &, Location, ValueRange args) { return args[0]; });
  }

  /// Rows [offset, offset + size) of every head of a weight [heads * R, C]
  /// (kv_b_proj's key or value part): [heads, size, C], element type kept.
  Value headRows(Value weight, int64_t heads, int64_t offset, int64_t size) {
    auto type = cast<RankedTensorType>(weight.getType());
    int64_t perHead = type.getDimSize(0) / heads;
    int64_t columns = type.getDimSize(1);
    Type element = type.getElementType();
    Value expanded = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({heads, perHead, columns}, element),
        weight, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
    SmallVector<OpFoldResult> offsets = {
        b.getIndexAttr(0), b.getIndexAttr(offset), b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {
        b.getIndexAttr(heads), b.getIndexAttr(size), b.getIndexAttr(columns)};
    SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({heads, size, columns}, element),
        expanded, offsets, sizes, strides);
  }

  /// init + sum over loop `reduced` of 5 loops of lhs * rhs (operands
  /// widened to f32), `maps` of lhs, rhs and the rank-4 result.
  Value contract5(Value lhs, Value rhs, Value init,
                  std::array<AffineMap, 3> maps, unsigned reduced = 4) {
    SmallVector<IteratorType> iterators(5, IteratorType::parallel);
    iterators[reduced] = IteratorType::reduction;
    return buildGeneric(
        b, loc, ValueRange{lhs, rhs}, init, maps, iterators,
        [](OpBuilder &nb, Location nl, ValueRange args) {
          auto widened = [&](Value v) -> Value {
            Type f32 = nb.getF32Type();
            return v.getType() == f32
                       ? v
                       : arith::ExtFOp::create(nb, nl, f32, v).getResult();
          };
          Value product =
              arith::MulFOp::create(nb, nl, widened(args[0]), widened(args[1]));
          return arith::AddFOp::create(nb, nl, args[2], product).getResult();
        });
  }

  /// sum_s p[b, n, t, s] latents[b, s, r] over the keys of the whole groups
  /// `g`, as [B, T, n, r]: a partial sum per group of
  /// keys (loops (b, t, n, g, r, i): a latent channel r innermost among the
  /// parallel loops, the group's keys i the reduction), then the sum over
  /// the groups (loops (b, t, n, r, g), the partial sums stored with g
  /// contiguous for it).
  Value groupedLatentSum(Value probabilities, Value latents,
                         const KeyGroups &g) {
    SmallVector<OpFoldResult> latSizes = tensor::getMixedSizes(b, loc, latents);
    SmallVector<OpFoldResult> pSizes =
        tensor::getMixedSizes(b, loc, probabilities);
    OpFoldResult batch = latSizes[0], rank = latSizes[2];
    OpFoldResult heads = pSizes[1], tokens = pSizes[2];
    // [B, n, T, G, N] and [B, G, N, r].
    Value pGroups = keyGroups(probabilities, 3, g);
    Value latGroups = keyGroups(latents, 1, g);
    auto mulAdd = [](OpBuilder &nb, Location nl, ValueRange args) {
      Value product = arith::MulFOp::create(nb, nl, args[0], args[1]);
      return arith::AddFOp::create(nb, nl, args[2], product).getResult();
    };
    SmallVector<IteratorType> iterators(5, IteratorType::parallel);
    iterators.push_back(IteratorType::reduction);
    // Loops (b, t, n, g, r, i); partial[b, t, n, r, g].
    Value partial = buildGeneric(
        b, loc, ValueRange{pGroups, latGroups},
        createZeros(b, loc, {batch, tokens, heads, rank, g.count}, f32),
        {map(6, {0, 2, 1, 3, 5}), map(6, {0, 3, 5, 4}),
         map(6, {0, 1, 2, 4, 3})},
        iterators, mulAdd);
    SmallVector<IteratorType> sumIterators(4, IteratorType::parallel);
    sumIterators.push_back(IteratorType::reduction);
    return buildGeneric(
        b, loc, ValueRange{partial},
        createZeros(b, loc, {batch, tokens, heads, rank}, f32),
        {map(5, {0, 1, 2, 3, 4}), map(5, {0, 1, 2, 3})}, sumIterators,
        [](OpBuilder &nb, Location nl, ValueRange args) {
          return arith::AddFOp::create(nb, nl, args[1], args[0]).getResult();
        });
  }

  /// The absorbed attention of gdn.mla: queries q_nope [B, T, n, nope] and
  /// q_rope [B, T, n, rope] against the latents [B, S, r] and RoPE keys
  /// [B, S, rope] themselves, with kv_b_proj's key part w_uk [n, nope, r]
  /// applied to the queries and its value part w_uv [n, v, r] to the
  /// attended latents. Returns [B, T, n, v]. With `keySplit` > 0 the
  /// attended latents are summed over whole groups of that many keys
  /// first (groupedLatentSum), then over the keys left.
  Value absorbedAttention(Value qNope, Value qRope, Value latents, Value kRopes,
                          Value wUk, Value wUv, float scale, Value offset,
                          int64_t keySplit = 0) {
    auto dims = [&](Value x) { return tensor::getMixedSizes(b, loc, x); };
    OpFoldResult batch = dims(qNope)[0], tokens = dims(qNope)[1];
    OpFoldResult keys = dims(latents)[1];
    auto wUkType = cast<RankedTensorType>(wUk.getType());
    auto wUvType = cast<RankedTensorType>(wUv.getType());
    OpFoldResult heads = b.getIndexAttr(wUkType.getDimSize(0));
    OpFoldResult rank = b.getIndexAttr(wUkType.getDimSize(2));
    OpFoldResult vDim = b.getIndexAttr(wUvType.getDimSize(1));
    // Loops (b, t, n, r, d): q_latent[b, t, n, r].
    Value qLatent = contract5(
        qNope, wUk, createZeros(b, loc, {batch, tokens, heads, rank}, f32),
        {map(5, {0, 1, 2, 4}), map(5, {2, 4, 3}), map(5, {0, 1, 2, 3})});
    // Loops (b, n, t, s, r): scores[b, n, t, s], latent then RoPE part.
    Value scores = contract5(
        qLatent, latents,
        createZeros(b, loc, {batch, heads, tokens, keys}, f32),
        {map(5, {0, 2, 1, 4}), map(5, {0, 3, 4}), map(5, {0, 1, 2, 3})});
    scores = contract5(
        qRope, kRopes, scores,
        {map(5, {0, 2, 1, 4}), map(5, {0, 3, 4}), map(5, {0, 1, 2, 3})});
    std::optional<KeyGroups> groups;
    if (keySplit > 0)
      groups = splitKeys(keys, keySplit);
    Value probabilities =
        causalSoftmax(scores, scale, offset, groups ? &*groups : nullptr);
    Value attendedInit = createZeros(b, loc, {batch, tokens, heads, rank}, f32);
    Value restP = probabilities, restLatents = latents;
    if (groups) {
      attendedInit = groupedLatentSum(probabilities, latents, *groups);
      restP = keysFrom(probabilities, 3, groups->whole);
      restLatents = keysFrom(latents, 1, groups->whole);
    }
    // Loops (b, t, n, s, r): the attended latents (of the keys no group
    // took), the reduction over the keys outside the loop over a latent's
    // contiguous channels.
    Value attended = contract5(
        restP, restLatents, attendedInit,
        {map(5, {0, 2, 1, 3}), map(5, {0, 3, 4}), map(5, {0, 1, 2, 4})},
        /*reduced=*/3);
    // Loops (b, t, n, e, r): through the value part.
    return contract5(
        attended, wUv, createZeros(b, loc, {batch, tokens, heads, vDim}, f32),
        {map(5, {0, 1, 2, 4}), map(5, {2, 3, 4}), map(5, {0, 1, 2, 3})});
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

/// The number of cached tokens P before the T new ones of `x` [B, T, ...]:
/// 0 without a cache, the cache's rows, or, for a cache written in place
/// (rows for the new tokens included), its rows less T.
inline Value cachedRows(OpBuilder &b, Location loc, Value cache, Value x,
                        bool inPlace) {
  if (!cache)
    return arith::ConstantIndexOp::create(b, loc, 0);
  Value rows = tensor::DimOp::create(b, loc, cache, 1);
  if (!inPlace)
    return rows;
  return arith::SubIOp::create(b, loc, rows,
                               tensor::DimOp::create(b, loc, x, 1));
}

/// linalg::AggregatedOpInterface's entry point for op `OpTy`, whose
/// `Derived::decompose` returns the values that replace the op's results.
template <typename Derived, typename OpTy>
struct LayerDecomposition
    : linalg::AggregatedOpInterface::ExternalModel<Derived, OpTy> {
  FailureOr<SmallVector<Value>> decomposeOperation(Operation *op,
                                                   OpBuilder &b) const {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(op);
    return Derived::decompose(cast<OpTy>(op), b);
  }
};

} // namespace mlir::gdn

#endif // GDN_DIALECT_GDN_TRANSFORMS_LAYERBUILDER_H
