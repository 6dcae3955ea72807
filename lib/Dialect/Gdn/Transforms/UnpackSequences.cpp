//===- UnpackSequences.cpp - packed sequences and state pools, unpacked ---===//
//
// The serving forms of the delta-rule ops (packed sequences with
// cu_seqlens, a pool of states addressed by slot indices) become the dense
// ops the chunked and per-head lowerings take, with loops around them that
// slice, gather and scatter. Run-time indices are clamped or skipped so that
// no access leaves an operand, whatever the caller passes.
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

namespace mlir::gdn {
#define GEN_PASS_DEF_GDNUNPACKSEQUENCESPASS
#include "gdn/Dialect/Gdn/Transforms/Passes.h.inc"
} // namespace mlir::gdn

using namespace mlir;
using namespace mlir::gdn;

namespace {

Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// `type` with element type f32.
RankedTensorType inF32(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(),
                               Float32Type::get(type.getContext()));
}

bool storedInBF16(Type type) {
  return cast<RankedTensorType>(type).getElementType().isBF16();
}

/// Token `t` of a [B, T, ...] tensor as a [B, ...] tensor.
Value tokenOf(OpBuilder &b, Location loc, Value x, Value t) {
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
Value insertToken(OpBuilder &b, Location loc, Value part, Value into,
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
Value readIndex(OpBuilder &b, Location loc, Value indices, Value i) {
  Value entry = tensor::ExtractOp::create(b, loc, indices, ValueRange{i});
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), entry);
}

/// Whether `slot` names one of the pool's `slots` rows: -1 (an empty batch
/// entry) and anything else outside [0, slots) do not.
Value namesSlot(OpBuilder &b, Location loc, Value slot, Value slots) {
  Value notNegative = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::sge, slot, indexConstant(b, loc, 0));
  Value below =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, slot, slots);
  return arith::AndIOp::create(b, loc, notNegative, below);
}

/// Offsets, sizes and strides of row `row` of a rank-4 [rows, Hv, K, V]
/// tensor of type `type`.
struct StateRow {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};
StateRow stateRow(OpBuilder &b, RankedTensorType type, OpFoldResult row) {
  StateRow r;
  r.offsets = {row, b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(0)};
  r.sizes = {b.getIndexAttr(1)};
  for (int64_t d = 1; d < 4; ++d)
    r.sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
  r.strides.assign(4, b.getIndexAttr(1));
  return r;
}

/// The states [N, Hv, K, V] (N = the entries of `readIndices`) that the
/// sequences start from: slot `readIndices[n]` of `pool`, or zeros.
Value gatherStates(OpBuilder &b, Location loc, Value pool, Value readIndices) {
  auto poolType = cast<RankedTensorType>(pool.getType());
  SmallVector<OpFoldResult> sizes = {
      tensor::getMixedSize(b, loc, readIndices, 0)};
  for (int64_t d = 1; d < 4; ++d)
    sizes.push_back(b.getIndexAttr(poolType.getDimSize(d)));
  Value gathered = createZeros(b, loc, sizes, poolType.getElementType());
  Value entries = tensor::DimOp::create(b, loc, readIndices, 0);
  Value slots = tensor::DimOp::create(b, loc, pool, 0);
  auto loop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), entries, indexConstant(b, loc, 1),
      ValueRange{gathered},
      [&](OpBuilder &lb, Location ll, Value n, ValueRange carried) {
        Value slot = readIndex(lb, ll, readIndices, n);
        auto copy = scf::IfOp::create(
            lb, ll, namesSlot(lb, ll, slot, slots),
            [&](OpBuilder &ib, Location il) {
              StateRow from = stateRow(ib, poolType, slot);
              auto rowType = RankedTensorType::get(
                  {1, poolType.getDimSize(1), poolType.getDimSize(2),
                   poolType.getDimSize(3)},
                  poolType.getElementType());
              Value row = tensor::ExtractSliceOp::create(
                  ib, il, rowType, pool, from.offsets, from.sizes,
                  from.strides);
              StateRow to = stateRow(ib, poolType, n);
              Value inserted = tensor::InsertSliceOp::create(
                  ib, il, row, carried[0], to.offsets, to.sizes, to.strides);
              scf::YieldOp::create(ib, il, inserted);
            },
            [&](OpBuilder &ib, Location il) {
              scf::YieldOp::create(ib, il, carried[0]);
            });
        scf::YieldOp::create(lb, ll, copy.getResult(0));
      });
  return loop.getResult(0);
}

