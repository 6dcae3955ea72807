//===- ServingForms.h - shared pieces of gdn-unpack-sequences --*- C++ -*-===//
//
// gdn-unpack-sequences rewrites the serving forms of the delta-rule ops
// (packed sequences, pools of states, raw gates, bf16 states, checkpoints,
// draft tokens to verify) into the dense ops; its patterns live in one file
// per form and share these builders.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_DIALECT_GDN_TRANSFORMS_SERVINGFORMS_H
#define GDN_LIB_DIALECT_GDN_TRANSFORMS_SERVINGFORMS_H

#include "gdn/Dialect/Gdn/IR/GdnOps.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::gdn::serving {

/// Offsets, sizes and strides of one row of a rank-4 state tensor.
struct StateRow {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};

/// Offsets, sizes and strides of a range of tokens.
struct TokenRange {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};

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

Value indexConstant(OpBuilder &b, Location loc, int64_t value);

/// `type` with element type f32.
RankedTensorType inF32(Type type);

/// Whether a state type stores its elements in bf16.
bool storedInBF16(Type type);

/// Token `t` of a [B, T, ...] tensor as a [B, ...] tensor.
Value tokenOf(OpBuilder &b, Location loc, Value x, Value t);

/// Inserts the [B, ...] tensor `part` as token `t` of the [B, T, ...]
/// tensor `into`.
Value insertToken(OpBuilder &b, Location loc, Value part, Value into,
                  Value t);

/// Entry `i` of a rank-1 i32 tensor, as an index (sign-extended).
Value readIndex(OpBuilder &b, Location loc, Value indices, Value i);

/// Whether `slot` names one of the pool's `slots` rows: -1 (an empty batch
/// entry) and anything else outside [0, slots) do not.
Value namesSlot(OpBuilder &b, Location loc, Value slot, Value slots);

/// Offsets, sizes and strides of row `row` of a rank-4 [rows, Hv, K, V]
/// tensor of type `type`.
StateRow stateRow(OpBuilder &b, RankedTensorType type, OpFoldResult row);

/// The states [N, Hv, K, V] (N = the entries of `readIndices`) that the
/// sequences start from: slot `readIndices[n]` of `pool`, or zeros.
Value gatherStates(OpBuilder &b, Location loc, Value pool, Value readIndices);

/// `pool` with row n of `states` [N, Hv, K, V] written to slot
/// `writeIndices[n]`, for the indices that name a slot.
Value scatterStates(OpBuilder &b, Location loc, Value states, Value pool,
                    Value writeIndices);

/// The type [N, Hv, K, V] of one state per pool entry.
RankedTensorType perSequenceStates(Value pool, Value indices);

/// The results of `op` (o, the final state, the checkpoints if any).
SmallVector<Value> resultsOf(DeltaRuleOp op);

/// Offsets, sizes and strides of tokens [start, start + length) of a packed
/// [1, total, ...] tensor of type `type`.
TokenRange tokenRange(OpBuilder &b, RankedTensorType type, Value start,
                      Value length);

/// The type of one sequence's slice of a packed [1, total, ...] tensor.
RankedTensorType sequenceType(Value packed, Type elementType = {});

/// The rows [offset, offset + count) of `into` [R, ...] replaced by the
/// first `count` of `rows` [1, C, ...], clamped to the rows `into` has.
Value insertRows(OpBuilder &b, Location loc, Value rows, Value into,
                 Value offset);

/// Offsets, sizes and strides of tokens [start, start + length) of a
/// [B, T, ...] tensor of type `type`.
TokenRange batchTokenRange(OpBuilder &b, Location loc, Value x, Value start,
                           OpFoldResult length);

/// g = -exp(A_log) * softplus(a + dt_bias) (softplus(x) = x above 20, as
/// PyTorch's) and beta = sigmoid(b), in f32, for raw a and b of shape
/// [..., Hv] and A_log, dt_bias of shape [Hv].
std::pair<Value, Value> computeGates(OpBuilder &b, Location loc, Value a,
                                     Value rawBeta, Value aLog, Value dtBias);

/// The patterns of each form.
void populatePoolPatterns(RewritePatternSet &patterns);
void populatePackedPatterns(RewritePatternSet &patterns);
void populateElementwisePatterns(RewritePatternSet &patterns);
void populateVerifyPatterns(RewritePatternSet &patterns);

} // namespace mlir::gdn::serving

#endif // GDN_LIB_DIALECT_GDN_TRANSFORMS_SERVINGFORMS_H
