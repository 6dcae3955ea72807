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
    Value initial = gatherStates(rewriter, loc, pool, readIndices);
    auto core = DeltaRuleOp::create(
        rewriter, loc,
        TypeRange{op.getO().getType(), perSequenceStates(pool, readIndices)},
        op.getQ(), op.getK(), op.getV(), op.getG(), op.getBeta(), initial,
        op.getCuSeqlens(), /*state_indices=*/Value(),
        /*write_indices=*/Value(), op.getALog(), op.getDtBias(),
        op.getScaleAttr(), /*strategy=*/ScanStrategyAttr());
    Value updated = scatterStates(rewriter, loc, core.getFinalState(), pool,
                                  writeIndices);
    rewriter.replaceOp(op, castToTypes(rewriter, loc, {core.getO(), updated},
                                       op->getResultTypes()));
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

/// gdn.delta_rule with cu_seqlens and per-sequence states: a loop over the
/// sequences, each a dense op on its slice of the tokens.
struct UnpackPackedSequences : OpRewritePattern<DeltaRuleOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DeltaRuleOp op,
                                PatternRewriter &rewriter) const override {
    Value offsets = op.getCuSeqlens();
    if (!offsets || op.getStateIndices())
      return rewriter.notifyMatchFailure(
          op, "not packed, or a pool still to gather first");
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

    auto loop = scf::ForOp::create(
        b, loc, zero, count, one, ValueRange{out, finals},
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
          Value initial;
          auto rowType = RankedTensorType::get(
              {1, stateType.getDimSize(1), stateType.getDimSize(2),
               stateType.getDimSize(3)},
              f32);
          if (Value states = op.getInitialState()) {
            StateRow r = stateRow(lb, rowType, n);
            initial = tensor::ExtractSliceOp::create(
                lb, ll, rowType, states, r.offsets, r.sizes, r.strides);
          }
          auto core = DeltaRuleOp::create(
              lb, ll,
              TypeRange{sequenceType(op.getV(), oElement), rowType},
              slice(op.getQ()), slice(op.getK()), slice(op.getV()),
              slice(op.getG()), slice(op.getBeta()), initial,
              /*cu_seqlens=*/Value(), /*state_indices=*/Value(),
              /*write_indices=*/Value(), op.getALog(), op.getDtBias(),
              op.getScaleAttr(), /*strategy=*/ScanStrategyAttr());
          TokenRange o = tokenRange(
              lb, cast<RankedTensorType>(carried[0].getType()), start, length);
          Value outAll = tensor::InsertSliceOp::create(
              lb, ll, core.getO(), carried[0], o.offsets, o.sizes, o.strides);
          StateRow s = stateRow(lb, rowType, n);
          Value finalAll = tensor::InsertSliceOp::create(
              lb, ll, core.getFinalState(), carried[1], s.offsets, s.sizes,
              s.strides);
          scf::YieldOp::create(lb, ll, ValueRange{outAll, finalAll});
        });
    rewriter.replaceOp(op, castToTypes(rewriter, loc, loop.getResults(),
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
    auto [g, beta] = computeGates(rewriter, op.getLoc(), op.getG(),
                                  op.getBeta(), op.getALog(), op.getDtBias());
    rewriter.replaceOpWithNewOp<DeltaRuleOp>(
        op, op->getResultTypes(), op.getQ(), op.getK(), op.getV(), g, beta,
        op.getInitialState(), op.getCuSeqlens(), op.getStateIndices(),
        op.getWriteIndices(), /*a_log=*/Value(), /*dt_bias=*/Value(),
        op.getScaleAttr(), op.getStrategyAttr());
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

/// `type` with element type f32.
RankedTensorType inF32(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(),
                               Float32Type::get(type.getContext()));
}

bool storedInBF16(Type type) {
  return cast<RankedTensorType>(type).getElementType().isBF16();
}

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
    Value initial = op.getInitialState();
    if (initial)
      initial = convertTensor(rewriter, loc, initial, rewriter.getF32Type());
    auto core = DeltaRuleOp::create(
        rewriter, loc, TypeRange{op.getO().getType(), inF32(stateType)},
        op.getQ(), op.getK(), op.getV(), op.getG(), op.getBeta(), initial,
        op.getCuSeqlens(), /*state_indices=*/Value(),
        /*write_indices=*/Value(), op.getALog(), op.getDtBias(),
        op.getScaleAttr(), op.getStrategyAttr());
    Value rounded = convertTensor(rewriter, loc, core.getFinalState(),
                                  rewriter.getBF16Type());
    rewriter.replaceOp(op, castToTypes(rewriter, loc, {core.getO(), rounded},
                                       op->getResultTypes()));
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
               ComputePrefillGates, ComputeStepGates, WidenPrefillState,
               WidenStepState, UnrollVerify>(patterns.getContext());
}