/// `pool` with row n of `states` [N, Hv, K, V] written to slot
/// `writeIndices[n]`, for the indices that name a slot.
Value scatterStates(OpBuilder &b, Location loc, Value states, Value pool,
                    Value writeIndices) {
  auto poolType = cast<RankedTensorType>(pool.getType());
  auto statesType = cast<RankedTensorType>(states.getType());
  Value entries = arith::MinSIOp::create(
      b, loc, tensor::DimOp::create(b, loc, writeIndices, 0),
      tensor::DimOp::create(b, loc, states, 0));
  Value slots = tensor::DimOp::create(b, loc, pool, 0);
  auto loop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), entries, indexConstant(b, loc, 1),
      ValueRange{pool},
      [&](OpBuilder &lb, Location ll, Value n, ValueRange carried) {
        Value slot = readIndex(lb, ll, writeIndices, n);
        auto write = scf::IfOp::create(
            lb, ll, namesSlot(lb, ll, slot, slots),
            [&](OpBuilder &ib, Location il) {
              StateRow from = stateRow(ib, statesType, n);
              auto rowType = RankedTensorType::get(
                  {1, statesType.getDimSize(1), statesType.getDimSize(2),
                   statesType.getDimSize(3)},
                  statesType.getElementType());
              Value row = tensor::ExtractSliceOp::create(
                  ib, il, rowType, states, from.offsets, from.sizes,
                  from.strides);
              StateRow to = stateRow(ib, poolType, slot);
              Value written = tensor::InsertSliceOp::create(
                  ib, il, row, carried[0], to.offsets, to.sizes, to.strides);
              scf::YieldOp::create(ib, il, written);
            },
            [&](OpBuilder &ib, Location il) {
              scf::YieldOp::create(ib, il, carried[0]);
            });
        scf::YieldOp::create(lb, ll, write.getResult(0));
      });
  return loop.getResult(0);
}

/// The type [N, Hv, K, V] of one state per pool entry.
RankedTensorType perSequenceStates(Value pool, Value indices) {
  auto poolType = cast<RankedTensorType>(pool.getType());
  auto indicesType = cast<RankedTensorType>(indices.getType());
  return RankedTensorType::get({indicesType.getDimSize(0),
                                poolType.getDimSize(1), poolType.getDimSize(2),
                                poolType.getDimSize(3)},
                               poolType.getElementType());
}

/// The operands, attributes and result types of a gdn.delta_rule, to build
/// a variant of it: each pattern changes what it rewrites and passes the
/// rest on.
struct PrefillParts {
  Value q, k, v, g, beta, initial, cuSeqlens, readIndices, writeIndices,
      aLog, dtBias;
  FloatAttr scale;
  IntegerAttr checkpointEvery;
  Type oType, stateType, checkpointsType;

  static PrefillParts of(DeltaRuleOp op) {
    return {op.getQ(),
            op.getK(),
            op.getV(),
            op.getG(),
            op.getBeta(),
            op.getInitialState(),
            op.getCuSeqlens(),
            op.getStateIndices(),
            op.getWriteIndices(),
            op.getALog(),
            op.getDtBias(),
            op.getScaleAttr(),
            op.getCheckpointEveryAttr(),
            op.getO().getType(),
            op.getFinalState().getType(),
            op.getCheckpoints() ? op.getCheckpoints().getType() : Type()};
  }

