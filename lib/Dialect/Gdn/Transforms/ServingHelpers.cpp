//===- ServingHelpers.cpp - builders shared by the serving forms ----------===//
//
// Slot indices, token ranges, gathers and scatters of pools of states, and
// the gates of a Qwen-style layer: run-time indices are clamped or skipped
// so that no access leaves an operand, whatever the caller passes.
//
//===----------------------------------------------------------------------===//

#include "ServingForms.h"
#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::serving;

Value serving::indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// `type` with element type f32.
RankedTensorType serving::inF32(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(),
                               Float32Type::get(type.getContext()));
}

bool serving::storedInBF16(Type type) {
  return cast<RankedTensorType>(type).getElementType().isBF16();
}

/// Token `t` of a [B, T, ...] tensor as a [B, ...] tensor.
Value serving::tokenOf(OpBuilder &b, Location loc, Value x, Value t) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  offsets[1] = t;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
  sizes[1] = b.getIndexAttr(1);
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  SmallVector<int64_t> shape(type.getShape());
  shape.erase(shape.begin() + 1);
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), x, offsets,
      sizes, strides);
}

/// Inserts the [B, ...] tensor `part` as token `t` of the [B, T, ...]
/// tensor `into`.
Value serving::insertToken(OpBuilder &b, Location loc, Value part, Value into,
                           Value t) {
  auto type = cast<RankedTensorType>(into.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  offsets[1] = t;
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, into);
  sizes[1] = b.getIndexAttr(1);
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, part, into, offsets, sizes,
                                       strides);
}

/// Entry `i` of a rank-1 i32 tensor, as an index (sign-extended).
Value serving::readIndex(OpBuilder &b, Location loc, Value indices, Value i) {
  Value entry = tensor::ExtractOp::create(b, loc, indices, ValueRange{i});
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), entry);
}

/// Whether `slot` names one of the pool's `slots` rows: -1 (an empty batch
/// entry) and anything else outside [0, slots) do not.
Value serving::namesSlot(OpBuilder &b, Location loc, Value slot, Value slots) {
  Value notNegative = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::sge, slot, indexConstant(b, loc, 0));
  Value below =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, slot, slots);
  return arith::AndIOp::create(b, loc, notNegative, below);
}

/// Offsets, sizes and strides of row `row` of a rank-4 [rows, Hv, K, V]
/// tensor of type `type`.
StateRow serving::stateRow(OpBuilder &b, RankedTensorType type,
                           OpFoldResult row) {
  StateRow r;
  r.offsets = {row, b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(0)};
  r.sizes = {b.getIndexAttr(1)};
  for (int64_t d = 1; d < 4; ++d)
    r.sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
  r.strides.assign(4, b.getIndexAttr(1));
  return r;
}

namespace {
/// Which side of a copy between a pool and per-entry states the slot
/// indices address.
enum class SlotSide { Source, Destination };
} // namespace

/// `into` with rows copied from `from` ([rows, Hv, K, V] both) for entries
/// n < `entries` whose index `indices[n]` names one of `slots`: row
/// indices[n] to row n (SlotSide::Source) or row n to row indices[n]
/// (SlotSide::Destination). With SlotSide::Source, the rows of the other
/// entries are zeroed, so that `into` may start uninitialized.
static Value copyRowsBySlot(OpBuilder &b, Location loc, Value from, Value into,
                            Value indices, Value entries, Value slots,
                            SlotSide side) {
  auto fromType = cast<RankedTensorType>(from.getType());
  auto intoType = cast<RankedTensorType>(into.getType());
  auto rowType = RankedTensorType::get(
      {1, fromType.getDimSize(1), fromType.getDimSize(2),
       fromType.getDimSize(3)},
      fromType.getElementType());
  auto loop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), entries, indexConstant(b, loc, 1),
      ValueRange{into},
      [&](OpBuilder &lb, Location ll, Value n, ValueRange carried) {
        Value slot = serving::readIndex(lb, ll, indices, n);
        Value source = side == SlotSide::Source ? slot : n;
        Value destination = side == SlotSide::Source ? n : slot;
        auto copy = scf::IfOp::create(
            lb, ll, serving::namesSlot(lb, ll, slot, slots),
            [&](OpBuilder &ib, Location il) {
              StateRow at = serving::stateRow(ib, fromType, source);
              Value row = tensor::ExtractSliceOp::create(
                  ib, il, rowType, from, at.offsets, at.sizes, at.strides);
              StateRow to = serving::stateRow(ib, intoType, destination);
              Value copied = tensor::InsertSliceOp::create(
                  ib, il, row, carried[0], to.offsets, to.sizes, to.strides);
              scf::YieldOp::create(ib, il, copied);
            },
            [&](OpBuilder &ib, Location il) {
              if (side == SlotSide::Destination) {
                scf::YieldOp::create(ib, il, carried[0]);
                return;
              }
              StateRow to = serving::stateRow(ib, intoType, destination);
              Value zeros = createZeros(
                  ib, il, getAsIndexOpFoldResult(ib.getContext(),
                                                 rowType.getShape()),
                  intoType.getElementType());
              scf::YieldOp::create(
                  ib, il,
                  tensor::InsertSliceOp::create(ib, il, zeros, carried[0],
                                                to.offsets, to.sizes,
                                                to.strides)
                      .getResult());
            });
        scf::YieldOp::create(lb, ll, copy.getResult(0));
      });
  return loop.getResult(0);
}

