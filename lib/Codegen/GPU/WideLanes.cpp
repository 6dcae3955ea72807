//===- WideLanes.cpp - warp lanes that read rows in vectors ---------------===//

#include "WideLanes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::gdn;

namespace {
constexpr int64_t kWarpSize = 32;
/// The widest load of a thread (ld.global.v4.b32).
constexpr int64_t kVectorBytes = 16;
/// Vectors per iteration at most: a 2048-wide bf16 row in one iteration.
constexpr int64_t kMaxUnroll = 8;
/// Vectors per iteration where the row's length is only known at run time.
constexpr int64_t kDynamicUnroll = 4;

/// Bytes of an element that vectors can hold (8 to 64 bits); 0 otherwise.
int64_t elementBytes(Type type) {
  if (!type.isIntOrFloat())
    return 0;
  unsigned bits = type.getIntOrFloatBitWidth();
  if (bits < 8 || bits > 64 || !llvm::isPowerOf2_32(bits))
    return 0;
  return bits / 8;
}

/// How `operand` of `op` meets the last loop dimension: -1 where it does
/// not depend on it (or is not a memref), the element's bytes where its
/// last index is that dimension alone, with unit stride, and no other
/// index uses it; 0 otherwise (it cannot be read in vectors).
int64_t rowAccess(linalg::LinalgOp op, OpOperand &operand) {
  auto type = dyn_cast<MemRefType>(operand.get().getType());
  if (!type)
    return -1;
  unsigned last = op.getNumLoops() - 1;
  AffineMap map = op.getMatchingIndexingMap(&operand);
  if (!map.isFunctionOfDim(last))
    return -1;
  ArrayRef<AffineExpr> results = map.getResults();
  if (results.back() != getAffineDimExpr(last, op.getContext()))
    return 0;
  for (AffineExpr result : results.drop_back())
    if (result.isFunctionOfDim(last))
      return 0;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.back() != 1)
    return 0;
  return elementBytes(type.getElementType());
}

/// Whether the payload op has a vector form: an element-wise op on
/// integers and floats, or a constant.
bool isWidenable(Operation &payload) {
  if (isa<arith::ConstantOp>(payload))
    return true;
  auto scalar = [](Type type) { return type.isIntOrFloat(); };
  return payload.hasTrait<OpTrait::Elementwise>() &&
         payload.hasTrait<OpTrait::Vectorizable>() &&
         llvm::all_of(payload.getOperandTypes(), scalar) &&
         llvm::all_of(payload.getResultTypes(), scalar);
}

Value broadcast(OpBuilder &b, Location loc, Value scalar, int64_t width) {
  return vector::BroadcastOp::create(
      b, loc, VectorType::get({width}, scalar.getType()), scalar);
}

} // namespace

SmallVector<Value> mlir::gdn::indicesAt(OpBuilder &b, Location loc,
                                        AffineMap map, ValueRange dims) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults())
    indices.push_back(affine::AffineApplyOp::create(
        b, loc, AffineMap::get(map.getNumDims(), 0, expr), dims));
  return indices;
}

LaneWalk mlir::gdn::laneWalkOf(ArrayRef<linalg::LinalgOp> ops, Value givenFor) {
  int64_t narrowest = 0;
  int64_t length = ShapedType::kDynamic;
  for (linalg::LinalgOp op : ops) {
    if (op.getNumLoops() == 0 ||
        !llvm::all_of(op.getBlock()->without_terminator(), isWidenable))
      return {};
    length = op.getStaticLoopRanges().back();
    for (OpOperand &operand : op->getOpOperands()) {
      if (givenFor && operand.get() == givenFor)
        continue;
      int64_t bytes = rowAccess(op, operand);
      // An op that writes rows writes each along them (a reduction's
      // output does not depend on the reduced dimension).
      bool writesRows =
          op.isDpsInit(&operand) && op.getNumReductionLoops() == 0;
      if (bytes == 0 || (writesRows && bytes < 0))
        return {};
      if (bytes > 0)
        narrowest = narrowest ? std::min(narrowest, bytes) : bytes;
    }
  }
  if (!narrowest)
    return {};
  LaneWalk walk;
  walk.width = kVectorBytes / narrowest;
  walk.unroll = kDynamicUnroll;
  if (!ShapedType::isDynamic(length)) {
    int64_t vectors = length / walk.width;
    if (vectors == 0)
      return {};
    walk.unroll = std::clamp<int64_t>(llvm::divideCeil(vectors, kWarpSize), 1,
                                      kMaxUnroll);
  }
  return walk;
}

Value mlir::gdn::rowsAreAligned(OpBuilder &b, Location loc,
                                ArrayRef<linalg::LinalgOp> ops,
                                Value givenFor) {
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  Value zero = index(0), boundary = index(kVectorBytes);
  Value aligned = arith::ConstantIntOp::create(b, loc, 1, 1);
  auto require = [&](Value bytes) {
    Value rest = arith::RemUIOp::create(b, loc, bytes, boundary);
    Value ok =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rest, zero);
    aligned = arith::AndIOp::create(b, loc, aligned, ok);
  };
  for (linalg::LinalgOp op : ops)
    for (OpOperand &operand : op->getOpOperands()) {
      if (givenFor && operand.get() == givenFor)
        continue;
      int64_t bytes = rowAccess(op, operand);
      if (bytes <= 0)
        continue;
      Value memref = operand.get();
      Value size = index(bytes);
      auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
      Value base =
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
      Value offset = arith::MulIOp::create(b, loc, metadata.getOffset(), size);
      require(arith::AddIOp::create(b, loc, base, offset));
      for (Value stride : metadata.getStrides().drop_back())
        require(arith::MulIOp::create(b, loc, stride, size));
    }
  return aligned;
}