  DeltaRuleOp build(OpBuilder &b, Location loc) const {
    SmallVector<Type> types = {oType, stateType};
    if (checkpointsType)
      types.push_back(checkpointsType);
    auto op = DeltaRuleOp::create(b, loc, types, q, k, v, g, beta, initial,
                                  cuSeqlens, readIndices, writeIndices, aLog,
                                  dtBias, scale, ScanStrategyAttr(),
                                  checkpointsType ? checkpointEvery
                                                  : IntegerAttr());
    return op;
  }
};

/// The results of `op` (o, the final state, the checkpoints if any).
SmallVector<Value> resultsOf(DeltaRuleOp op) {
  SmallVector<Value> results = {op.getO(), op.getFinalState()};
  if (op.getCheckpoints())
    results.push_back(op.getCheckpoints());
  return results;
}

/// gdn.delta_rule with a pool: gather, the op on per-sequence states (still
/// packed, if it was), scatter.
struct UnpackPrefillPool : OpRewritePattern<DeltaRuleOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleOp op,
                                PatternRewriter &rewriter) const override {
    Value readIndices = op.getStateIndices();
    if (!readIndices)
      return rewriter.notifyMatchFailure(op, "no state pool");
    Location loc = op.getLoc();
    Value pool = op.getInitialState();
    Value writeIndices =
        op.getWriteIndices() ? op.getWriteIndices() : readIndices;
    PrefillParts parts = PrefillParts::of(op);
    parts.initial = gatherStates(rewriter, loc, pool, readIndices);
    parts.readIndices = parts.writeIndices = Value();
    parts.stateType = perSequenceStates(pool, readIndices);
    DeltaRuleOp core = parts.build(rewriter, loc);
    SmallVector<Value> results = resultsOf(core);
    results[1] = scatterStates(rewriter, loc, core.getFinalState(), pool,
                               writeIndices);
    rewriter.replaceOp(
        op, castToTypes(rewriter, loc, results, op->getResultTypes()));
    return success();
  }
};

/// gdn.delta_rule_step with a pool: gather, the dense step, scatter.
struct UnpackStepPool : OpRewritePattern<DeltaRuleStepOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleStepOp op,
                                PatternRewriter &rewriter) const override {
    Value readIndices = op.getStateIndices();
    if (!readIndices)
      return rewriter.notifyMatchFailure(op, "no state pool");
    Location loc = op.getLoc();
    Value pool = op.getState();
    Value writeIndices =
        op.getWriteIndices() ? op.getWriteIndices() : readIndices;
    Value initial = gatherStates(rewriter, loc, pool, readIndices);
    auto core = DeltaRuleStepOp::create(
        rewriter, loc, TypeRange{op.getO().getType(), initial.getType()},
        op.getQ(), op.getK(), op.getV(), op.getG(), op.getBeta(), initial,
        /*state_indices=*/Value(), /*write_indices=*/Value(), op.getALog(),
        op.getDtBias(), op.getScaleAttr());
    Value updated =
        scatterStates(rewriter, loc, core.getNewState(), pool, writeIndices);
    rewriter.replaceOp(op, castToTypes(rewriter, loc, {core.getO(), updated},
                                       op->getResultTypes()));
    return success();
  }
};