/// The states [N, Hv, K, V] (N = the entries of `readIndices`) that the
/// sequences start from: slot `readIndices[n]` of `pool`, or zeros.
Value serving::gatherStates(OpBuilder &b, Location loc, Value pool,
                            Value readIndices) {
  auto poolType = cast<RankedTensorType>(pool.getType());
  SmallVector<OpFoldResult> sizes = {
      tensor::getMixedSize(b, loc, readIndices, 0)};
  for (int64_t d = 1; d < 4; ++d)
    sizes.push_back(b.getIndexAttr(poolType.getDimSize(d)));
  // Each entry's row is written once, by its slot's copy or with zeros.
  Value gathered = createEmpty(b, loc, sizes, poolType.getElementType());
  return copyRowsBySlot(b, loc, pool, gathered, readIndices,
                        tensor::DimOp::create(b, loc, readIndices, 0),
                        tensor::DimOp::create(b, loc, pool, 0),
                        SlotSide::Source);
}

/// `pool` with row n of `states` [N, Hv, K, V] written to slot
/// `writeIndices[n]`, for the indices that name a slot.
Value serving::scatterStates(OpBuilder &b, Location loc, Value states,
                             Value pool, Value writeIndices) {
  Value entries = arith::MinSIOp::create(
      b, loc, tensor::DimOp::create(b, loc, writeIndices, 0),
      tensor::DimOp::create(b, loc, states, 0));
  return copyRowsBySlot(b, loc, states, pool, writeIndices, entries,
                        tensor::DimOp::create(b, loc, pool, 0),
                        SlotSide::Destination);
}

/// The type [N, Hv, K, V] of one state per pool entry.
RankedTensorType serving::perSequenceStates(Value pool, Value indices) {
  auto poolType = cast<RankedTensorType>(pool.getType());
  auto indicesType = cast<RankedTensorType>(indices.getType());
  return RankedTensorType::get({indicesType.getDimSize(0),
                                poolType.getDimSize(1), poolType.getDimSize(2),
                                poolType.getDimSize(3)},
                               poolType.getElementType());
}


/// The results of `op` (o, the final state, the checkpoints if any).
SmallVector<Value> serving::resultsOf(DeltaRuleOp op) {
  SmallVector<Value> results = {op.getO(), op.getFinalState()};
  if (op.getCheckpoints())
    results.push_back(op.getCheckpoints());
  return results;
}

/// Offsets, sizes and strides of tokens [start, start + length) of a packed
/// [1, total, ...] tensor of type `type`.
TokenRange serving::tokenRange(OpBuilder &b, RankedTensorType type, Value start,
                               Value length) {
  TokenRange r;
  r.offsets.assign(type.getRank(), b.getIndexAttr(0));
  r.offsets[1] = start;
  r.sizes = {b.getIndexAttr(1), length};
  for (int64_t d = 2; d < type.getRank(); ++d)
    r.sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
  r.strides.assign(type.getRank(), b.getIndexAttr(1));
  return r;
}

