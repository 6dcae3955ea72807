//===- HeadStep.cpp - one token of one head on a static state -------------===//

#include "HeadStep.h"
#include "gdn/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::gdn;

std::pair<Value, Value> mlir::gdn::buildHeadStep(OpBuilder &b, Location loc,
                                                 Value state, Value destination,
                                                 const HeadStepInputs &in,
                                                 float scale) {
  Type f32 = b.getF32Type();
  auto stateType = cast<RankedTensorType>(state.getType());
  int64_t valueDim = stateType.getDimSize(1);
  // Fresh scratch: alloc_tensor is not merged by CSE (see ChunkDeltaRule).
  auto scratch = [&](ArrayRef<int64_t> shape) {
    return bufferization::AllocTensorOp::create(
        b, loc, RankedTensorType::get(shape, f32), ValueRange{});
  };
  auto vecmat = [&](Value vec, Value mat) {
    Value init = fillWith(b, loc, scratch({valueDim}), 0.0f);
    return linalg::VecmatOp::create(b, loc, TypeRange{init.getType()},
                                    ValueRange{vec, mat}, ValueRange{init})
        .getResult(0);
  };
  Value decay = math::ExpOp::create(b, loc, in.g);

  // delta = beta (v - exp(g) S^T k): the correction written under k.
  Value keyRead = vecmat(in.k, state);
  AffineMap id1 = b.getMultiDimIdentityMap(1);
  Value delta = buildElementwise(
      b, loc, ValueRange{in.v, keyRead}, scratch({valueDim}), {id1, id1},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value read = arith::MulFOp::create(nb, nl, decay, args[1]);
        Value error = arith::SubFOp::create(nb, nl, args[0], read);
        return arith::MulFOp::create(nb, nl, in.beta, error).getResult();
      });

  // S' = exp(g) S + k delta^T. In place, the state is read through the
  // output operand so that bufferization reuses its buffer.
  AffineMap id2 = b.getMultiDimIdentityMap(2);
  AffineMap rows =
      AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, b.getContext());
  AffineMap cols =
      AffineMap::get(2, 0, {b.getAffineDimExpr(1)}, b.getContext());
  bool inPlace = destination == state;
  SmallVector<Value> inputs = {in.k, delta};
  SmallVector<AffineMap> maps = {rows, cols};
  if (!inPlace) {
    inputs.push_back(state);
    maps.push_back(id2);
  }
  Value newState = buildElementwise(
      b, loc, inputs, destination, maps,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        // The old state element: the extra input, or the output operand.
        Value old = args[2];
        Value decayed = arith::MulFOp::create(nb, nl, decay, old);
        Value write = arith::MulFOp::create(nb, nl, args[0], args[1]);
        return arith::AddFOp::create(nb, nl, decayed, write).getResult();
      });

  // o = scale q^T S'.
  Value read = vecmat(in.q, newState);
  if (scale != 1.0f) {
    Value factor = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(scale));
    read = buildElementwise(
        b, loc, ValueRange{}, read, {},
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          return arith::MulFOp::create(nb, nl, args[0], factor).getResult();
        });
  }
  return {read, newState};
}