/// Offsets, sizes and strides of tokens [start, start + length) of a packed
/// [1, total, ...] tensor of type `type`.
struct TokenRange {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};
TokenRange tokenRange(OpBuilder &b, RankedTensorType type, Value start,
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
RankedTensorType sequenceType(Value packed, Type elementType = {}) {
  auto type = cast<RankedTensorType>(packed.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = 1;
  shape[1] = ShapedType::kDynamic;
  return RankedTensorType::get(
      shape, elementType ? elementType : type.getElementType());
}

/// The rows [offset, offset + count) of `into` [R, ...] replaced by the
/// first `count` of `rows` [1, C, ...], clamped to the rows `into` has.
Value insertRows(OpBuilder &b, Location loc, Value rows, Value into,
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

/// gdn.delta_rule with cu_seqlens and per-sequence f32 states: a loop over
/// the sequences, each a dense op on its slice of the tokens (with its own
/// checkpoints, inserted after the earlier sequences').
struct UnpackPackedSequences : OpRewritePattern<DeltaRuleOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleOp op,
                                PatternRewriter &rewriter) const override {
    Value offsets = op.getCuSeqlens();
    if (!offsets || op.getStateIndices() ||
        storedInBF16(op.getFinalState().getType()))
      return rewriter.notifyMatchFailure(
          op, "not packed, or a pool to gather or bf16 states to widen first");
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Type f32 = b.getF32Type();
    auto stateType = op.getFinalState().getType();
    Type oElement = op.getO().getType().getElementType();
    Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);

    // N = max(entries - 1, 0): an empty offsets tensor has no sequence.
    Value entries = tensor::DimOp::create(b, loc, offsets, 0);
    Value count = arith::MaxSIOp::create(
        b, loc, arith::SubIOp::create(b, loc, entries, one), zero);
    Value total = tensor::DimOp::create(b, loc, op.getV(), 1);
    // The final states start as the initial ones (zeros without them), so
    // that a sequence the loop does not reach keeps its state.
    Value finals = op.getInitialState();
    if (finals) {
      Value rows = tensor::DimOp::create(b, loc, finals, 0);
      count = arith::MinSIOp::create(b, loc, count, rows);
    } else {
      SmallVector<OpFoldResult> stateSizes = {count};
      for (int64_t d = 1; d < 4; ++d)
        stateSizes.push_back(b.getIndexAttr(stateType.getDimSize(d)));
      finals = createZeros(b, loc, stateSizes, f32);
    }
    Value out = createZeros(b, loc, tensor::getMixedSizes(b, loc, op.getV()),
                            oElement);
    SmallVector<Value> carriedInit = {out, finals};
    Value checkpoints = op.getCheckpoints();
    if (checkpoints) {
      // [R, Hv, K, V]: R = floor(total / N) rows suffice for any lengths.
      auto type = cast<RankedTensorType>(checkpoints.getType());
      SmallVector<OpFoldResult> sizes = {
          ShapedType::isDynamic(type.getDimSize(0))
              ? OpFoldResult(arith::DivUIOp::create(
                    b, loc, total,
                    indexConstant(b, loc, *op.getCheckpointEvery())))
              : OpFoldResult(b.getIndexAttr(type.getDimSize(0)))};
      for (int64_t d = 1; d < 4; ++d)
        sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
      carriedInit.push_back(createZeros(b, loc, sizes, f32));
      carriedInit.push_back(zero);
    }

    auto loop = scf::ForOp::create(
        b, loc, zero, count, one, carriedInit,
        [&](OpBuilder &lb, Location ll, Value n, ValueRange carried) {
          // [start, end) within [0, total], end >= start.
          Value next = arith::AddIOp::create(lb, ll, n, one);
          Value start = arith::MinSIOp::create(
              lb, ll,
              arith::MaxSIOp::create(lb, ll, readIndex(lb, ll, offsets, n),
                                     zero),
              total);
          Value end = arith::MinSIOp::create(
              lb, ll,
              arith::MaxSIOp::create(lb, ll, readIndex(lb, ll, offsets, next),
                                     start),
              total);
          Value length = arith::SubIOp::create(lb, ll, end, start);
          auto slice = [&](Value packed) -> Value {
            auto type = cast<RankedTensorType>(packed.getType());
            TokenRange r = tokenRange(lb, type, start, length);
            return tensor::ExtractSliceOp::create(lb, ll, sequenceType(packed),
                                                  packed, r.offsets, r.sizes,
                                                  r.strides);
          };
          auto rowType = RankedTensorType::get(
              {1, stateType.getDimSize(1), stateType.getDimSize(2),
               stateType.getDimSize(3)},
              f32);
          PrefillParts parts = PrefillParts::of(op);
          parts.q = slice(op.getQ());
          parts.k = slice(op.getK());
          parts.v = slice(op.getV());
          parts.g = slice(op.getG());
          parts.beta = slice(op.getBeta());
          parts.cuSeqlens = Value();
          parts.oType = sequenceType(op.getV(), oElement);
          parts.stateType = rowType;
          parts.initial = Value();
          if (Value states = op.getInitialState()) {
            StateRow r = stateRow(lb, rowType, n);
            parts.initial = tensor::ExtractSliceOp::create(
                lb, ll, rowType, states, r.offsets, r.sizes, r.strides);
          }
          if (checkpoints)
            parts.checkpointsType = RankedTensorType::get(
                {1, ShapedType::kDynamic, stateType.getDimSize(1),
                 stateType.getDimSize(2), stateType.getDimSize(3)},
                f32);
          DeltaRuleOp core = parts.build(lb, ll);
          TokenRange o = tokenRange(
              lb, cast<RankedTensorType>(carried[0].getType()), start, length);
          SmallVector<Value> yielded = {tensor::InsertSliceOp::create(
              lb, ll, core.getO(), carried[0], o.offsets, o.sizes,
              o.strides)};
          StateRow s = stateRow(lb, rowType, n);
          yielded.push_back(tensor::InsertSliceOp::create(
              lb, ll, core.getFinalState(), carried[1], s.offsets, s.sizes,
              s.strides));
          if (checkpoints) {
            yielded.push_back(insertRows(lb, ll, core.getCheckpoints(),
                                         carried[2], carried[3]));
            yielded.push_back(arith::AddIOp::create(
                lb, ll, carried[3],
                tensor::DimOp::create(lb, ll, core.getCheckpoints(), 1)));
          }
          scf::YieldOp::create(lb, ll, yielded);
        });
    SmallVector<Value> results(loop.getResults().take_front(
        checkpoints ? 3 : 2));
    rewriter.replaceOp(
        op, castToTypes(rewriter, loc, results, op->getResultTypes()));
    return success();
  }
};

