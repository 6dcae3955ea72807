//===- KernelBuilders.cpp - scalar builders shared by the GPU kernels -----===//

#include "KernelBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

Value mlir::gdn::toBuffer(OpBuilder &b, Location loc, Value tensor,
                          bool readOnly) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
  return bufferization::ToBufferOp::create(b, loc, memrefType, tensor,
                                           readOnly);
}

Value mlir::gdn::multiplyAdd(OpBuilder &b, Location loc, Value x, Value y,
                             Value z) {
  auto contract = arith::FastMathFlagsAttr::get(b.getContext(),
                                                arith::FastMathFlags::contract);
  Value product = arith::MulFOp::create(b, loc, x, y, contract);
  return arith::AddFOp::create(b, loc, product, z, contract);
}

Value mlir::gdn::exponential(OpBuilder &b, Location loc, Value x) {
  Value log2e =
      arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.4426950408889634f));
  return exponent2(b, loc, arith::MulFOp::create(b, loc, x, log2e));
}

Value mlir::gdn::exponent2(OpBuilder &b, Location loc, Value x) {
  return LLVM::CallIntrinsicOp::create(
             b, loc, b.getF32Type(),
             b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"), ValueRange{x})
      .getResult(0);
}

std::pair<Value, Value> mlir::gdn::gatesFromRaw(OpBuilder &b, Location loc,
                                                Value a, Value rawBeta,
                                                Value aLog, Value dtBias) {
  auto constant = [&](float value) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  };
  Value one = constant(1.0f);
  Value x = arith::AddFOp::create(b, loc, a, dtBias);
  // log1p(e) = log(1 + e) e / ((1 + e) - 1), exact where 1 + e rounds,
  // and e where it rounds to 1 (x far below 0).
  Value e = exponential(b, loc, x);
  Value u = arith::AddFOp::create(b, loc, one, e);
  Value rounded = arith::SubFOp::create(b, loc, u, one);
  Value logU = arith::MulFOp::create(
      b, loc,
      LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(),
                                    b.getStringAttr("llvm.nvvm.lg2.approx.f"),
                                    ValueRange{u})
          .getResult(0),
      constant(0.693147180559945f));
  Value log1p = arith::SelectOp::create(
      b, loc,
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, rounded,
                            constant(0.0f)),
      e,
      arith::DivFOp::create(b, loc, arith::MulFOp::create(b, loc, logU, e),
                            rounded));
  Value softplus = arith::SelectOp::create(
      b, loc,
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x,
                            constant(20.0f)),
      x, log1p);
  Value g = arith::NegFOp::create(
      b, loc,
      arith::MulFOp::create(b, loc, exponential(b, loc, aLog), softplus));
  Value beta = arith::DivFOp::create(
      b, loc, one,
      arith::AddFOp::create(
          b, loc, one,
          exponential(b, loc, arith::NegFOp::create(b, loc, rawBeta))));
  return {g, beta};
}

mlir::gdn::MmaLane mlir::gdn::mmaLaneOf(OpBuilder &b, Location loc, Value tid) {
  auto c = [&](int64_t v) { return indexConstant(b, loc, v); };
  auto div = [&](Value x, int64_t d) {
    return arith::DivUIOp::create(b, loc, x, c(d)).getResult();
  };
  auto rem = [&](Value x, int64_t d) {
    return arith::RemUIOp::create(b, loc, x, c(d)).getResult();
  };
  auto mul = [&](Value x, int64_t d) {
    return arith::MulIOp::create(b, loc, x, c(d)).getResult();
  };
  MmaLane lane;
  lane.warp = div(tid, 32);
  Value inWarp = rem(tid, 32);
  lane.group = div(inWarp, 4);
  lane.quad = rem(inWarp, 4);
  lane.matrixRow = rem(inWarp, 8);
  lane.matrixColumn = mul(rem(div(inWarp, 8), 2), 8);
  lane.matrixHalf = mul(div(inWarp, 16), 8);
  return lane;
}

Value mlir::gdn::indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

void mlir::gdn::runOnlyIf(gpu::LaunchOp launch, Value condition) {
  Block &body = launch.getBody().front();
  Operation *terminator = body.getTerminator();
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  auto guard =
      scf::IfOp::create(b, launch.getLoc(), condition, /*withElse=*/false);
  Block *then = guard.thenBlock();
  then->getOperations().splice(
      then->getTerminator()->getIterator(), body.getOperations(),
      std::next(guard->getIterator()), terminator->getIterator());
}

std::pair<Value, Value> mlir::gdn::poolSlot(OpBuilder &b, Location loc,
                                            Value index, Value slots) {
  // Sign-extended: a negative index stays negative.
  Value slot = arith::IndexCastOp::create(b, loc, b.getIndexType(), index);
  Value valid = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, slot,
                            indexConstant(b, loc, 0)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, slot, slots));
  return {slot, valid};
}