/// The type of one sequence's slice of a packed [1, total, ...] tensor.
RankedTensorType serving::sequenceType(Value packed, Type elementType) {
  auto type = cast<RankedTensorType>(packed.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = 1;
  shape[1] = ShapedType::kDynamic;
  return RankedTensorType::get(
      shape, elementType ? elementType : type.getElementType());
}

/// The rows [offset, offset + count) of `into` [R, ...] replaced by the
/// first `count` of `rows` [1, C, ...], clamped to the rows `into` has.
Value serving::insertRows(OpBuilder &b, Location loc, Value rows, Value into,
                          Value offset) {
  auto rowsType = cast<RankedTensorType>(rows.getType());
  auto intoType = cast<RankedTensorType>(into.getType());
  Value available = arith::MaxSIOp::create(
      b, loc,
      arith::SubIOp::create(b, loc, tensor::DimOp::create(b, loc, into, 0),
                            offset),
      indexConstant(b, loc, 0));
  Value count = arith::MinSIOp::create(
      b, loc, tensor::DimOp::create(b, loc, rows, 1), available);
  SmallVector<OpFoldResult> from = {b.getIndexAttr(0), b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), count};
  SmallVector<OpFoldResult> to = {offset};
  SmallVector<OpFoldResult> toSizes = {count};
  for (int64_t d = 2; d < rowsType.getRank(); ++d) {
    from.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(rowsType.getDimSize(d)));
    to.push_back(b.getIndexAttr(0));
    toSizes.push_back(b.getIndexAttr(rowsType.getDimSize(d)));
  }
  SmallVector<OpFoldResult> unit(rowsType.getRank(), b.getIndexAttr(1));
  SmallVector<int64_t> shape(intoType.getShape());
  shape[0] = ShapedType::kDynamic;
  Value part = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, rowsType.getElementType()), rows,
      from, sizes, unit);
  return tensor::InsertSliceOp::create(
      b, loc, part, into, to, toSizes,
      SmallVector<OpFoldResult>(intoType.getRank(), b.getIndexAttr(1)));
}

/// Offsets, sizes and strides of tokens [start, start + length) of a
/// [B, T, ...] tensor of type `type`.
TokenRange serving::batchTokenRange(OpBuilder &b, Location loc, Value x,
                                    Value start, OpFoldResult length) {
  auto type = cast<RankedTensorType>(x.getType());
  TokenRange r;
  r.offsets.assign(type.getRank(), b.getIndexAttr(0));
  r.offsets[1] = start;
  r.sizes = tensor::getMixedSizes(b, loc, x);
  r.sizes[1] = length;
  r.strides.assign(type.getRank(), b.getIndexAttr(1));
  return r;
}

/// g = -exp(A_log) * softplus(a + dt_bias) (softplus(x) = x above 20, as
/// PyTorch's) and beta = sigmoid(b), in f32, for raw a and b of shape
/// [..., Hv] and A_log, dt_bias of shape [Hv].
std::pair<Value, Value> serving::computeGates(OpBuilder &b, Location loc,
                                              Value a, Value rawBeta,
                                              Value aLog, Value dtBias) {
  Type f32 = b.getF32Type();
  int64_t rank = cast<RankedTensorType>(a.getType()).getRank();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  AffineMap head = AffineMap::get(rank, 0, b.getAffineDimExpr(rank - 1),
                                  b.getContext());
  auto constant = [&](OpBuilder &nb, Location nl, float value) {
    return arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(value));
  };
  Value g = buildElementwise(
      b, loc, ValueRange{a, aLog, dtBias}, createEmptyLike(b, loc, a, f32),
      {identity, head, head}, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value x = arith::AddFOp::create(
            nb, nl, convertFloat(nb, nl, args[0], f32), args[2]);
        Value soft = math::Log1pOp::create(nb, nl,
                                           math::ExpOp::create(nb, nl, x));
        Value large = arith::CmpFOp::create(
            nb, nl, arith::CmpFPredicate::OGT, x, constant(nb, nl, 20.0f));
        Value softplus = arith::SelectOp::create(nb, nl, large, x, soft);
        Value rate = math::ExpOp::create(nb, nl, args[1]);
        return arith::NegFOp::create(
                   nb, nl, arith::MulFOp::create(nb, nl, rate, softplus))
            .getResult();
      });
  Value beta = buildElementwise(
      b, loc, ValueRange{rawBeta}, createEmptyLike(b, loc, rawBeta, f32),
      {identity}, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value z = convertFloat(nb, nl, args[0], f32);
        Value e = math::ExpOp::create(nb, nl, arith::NegFOp::create(nb, nl, z));
        return arith::DivFOp::create(
                   nb, nl, constant(nb, nl, 1.0f),
                   arith::AddFOp::create(nb, nl, constant(nb, nl, 1.0f), e))
            .getResult();
      });
  return {g, beta};
}