/// Offsets, sizes and strides of tokens [start, start + length) of a
/// [B, T, ...] tensor of type `type`.
TokenRange batchTokenRange(OpBuilder &b, Location loc, Value x, Value start,
                           OpFoldResult length) {
  auto type = cast<RankedTensorType>(x.getType());
  TokenRange r;
  r.offsets.assign(type.getRank(), b.getIndexAttr(0));
  r.offsets[1] = start;
  r.sizes = tensor::getMixedSizes(b, loc, x);
  r.sizes[1] = length;
  r.strides.assign(type.getRank(), b.getIndexAttr(1));
  return r;
}

/// gdn.delta_rule with checkpoints on dense [B, T] tokens: the tokens in
/// segments of N, each a dense op from the state the last one left, whose
/// final state is the segment's checkpoint; then the tokens after the last
/// whole segment.
struct SegmentCheckpoints : OpRewritePattern<DeltaRuleOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getCheckpoints() || op.getCuSeqlens() || op.getStateIndices() ||
        storedInBF16(op.getFinalState().getType()))
      return rewriter.notifyMatchFailure(
          op, "no checkpoints, or other forms to unpack first");
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Type f32 = b.getF32Type();
    int64_t every = *op.getCheckpointEvery();
    auto stateType = op.getFinalState().getType();
    Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
    Value step = indexConstant(b, loc, every);
    Value v = op.getV();
    Value tokens = tensor::DimOp::create(b, loc, v, 1);
    Value segments = arith::DivUIOp::create(b, loc, tokens, step);
    Value whole = arith::MulIOp::create(b, loc, segments, step);

    Value state = op.getInitialState();
    if (!state) {
      SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, v, 0)};
      for (int64_t d = 1; d < 4; ++d)
        sizes.push_back(b.getIndexAttr(stateType.getDimSize(d)));
      state = createZeros(b, loc, sizes, f32);
    } else {
      // A copy to carry: the segments update it in place.
      state = linalg::CopyOp::create(
                  b, loc, state,
                  createEmptyLike(b, loc, state, f32))
                  .getResult(0);
    }
    Value out = createEmptyLike(b, loc, v, op.getO().getType().getElementType());
    SmallVector<OpFoldResult> checkpointSizes = {
        tensor::getMixedSize(b, loc, v, 0), segments};
    for (int64_t d = 1; d < 4; ++d)
      checkpointSizes.push_back(b.getIndexAttr(stateType.getDimSize(d)));
    Value checkpoints = createEmpty(b, loc, checkpointSizes, f32);

    // One dense op on tokens [start, start + length) from `from`.
    auto segment = [&](OpBuilder &sb, Location sl, Value start,
                       OpFoldResult length, Value from) {
      PrefillParts parts = PrefillParts::of(op);
      auto slice = [&](Value x) -> Value {
        TokenRange r = batchTokenRange(sb, sl, x, start, length);
        auto type = cast<RankedTensorType>(x.getType());
        SmallVector<int64_t> shape(type.getShape());
        shape[1] = ShapedType::kDynamic;
        if (auto size = getConstantIntValue(length))
          shape[1] = *size;
        return tensor::ExtractSliceOp::create(
            sb, sl, RankedTensorType::get(shape, type.getElementType()), x,
            r.offsets, r.sizes, r.strides);
      };
      parts.q = slice(op.getQ());
      parts.k = slice(op.getK());
      parts.v = slice(v);
      parts.g = slice(op.getG());
      parts.beta = slice(op.getBeta());
      parts.initial = from;
      auto vType = cast<RankedTensorType>(parts.v.getType());
      parts.oType = RankedTensorType::get(
          vType.getShape(), op.getO().getType().getElementType());
      parts.stateType = from.getType();
      parts.checkpointsType = Type();
      return parts.build(sb, sl);
    };

    auto loop = scf::ForOp::create(
        b, loc, zero, segments, one, ValueRange{state, out, checkpoints},
        [&](OpBuilder &lb, Location ll, Value c, ValueRange carried) {
          Value start = arith::MulIOp::create(lb, ll, c, step);
          DeltaRuleOp core =
              segment(lb, ll, start, lb.getIndexAttr(every), carried[0]);
          TokenRange o =
              batchTokenRange(lb, ll, carried[1], start, lb.getIndexAttr(every));
          Value outAll = tensor::InsertSliceOp::create(
              lb, ll, core.getO(), carried[1], o.offsets, o.sizes, o.strides);
          Value checkpointAll =
              insertToken(lb, ll, core.getFinalState(), carried[2], c);
          Value next = linalg::CopyOp::create(lb, ll, core.getFinalState(),
                                              carried[0])
                           .getResult(0);
          scf::YieldOp::create(lb, ll, ValueRange{next, outAll, checkpointAll});
        });
    Value rest = arith::SubIOp::create(b, loc, tokens, whole);
    DeltaRuleOp last = segment(b, loc, whole, rest, loop.getResult(0));
    TokenRange o = batchTokenRange(b, loc, loop.getResult(1), whole, rest);
    Value outAll = tensor::InsertSliceOp::create(
        b, loc, last.getO(), loop.getResult(1), o.offsets, o.sizes, o.strides);
    rewriter.replaceOp(
        op, castToTypes(rewriter, loc,
                        {outAll, last.getFinalState(), loop.getResult(2)},
                        op->getResultTypes()));
    return success();
  }
};

