//===- GdnOps.cpp - gdn dialect operations --------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "ShapeContract.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::gdn;

#define GET_OP_CLASSES
#include "gdn/Dialect/Gdn/IR/GdnOps.cpp.inc"

namespace {
/// The operands and results shared by gdn.delta_rule and gdn.delta_rule_step,
/// with the names their ODS definitions give them.
struct DeltaRuleSignature {
  Value q, k, v, g, beta;
  Value state; // may be null for gdn.delta_rule
  StringRef stateName;
  Type o, newState;
  StringRef newStateName;
};
} // namespace

static bool isActivationElementType(Type type) {
  return type.isF32() || type.isBF16() || type.isF16();
}

/// Verifies the shapes, element types and head grouping of either delta-rule
/// op. `tokenDims` is {"B", "T"} for the prefill op and {"B"} for the decode
/// step.
static LogicalResult verifyDeltaRule(Operation *op,
                                     const DeltaRuleSignature &sig,
                                     ArrayRef<StringRef> tokenDims) {
  auto withTokens = [&](ArrayRef<StringRef> tail) {
    SmallVector<StringRef> dims(tokenDims);
    dims.append(tail.begin(), tail.end());
    return dims;
  };
  SmallVector<StringRef> stateDims = {"B", "Hv", "K", "V"};

  ShapeContract contract(op, {"H", "Hv", "K", "V"});
  if (failed(contract.check("operand", "q", sig.q.getType(),
                            withTokens({"H", "K"}))) ||
      failed(contract.check("operand", "k", sig.k.getType(),
                            withTokens({"H", "K"}))) ||
      failed(contract.check("operand", "v", sig.v.getType(),
                            withTokens({"Hv", "V"}))) ||
      failed(contract.check("operand", "g", sig.g.getType(),
                            withTokens({"Hv"}))) ||
      failed(contract.check("operand", "beta", sig.beta.getType(),
                            withTokens({"Hv"}))))
    return failure();
  if (sig.state && failed(contract.check("operand", sig.stateName,
                                         sig.state.getType(), stateDims)))
    return failure();
  if (failed(contract.check("result", "o", sig.o, withTokens({"Hv", "V"}))) ||
      failed(contract.check("result", sig.newStateName, sig.newState,
                            stateDims)))
    return failure();

  Type elementType = getTensorElementType(sig.q.getType());
  if (!isActivationElementType(elementType))
    return op->emitOpError()
           << "operand 'q' must have element type f32, bf16 or f16, but got "
           << elementType;
  for (auto [name, value] : {std::pair<StringRef, Value>{"k", sig.k},
                             std::pair<StringRef, Value>{"v", sig.v}}) {
    Type actual = getTensorElementType(value.getType());
    if (actual != elementType)
      return op->emitOpError()
             << "operand '" << name << "' must have the element type of 'q' ("
             << elementType << "), but got " << actual;
  }
  Type f32 = Float32Type::get(op->getContext());
  if (Type actual = getTensorElementType(sig.g.getType()); actual != f32)
    return op->emitOpError()
           << "operand 'g' (log of the forget gate) must have element type "
              "f32, but got "
           << actual;
  if (Type actual = getTensorElementType(sig.beta.getType());
      actual != f32 && actual != elementType)
    return op->emitOpError()
           << "operand 'beta' must have element type f32 or the element type "
              "of 'v' ("
           << elementType << "), but got " << actual;
  if (sig.state) {
    if (Type actual = getTensorElementType(sig.state.getType()); actual != f32)
      return op->emitOpError() << "operand '" << sig.stateName
                               << "' must have element type f32, but got "
                               << actual;
  }
  if (Type actual = getTensorElementType(sig.o); actual != elementType)
    return op->emitOpError()
           << "result 'o' must have the element type of 'v' (" << elementType
           << "), but got " << actual;
  if (Type actual = getTensorElementType(sig.newState); actual != f32)
    return op->emitOpError() << "result '" << sig.newStateName
                             << "' must have element type f32, but got "
                             << actual;

  int64_t heads = contract.lookup("H");
  int64_t valueHeads = contract.lookup("Hv");
  if (valueHeads % heads != 0)
    return op->emitOpError()
           << "value heads Hv = " << valueHeads
           << " must be a multiple of query/key heads H = " << heads;
  return success();
}

static int64_t groupSize(Value q, Value v) {
  int64_t heads = cast<RankedTensorType>(q.getType()).getDimSize(
      cast<RankedTensorType>(q.getType()).getRank() - 2);
  int64_t valueHeads = cast<RankedTensorType>(v.getType()).getDimSize(
      cast<RankedTensorType>(v.getType()).getRank() - 2);
  return valueHeads / heads;
}

//===----------------------------------------------------------------------===//
// DeltaRuleOp
//===----------------------------------------------------------------------===//

LogicalResult DeltaRuleOp::verify() {
  DeltaRuleSignature sig{getQ(),
                         getK(),
                         getV(),
                         getG(),
                         getBeta(),
                         getInitialState(),
                         "initial_state",
                         getO().getType(),
                         getFinalState().getType(),
                         "final_state"};
  return verifyDeltaRule(*this, sig, {"B", "T"});
}

int64_t DeltaRuleOp::getGroupSize() { return groupSize(getQ(), getV()); }

//===----------------------------------------------------------------------===//
// DeltaRuleStepOp
//===----------------------------------------------------------------------===//

LogicalResult DeltaRuleStepOp::verify() {
  DeltaRuleSignature sig{getQ(),
                         getK(),
                         getV(),
                         getG(),
                         getBeta(),
                         getState(),
                         "state",
                         getO().getType(),
                         getNewState().getType(),
                         "new_state"};
  return verifyDeltaRule(*this, sig, {"B"});
}

int64_t DeltaRuleStepOp::getGroupSize() { return groupSize(getQ(), getV()); }