SmallVector<Value> mlir::gdn::walkLane(OpBuilder &b, Location loc, Value lane,
                                       Value length, LaneWalk walk,
                                       ValueRange inits, WideSteps wide,
                                       NarrowStep narrow) {
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  Value warp = index(kWarpSize), width = index(walk.width);
  auto loop = [&](Value from, Value to, Value step,
                  function_ref<SmallVector<Value>(OpBuilder &, Location, Value,
                                                  ValueRange)>
                      body,
                  ValueRange values) {
    auto forOp = scf::ForOp::create(
        b, loc, from, to, step, values,
        [&](OpBuilder &nb, Location nl, Value iv, ValueRange args) {
          scf::YieldOp::create(nb, nl, body(nb, nl, iv, args));
        });
    return SmallVector<Value>(forOp.getResults());
  };
  SmallVector<Value> values(inits);
  if (walk.width == 1)
    return loop(lane, length, warp, narrow, values);
  Value vectors = arith::DivUIOp::create(b, loc, length, width);
  Value firstSingle = lane;
  if (walk.unroll > 1) {
    // Whole groups of `unroll` vectors per lane: every load of a group is
    // issued before its arithmetic.
    Value span = index(kWarpSize * walk.unroll);
    Value groups = arith::DivUIOp::create(b, loc, vectors, span);
    values = loop(
        index(0), groups, index(1),
        [&](OpBuilder &nb, Location nl, Value group, ValueRange args) {
          Value first = arith::AddIOp::create(
              nb, nl, arith::MulIOp::create(nb, nl, group, span), lane);
          SmallVector<Value> starts;
          for (int64_t u = 0; u < walk.unroll; ++u) {
            Value vector = arith::AddIOp::create(
                nb, nl, first,
                arith::ConstantIndexOp::create(nb, nl, u * kWarpSize));
            starts.push_back(arith::MulIOp::create(nb, nl, vector, width));
          }
          return wide(nb, nl, starts, args);
        },
        values);
    firstSingle = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, groups, span), lane);
  }
  values = loop(
      firstSingle, vectors, warp,
      [&](OpBuilder &nb, Location nl, Value vector, ValueRange args) {
        Value start = arith::MulIOp::create(nb, nl, vector, width);
        return wide(nb, nl, {start}, args);
      },
      values);
  Value rest = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, vectors, width), lane);
  return loop(rest, length, warp, narrow, values);
}

IRMapping mlir::gdn::loadWideInputs(OpBuilder &b, Location loc,
                                    linalg::LinalgOp op, ValueRange dims,
                                    int64_t width, Value givenFor,
                                    Value given) {
  Block *body = op.getBlock();
  IRMapping mapping;
  for (OpOperand *input : op.getDpsInputOperands()) {
    Value value = input->get(), element;
    if (givenFor && value == givenFor) {
      element = broadcast(b, loc, given, width);
    } else if (auto type = dyn_cast<MemRefType>(value.getType())) {
      SmallVector<Value> indices =
          indicesAt(b, loc, op.getMatchingIndexingMap(input), dims);
      if (rowAccess(op, *input) > 0)
        element = vector::LoadOp::create(
            b, loc, VectorType::get({width}, type.getElementType()), value,
            indices, /*nontemporal=*/false, llvm::Align(kVectorBytes));
      else
        element = broadcast(
            b, loc, memref::LoadOp::create(b, loc, value, indices), width);
    } else {
      element = broadcast(b, loc, value, width);
    }
    mapping.map(body->getArgument(input->getOperandNumber()), element);
  }
  return mapping;
}

void mlir::gdn::cloneWidePayload(OpBuilder &b, Location loc,
                                 linalg::LinalgOp op, IRMapping &mapping,
                                 int64_t width, Operation *skip) {
  for (Operation &payload : op.getBlock()->without_terminator()) {
    if (&payload == skip)
      continue;
    if (isa<arith::ConstantOp>(payload)) {
      Value constant = b.clone(payload)->getResult(0);
      mapping.map(payload.getResult(0), broadcast(b, loc, constant, width));
      continue;
    }
    for (Value operand : payload.getOperands())
      if (!mapping.contains(operand))
        mapping.map(operand, broadcast(b, loc, operand, width));
    Operation *clone = b.clone(payload, mapping);
    for (OpResult result : clone->getResults())
      result.setType(VectorType::get({width}, result.getType()));
  }
}

void mlir::gdn::storeWideOutput(OpBuilder &b, Location loc, linalg::LinalgOp op,
                                Value value, ValueRange dims, int64_t width) {
  OpOperand *out = op.getDpsInitOperand(0);
  // A payload may yield a value from outside it.
  if (!isa<VectorType>(value.getType()))
    value = broadcast(b, loc, value, width);
  vector::StoreOp::create(
      b, loc, value, out->get(),
      indicesAt(b, loc, op.getMatchingIndexingMap(out), dims),
      /*nontemporal=*/false, llvm::Align(kVectorBytes));
}