/// g = -exp(A_log) * softplus(a + dt_bias) (softplus(x) = x above 20, as
/// PyTorch's) and beta = sigmoid(b), in f32, for raw a and b of shape
/// [..., Hv] and A_log, dt_bias of shape [Hv].
std::pair<Value, Value> computeGates(OpBuilder &b, Location loc, Value a,
                                     Value rawBeta, Value aLog, Value dtBias) {
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

/// Raw gates: g and beta computed element-wise, then the op without them.
struct ComputePrefillGates : OpRewritePattern<DeltaRuleOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getALog())
      return rewriter.notifyMatchFailure(op, "no raw gates");
    PrefillParts parts = PrefillParts::of(op);
    std::tie(parts.g, parts.beta) =
        computeGates(rewriter, op.getLoc(), op.getG(), op.getBeta(),
                     op.getALog(), op.getDtBias());
    parts.aLog = parts.dtBias = Value();
    DeltaRuleOp core = parts.build(rewriter, op.getLoc());
    rewriter.replaceOp(op, resultsOf(core));
    return success();
  }
};

struct ComputeStepGates : OpRewritePattern<DeltaRuleStepOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleStepOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getALog())
      return rewriter.notifyMatchFailure(op, "no raw gates");
    auto [g, beta] = computeGates(rewriter, op.getLoc(), op.getG(),
                                  op.getBeta(), op.getALog(), op.getDtBias());
    rewriter.replaceOpWithNewOp<DeltaRuleStepOp>(
        op, op->getResultTypes(), op.getQ(), op.getK(), op.getV(), g, beta,
        op.getState(), op.getStateIndices(), op.getWriteIndices(),
        /*a_log=*/Value(), /*dt_bias=*/Value(), op.getScaleAttr());
    return success();
  }
};

/// A bf16 state is storage: the prefill runs on f32 states widened from it
/// and its final states are rounded back (a pool is gathered first).
struct WidenPrefillState : OpRewritePattern<DeltaRuleOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleOp op,
                                PatternRewriter &rewriter) const override {
    Type stateType = op.getFinalState().getType();
    if (!storedInBF16(stateType) || op.getStateIndices())
      return rewriter.notifyMatchFailure(op, "f32 states, or a pool first");
    Location loc = op.getLoc();
    PrefillParts parts = PrefillParts::of(op);
    if (parts.initial)
      parts.initial =
          convertTensor(rewriter, loc, parts.initial, rewriter.getF32Type());
    parts.stateType = inF32(stateType);
    if (parts.checkpointsType)
      parts.checkpointsType = inF32(parts.checkpointsType);
    DeltaRuleOp core = parts.build(rewriter, loc);
    SmallVector<Value> results = resultsOf(core);
    for (Value &result : llvm::drop_begin(results))
      result = convertTensor(rewriter, loc, result, rewriter.getBF16Type());
    rewriter.replaceOp(
        op, castToTypes(rewriter, loc, results, op->getResultTypes()));
    return success();
  }
};

struct WidenStepState : OpRewritePattern<DeltaRuleStepOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleStepOp op,
                                PatternRewriter &rewriter) const override {
    Type stateType = op.getNewState().getType();
    if (!storedInBF16(stateType) || op.getStateIndices())
      return rewriter.notifyMatchFailure(op, "f32 states, or a pool first");
    Location loc = op.getLoc();
    Value state =
        convertTensor(rewriter, loc, op.getState(), rewriter.getF32Type());
    auto core = DeltaRuleStepOp::create(
        rewriter, loc, TypeRange{op.getO().getType(), inF32(stateType)},
        op.getQ(), op.getK(), op.getV(), op.getG(), op.getBeta(), state,
        /*state_indices=*/Value(), /*write_indices=*/Value(), op.getALog(),
        op.getDtBias(), op.getScaleAttr());
    Value rounded = convertTensor(rewriter, loc, core.getNewState(),
                                  rewriter.getBF16Type());
    rewriter.replaceOp(op, castToTypes(rewriter, loc, {core.getO(), rounded},
                                       op->getResultTypes()));
    return success();
  }
};

/// gdn.delta_rule_verify as T decode steps: the state (gathered from the
/// pool, widened from bf16) goes through the draft tokens one step at a
/// time, and every step's output and state are inserted at its token.
struct UnrollVerify : OpRewritePattern<DeltaRuleVerifyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleVerifyOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Type f32 = b.getF32Type();
    Value state = op.getState();
    if (Value indices = op.getStateIndices())
      state = gatherStates(b, loc, state, indices);
    state = convertTensor(b, loc, state, f32);
    Value g = op.getG(), beta = op.getBeta();
    if (op.getALog())
      std::tie(g, beta) =
          computeGates(b, loc, g, beta, op.getALog(), op.getDtBias());
    auto statesType = op.getStates().getType();
    Value out = createEmptyLike(b, loc, op.getV(),
                                op.getO().getType().getElementType());
    SmallVector<OpFoldResult> statesSizes =
        tensor::getMixedSizes(b, loc, op.getV());
    statesSizes.pop_back();
    statesSizes.pop_back();
    for (int64_t d = 2; d < 5; ++d)
      statesSizes.push_back(b.getIndexAttr(statesType.getDimSize(d)));
    Value states = createEmpty(b, loc, statesSizes, f32);
    Value tokens = tensor::DimOp::create(b, loc, op.getV(), 1);
    auto loop = scf::ForOp::create(
        b, loc, indexConstant(b, loc, 0), tokens, indexConstant(b, loc, 1),
        ValueRange{state, out, states},
        [&](OpBuilder &lb, Location ll, Value t, ValueRange carried) {
          auto step = DeltaRuleStepOp::create(
              lb, ll,
              TypeRange{tokenOf(lb, ll, out, t).getType(),
                        carried[0].getType()},
              tokenOf(lb, ll, op.getQ(), t), tokenOf(lb, ll, op.getK(), t),
              tokenOf(lb, ll, op.getV(), t), tokenOf(lb, ll, g, t),
              tokenOf(lb, ll, beta, t), carried[0],
              /*state_indices=*/Value(), /*write_indices=*/Value(),
              /*a_log=*/Value(), /*dt_bias=*/Value(), op.getScaleAttr());
          Value outAll = insertToken(lb, ll, step.getO(), carried[1], t);
          Value statesAll =
              insertToken(lb, ll, step.getNewState(), carried[2], t);
          // The next token's state goes back into the carried buffer, so
          // that the loop bufferizes in place.
          Value next = linalg::CopyOp::create(lb, ll, step.getNewState(),
                                              carried[0])
                           .getResult(0);
          scf::YieldOp::create(lb, ll, ValueRange{next, outAll, statesAll});
        });
    Value result = convertTensor(b, loc, loop.getResult(2),
                                 statesType.getElementType());
    rewriter.replaceOp(op, castToTypes(rewriter, loc,
                                       {loop.getResult(1), result},
                                       op->getResultTypes()));
    return success();
  }
};

struct GdnUnpackSequencesPass
    : gdn::impl::GdnUnpackSequencesPassBase<GdnUnpackSequencesPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGdnUnpackSequencesPatterns(patterns);
    // A packed op with a pool takes two rewrites: the gather and scatter
    // leave a packed op with per-sequence states for the sequence loop.
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mlir::gdn::populateGdnUnpackSequencesPatterns(
    RewritePatternSet &patterns) {
  patterns.add<UnpackPrefillPool, UnpackStepPool, UnpackPackedSequences,
               SegmentCheckpoints, ComputePrefillGates, ComputeStepGates,
               WidenPrefillState, WidenStepState, UnrollVerify>(
      patterns.getContext());
}
