//===- GdnOps.cpp - gdn dialect operations --------------------------------===//

#include "gdn/Dialect/Gdn/IR/GdnOps.h"
#include "ShapeContract.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>

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
  float scale;
  // The serving operands, each may be null: packed sequences (prefill
  // only) and a state pool's read and write slots.
  Value cuSeqlens = {};
  Value stateIndices = {};
  Value writeIndices = {};
  // Raw gates: with them, g and beta are a Qwen layer's raw a and b.
  Value aLog = {};
  Value dtBias = {};
  // gdn.delta_rule_verify: one new state per token ([B, T, Hv, K, V]).
  bool perTokenStates = false;
};
} // namespace

/// Upper bounds of the sizes the verifiers accept (docs/Dialect.md): far
/// above any model's, and low enough that every size product the lowerings
/// form stays far from overflow and every unrolled loop small.
static constexpr int64_t kMaxHeadDim = 1024;
static constexpr int64_t kMaxHeads = 65536;
static constexpr int64_t kMaxLayerDim = int64_t(1) << 17;

/// A float attribute that must be a positive, finite number (an epsilon, a
/// RoPE base).
LogicalResult mlir::gdn::verifyPositiveFinite(Operation *op, StringRef name,
                                              float value) {
  if (std::isfinite(value) && value > 0)
    return success();
  return op->emitOpError() << "attribute '" << name
                           << "' must be a positive finite number, but got "
                           << value;
}

/// Integer attributes of sizes: at most `maximum`.
LogicalResult
mlir::gdn::verifySizeAttrs(Operation *op,
                           ArrayRef<std::pair<StringRef, int64_t>> sizes,
                           int64_t maximum) {
  for (auto [name, size] : sizes)
    if (size > maximum)
      return op->emitOpError()
             << "attribute '" << name << "' = " << size
             << " exceeds the largest supported size " << maximum;
  return success();
}

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
  // One state per sequence: B of them, or N packed ones; a pool has S.
  StringRef sequences = sig.cuSeqlens ? "N" : "B";
  StringRef stateRows = sig.stateIndices ? "S" : sequences;
  SmallVector<StringRef> stateDims = {stateRows, "Hv", "K", "V"};
  if (sig.writeIndices && !sig.stateIndices)
    return op->emitOpError()
           << "operand 'write_indices' needs 'state_indices' (the slots the "
              "sequences read)";
  if (sig.stateIndices && !sig.state)
    return op->emitOpError() << "operand 'state_indices' needs '"
                             << sig.stateName
                             << "', the pool of states [S, Hv, K, V]";

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
  if (sig.cuSeqlens) {
    auto qType = cast<RankedTensorType>(sig.q.getType());
    if (qType.getDimSize(0) != 1)
      return op->emitOpError()
             << "with 'cu_seqlens' the sequences are packed into one row: "
                "operand 'q' must have shape [1, total, H, K], but got "
             << qType;
    if (failed(contract.check("operand", "cu_seqlens",
                              sig.cuSeqlens.getType(), {"N + 1"})))
      return failure();
  }
  for (auto [name, indices] : {std::pair<StringRef, Value>{"state_indices",
                                                           sig.stateIndices},
                               {"write_indices", sig.writeIndices}})
    if (indices &&
        failed(contract.check("operand", name, indices.getType(), {sequences})))
      return failure();
  if (static_cast<bool>(sig.aLog) != static_cast<bool>(sig.dtBias))
    return op->emitOpError()
           << "raw gates need both 'a_log' and 'dt_bias', but got only "
           << (sig.aLog ? "'a_log'" : "'dt_bias'");
  for (auto [name, value] : {std::pair<StringRef, Value>{"a_log", sig.aLog},
                             {"dt_bias", sig.dtBias}}) {
    if (!value)
      continue;
    if (failed(contract.check("operand", name, value.getType(), {"Hv"})))
      return failure();
    if (Type actual = getTensorElementType(value.getType()); !actual.isF32())
      return op->emitOpError() << "operand '" << name
                               << "' must have element type f32, but got "
                               << actual;
  }
  for (auto [name, value] :
       {std::pair<StringRef, Value>{"cu_seqlens", sig.cuSeqlens},
        {"state_indices", sig.stateIndices},
        {"write_indices", sig.writeIndices}}) {
    if (!value)
      continue;
    Type actual = getTensorElementType(value.getType());
    if (!actual.isSignlessInteger(32))
      return op->emitOpError() << "operand '" << name
                               << "' must have element type i32, but got "
                               << actual;
  }
  SmallVector<StringRef> newStateDims =
      sig.perTokenStates ? withTokens({"Hv", "K", "V"}) : stateDims;
  if (failed(contract.check("result", "o", sig.o, withTokens({"Hv", "V"}))) ||
      failed(contract.check("result", sig.newStateName, sig.newState,
                            newStateDims)))
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
  if (Type actual = getTensorElementType(sig.g.getType());
      actual != f32 && !(sig.aLog && actual == elementType))
    return op->emitOpError()
           << (sig.aLog
                   ? "operand 'g' (the raw gate a) must have element type f32 "
                     "or the element type of 'v', but got "
                   : "operand 'g' (log of the forget gate) must have element "
                     "type f32, but got ")
           << actual;
  if (Type actual = getTensorElementType(sig.beta.getType());
      actual != f32 && actual != elementType)
    return op->emitOpError()
           << "operand 'beta' must have element type f32 or the element type "
              "of 'v' ("
           << elementType << "), but got " << actual;
  // States are stored in f32 or bf16 (the arithmetic is f32 either way);
  // the new state is stored like the state.
  Type bf16 = BFloat16Type::get(op->getContext());
  Type storage = getTensorElementType(sig.newState);
  if (sig.state) {
    Type actual = getTensorElementType(sig.state.getType());
    if (actual != f32 && actual != bf16)
      return op->emitOpError()
             << "operand '" << sig.stateName
             << "' must have element type f32 or bf16, but got " << actual;
    if (storage != actual)
      return op->emitOpError()
             << "result '" << sig.newStateName << "' must have the element "
             << "type of '" << sig.stateName << "' (" << actual
             << "), but got " << storage;
  }
  if (Type actual = getTensorElementType(sig.o); actual != elementType)
    return op->emitOpError() << "result 'o' must have the element type of 'v' ("
                             << elementType << "), but got " << actual;
  if (storage != f32 && storage != bf16)
    return op->emitOpError()
           << "result '" << sig.newStateName
           << "' must have element type f32 or bf16, but got " << storage;

  int64_t heads = contract.lookup("H");
  int64_t valueHeads = contract.lookup("Hv");
  for (auto [symbol, maximum] : {std::pair<StringRef, int64_t>{"H", kMaxHeads},
                                 {"Hv", kMaxHeads},
                                 {"K", kMaxHeadDim},
                                 {"V", kMaxHeadDim}})
    if (contract.lookup(symbol) > maximum)
      return op->emitOpError()
             << symbol << " = " << contract.lookup(symbol)
             << " exceeds the largest supported size " << maximum;
  if (sig.cuSeqlens) {
    int64_t count = contract.lookup("N");
    int64_t offsets = contract.lookup("N + 1");
    if (offsets == 0)
      return op->emitOpError() << "operand 'cu_seqlens' must have N + 1 >= 1 "
                                  "offsets, but got "
                               << sig.cuSeqlens.getType();
    if (!ShapedType::isDynamic(count) && !ShapedType::isDynamic(offsets) &&
        offsets != count + 1)
      return op->emitOpError()
             << "operand 'cu_seqlens' must have N + 1 = " << count + 1
             << " offsets (N = " << count << " sequences from the states), "
             << "but got " << sig.cuSeqlens.getType();
  }
  // A static empty batch has nothing to compute, and the lowerings index
  // its first sequence; a dynamic one may be empty at run time.
  if (contract.lookup("B") == 0)
    return op->emitOpError() << "the batch B must be positive when static, "
                                "but got 0 (operand 'v': "
                             << sig.v.getType() << ")";
  if (!std::isfinite(sig.scale))
    return op->emitOpError()
           << "attribute 'scale' must be finite, but got " << sig.scale;
  if (valueHeads % heads != 0)
    return op->emitOpError()
           << "value heads Hv = " << valueHeads
           << " must be a multiple of query/key heads H = " << heads;
  return success();
}

static int64_t groupSize(Value q, Value v) {
  int64_t heads =
      cast<RankedTensorType>(q.getType())
          .getDimSize(cast<RankedTensorType>(q.getType()).getRank() - 2);
  int64_t valueHeads =
      cast<RankedTensorType>(v.getType())
          .getDimSize(cast<RankedTensorType>(v.getType()).getRank() - 2);
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
                         "final_state",
                         getScale().convertToFloat(),
                         getCuSeqlens(),
                         getStateIndices(),
                         getWriteIndices(),
                         getALog(),
                         getDtBias()};
  if (failed(verifyDeltaRule(*this, sig, {"B", "T"})) ||
      failed(verifyCheckpoints()))
    return failure();
  return verifyScanStrategy(*this);
}

LogicalResult DeltaRuleOp::verifyCheckpoints() {
  std::optional<int64_t> every = getCheckpointEvery();
  Value checkpoints = getCheckpoints();
  if (!every) {
    if (checkpoints)
      return emitOpError() << "result 'checkpoints' needs the attribute "
                              "'checkpoint_every'";
    return success();
  }
  if (*every < 1)
    return emitOpError() << "attribute 'checkpoint_every' must be at least "
                            "1, but got "
                         << *every;
  if (!checkpoints)
    return emitOpError() << "attribute 'checkpoint_every' needs the result "
                            "'checkpoints'";
  auto type = dyn_cast<RankedTensorType>(checkpoints.getType());
  auto state = getFinalState().getType();
  auto v = cast<RankedTensorType>(getV().getType());
  // Dense: [B, C, Hv, K, V]; packed: [R, Hv, K, V].
  SmallVector<int64_t> expected;
  if (getCuSeqlens()) {
    expected = {ShapedType::kDynamic};
  } else {
    int64_t tokens = v.getDimSize(1);
    expected = {v.getDimSize(0), ShapedType::isDynamic(tokens)
                                     ? ShapedType::kDynamic
                                     : tokens / *every};
  }
  for (int64_t d = 1; d < 4; ++d)
    expected.push_back(state.getDimSize(d));
  auto describe = [&]() {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << (getCuSeqlens() ? "[R, Hv, K, V] = [" : "[B, T / N, Hv, K, V] = [");
    llvm::interleaveComma(expected, os, [&](int64_t size) {
      if (ShapedType::isDynamic(size))
        os << "?";
      else
        os << size;
    });
    os << "]";
    return text;
  };
  bool matches = type && type.getRank() == static_cast<int64_t>(expected.size());
  for (size_t d = 0; matches && d < expected.size(); ++d)
    matches = ShapedType::isDynamic(expected[d]) ||
              ShapedType::isDynamic(type.getDimSize(d)) ||
              type.getDimSize(d) == expected[d];
  if (!matches)
    return emitOpError() << "result 'checkpoints' must have shape "
                         << describe() << ", but got "
                         << checkpoints.getType();
  if (type.getElementType() != state.getElementType())
    return emitOpError() << "result 'checkpoints' must have the element type "
                            "of 'final_state' ("
                         << state.getElementType() << "), but got "
                         << type.getElementType();
  return success();
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
                         "new_state",
                         getScale().convertToFloat(),
                         /*cuSeqlens=*/Value(),
                         getStateIndices(),
                         getWriteIndices(),
                         getALog(),
                         getDtBias()};
  return verifyDeltaRule(*this, sig, {"B"});
}

int64_t DeltaRuleStepOp::getGroupSize() { return groupSize(getQ(), getV()); }

//===----------------------------------------------------------------------===//
// DeltaRuleVerifyOp
//===----------------------------------------------------------------------===//

LogicalResult DeltaRuleVerifyOp::verify() {
  DeltaRuleSignature sig{getQ(),
                         getK(),
                         getV(),
                         getG(),
                         getBeta(),
                         getState(),
                         "state",
                         getO().getType(),
                         getStates().getType(),
                         "states",
                         getScale().convertToFloat(),
                         /*cuSeqlens=*/Value(),
                         getStateIndices(),
                         /*writeIndices=*/Value(),
                         getALog(),
                         getDtBias(),
                         /*perTokenStates=*/true};
  if (failed(verifyDeltaRule(*this, sig, {"B", "T"})))
    return failure();
  int64_t tokens = cast<RankedTensorType>(getV().getType()).getDimSize(1);
  if (!ShapedType::isDynamic(tokens) && tokens > kMaxTokens)
    return emitOpError() << "verifies at most " << kMaxTokens
                         << " draft tokens, but got T = " << tokens;
  return success();
}

int64_t DeltaRuleVerifyOp::getGroupSize() {
  return groupSize(getQ(), getV());
}

//===----------------------------------------------------------------------===//
// GatedDeltaNetOp
//===----------------------------------------------------------------------===//

LogicalResult GatedDeltaNetOp::verify() {
  static constexpr StringLiteral names[] = {
      "W_query.weight", "W_key.weight", "W_value.weight", "out_proj.weight",
      "out_proj.bias",  "beta.weight",  "beta.bias",      "alpha.weight",
      "alpha.bias",     "gate.weight",  "gate.bias",      "log_alpha",
      "conv_k.weight",  "conv_k.bias",  "conv_v.weight",  "conv_v.bias",
      "conv_q.weight",  "conv_q.bias",  "norm.weight"};
  static_assert(std::size(names) == NumWeights, "one name per weight");
  if (failed(verifySizeAttrs(
          *this, {{"num_heads", static_cast<int64_t>(getNumHeads())}},
          kMaxHeads)) ||
      failed(verifyPositiveFinite(*this, "eps", getEps().convertToFloat())))
    return failure();
  if (getWeights().size() != NumWeights)
    return emitOpError() << "expects " << static_cast<unsigned>(NumWeights)
                         << " weights (the reference state_dict: "
                            "W_query.weight ... norm.weight), but got "
                         << getWeights().size();

  ShapeContract contract(*this, {"d_model", "d_out", "H", "D", "kernel"});
  using Dims = SmallVector<StringRef>;
  auto weightDims = [](unsigned w) -> Dims {
    switch (w) {
    case WQuery:
    case WKey:
    case WValue:
    case GateWeight:
      return {"d_out", "d_model"};
    case OutProjWeight:
      return {"d_out", "d_out"};
    case BetaWeight:
    case AlphaWeight:
      return {"H", "d_model"};
    case BetaBias:
    case AlphaBias:
    case LogAlpha:
      return {"H"};
    case ConvKWeight:
    case ConvVWeight:
    case ConvQWeight:
      return {"d_out", "one", "kernel"};
    case NormWeight:
      return {"D"};
    default:
      return {"d_out"};
    }
  };
  for (unsigned w : {ConvKWeight, ConvVWeight, ConvQWeight}) {
    auto type = dyn_cast<RankedTensorType>(getWeights()[w].getType());
    if (type && type.getRank() == 3 && type.getDimSize(1) != 1)
      return emitOpError() << names[w]
                           << " must be a depthwise kernel [d_out, 1, "
                              "kernel], but got "
                           << type;
  }
  if (failed(contract.check("operand", "x", getX().getType(),
                            {"B", "T", "d_model"})))
    return failure();
  for (unsigned w = 0; w < NumWeights; ++w)
    if (failed(contract.check("weight", names[w], getWeights()[w].getType(),
                              weightDims(w))))
      return failure();
  int64_t heads = static_cast<int64_t>(getNumHeads());
  if (contract.lookup("H") != heads)
    return emitOpError() << "num_heads = " << heads
                         << " must equal the heads of alpha.weight, "
                            "beta.weight and log_alpha ("
                         << contract.lookup("H") << ")";
  int64_t dOut = contract.lookup("d_out");
  if (dOut % heads != 0 || contract.lookup("D") * heads != dOut)
    return emitOpError() << "norm.weight must have the head dimension d_out / "
                            "num_heads = "
                         << dOut << " / " << heads << ", but has "
                         << contract.lookup("D");
  if (failed(contract.check("result", "y", getY().getType(),
                            {"B", "T", "d_out"})) ||
      failed(contract.check("result", "final_state", getFinalState().getType(),
                            {"B", "H", "D", "D"})))
    return failure();
  if (static_cast<bool>(getConvState()) != static_cast<bool>(getInitialState()))
    return emitOpError() << "expects both 'conv_state' and 'initial_state' "
                            "or neither";
  if (getInitialState() &&
      failed(contract.check("operand", "initial_state",
                            getInitialState().getType(), {"B", "H", "D", "D"})))
    return failure();
  // The conv state's sizes derive from the kernel and d_out rather than
  // being symbols of their own, so they are checked against a built type.
  int64_t history = contract.lookup("kernel") - 1;
  SmallVector<Value> convStates = {getFinalConvState()};
  if (getConvState())
    convStates.push_back(getConvState());
  for (Value convState : convStates) {
    auto type = dyn_cast<RankedTensorType>(convState.getType());
    bool ok = type && type.getRank() == 3 && type.getDimSize(1) == history &&
              type.getDimSize(2) == 3 * dOut;
    if (ok && !type.isDynamicDim(0) &&
        !ShapedType::isDynamic(contract.lookup("B")))
      ok = type.getDimSize(0) == contract.lookup("B");
    if (!ok)
      return emitOpError() << (convState == getConvState()
                                   ? "operand 'conv_state'"
                                   : "result 'final_conv_state'")
                           << " must be [B, kernel - 1, 3 d_out] = [B, "
                           << history << ", " << 3 * dOut << "], but got "
                           << convState.getType();
  }
  Type f32 = Float32Type::get(getContext());
  auto operandName = [&](size_t index) -> StringRef {
    if (index == 0)
      return "operand 'x'";
    if (index <= NumWeights)
      return names[index - 1];
    return index == NumWeights + 1 ? "operand 'conv_state'"
                                   : "operand 'initial_state'";
  };
  for (auto [index, value] : llvm::enumerate(getOperands())) {
    bool matrix = index >= 1 && index <= NumWeights &&
                  cast<RankedTensorType>(value.getType()).getRank() == 2;
    if (getTensorElementType(value.getType()) != f32 &&
        !(matrix &&
          isWeightMatrixElementType(getTensorElementType(value.getType()))))
      return emitOpError() << operandName(index) << " must have element type "
                           << (matrix ? "f32 or bf16" : "f32") << ", but got "
                           << getTensorElementType(value.getType());
  }
  for (Value result : getResults())
    if (getTensorElementType(result.getType()) != f32)
      return emitOpError() << "results must have element type f32, but got "
                           << getTensorElementType(result.getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Model building blocks
//===----------------------------------------------------------------------===//

/// All operands and results must be f32 tensors, except those named in
/// `except`.
bool mlir::gdn::isWeightMatrixElementType(Type type) {
  return type.isF32() || type.isBF16();
}

LogicalResult
mlir::gdn::verifyWeightMatrices(Operation *op,
                                ArrayRef<std::pair<StringRef, Value>> values) {
  for (auto [name, value] : values)
    if (!isWeightMatrixElementType(getTensorElementType(value.getType())))
      return op->emitOpError() << "'" << name
                               << "' must have element type f32 or bf16, but "
                                  "got "
                               << getTensorElementType(value.getType());
  return success();
}

LogicalResult
mlir::gdn::verifyF32(Operation *op,
                     ArrayRef<std::pair<StringRef, Value>> values) {
  Type f32 = Float32Type::get(op->getContext());
  for (auto [name, value] : values)
    if (getTensorElementType(value.getType()) != f32)
      return op->emitOpError()
             << "'" << name << "' must have element type f32, but got "
             << getTensorElementType(value.getType());
  return success();
}

LogicalResult RmsNormOp::verify() {
  if (failed(verifyPositiveFinite(*this, "eps", getEps().convertToFloat())))
    return failure();
  auto type = cast<RankedTensorType>(getX().getType());
  if (type.getRank() < 1 || ShapedType::isDynamic(type.getShape().back()))
    return emitOpError() << "operand 'x' must have a static last dimension, "
                            "but got "
                         << type;
  ShapeContract contract(*this, {"D"});
  if (failed(contract.check("operand", "weight", getWeight().getType(), {"D"})))
    return failure();
  if (contract.lookup("D") != type.getShape().back())
    return emitOpError() << "operand 'weight' must have shape [D] = ["
                         << type.getShape().back() << "] (the last dimension "
                         << "of 'x'), but got " << getWeight().getType();
  return verifyF32(*this, {{"x", getX()}, {"weight", getWeight()}});
}

LogicalResult SwiGluMlpOp::verify() {
  ShapeContract contract(*this, {"D", "F"});
  if (failed(
          contract.check("operand", "x", getX().getType(), {"B", "T", "D"})) ||
      failed(
          contract.check("weight", "gate", getGate().getType(), {"F", "D"})) ||
      failed(contract.check("weight", "up", getUp().getType(), {"F", "D"})) ||
      failed(contract.check("weight", "down", getDown().getType(), {"D", "F"})))
    return failure();
  if (failed(verifyWeightMatrices(
          *this, {{"gate", getGate()}, {"up", getUp()}, {"down", getDown()}})))
    return failure();
  return verifyF32(*this, {{"x", getX()}, {"y", getY()}});
}

LogicalResult EmbedOp::verify() {
  ShapeContract contract(*this, {"vocab", "D"});
  if (failed(
          contract.check("operand", "ids", getIds().getType(), {"B", "T"})) ||
      failed(contract.check("operand", "table", getTable().getType(),
                            {"vocab", "D"})) ||
      failed(contract.check("result", "y", getY().getType(), {"B", "T", "D"})))
    return failure();
  if (!getTensorElementType(getIds().getType()).isInteger(64))
    return emitOpError() << "operand 'ids' must have element type i64, but got "
                         << getTensorElementType(getIds().getType());
  if (failed(verifyWeightMatrices(*this, {{"table", getTable()}})))
    return failure();
  return verifyF32(*this, {{"y", getY()}});
}

LogicalResult LmHeadOp::verify() {
  ShapeContract contract(*this, {"vocab", "D"});
  if (failed(
          contract.check("operand", "x", getX().getType(), {"B", "T", "D"})) ||
      failed(contract.check("weight", "weight", getWeight().getType(),
                            {"vocab", "D"})) ||
      failed(contract.check("result", "logits", getLogits().getType(),
                            {"B", "T", "vocab"})))
    return failure();
  if (failed(verifyWeightMatrices(*this, {{"weight", getWeight()}})))
    return failure();
  return verifyF32(*this, {{"x", getX()}, {"logits", getLogits()}});
}

//===----------------------------------------------------------------------===//
// CausalAttentionOp
//===----------------------------------------------------------------------===//

bool CausalAttentionOp::fitsTensorCoreKernel(int64_t qkDim, int64_t valueDim) {
  return qkDim >= 1 && qkDim <= 256 && valueDim >= 1 && valueDim <= 128;
}

LogicalResult CausalAttentionOp::verify() {
  ShapeContract contract(*this, {"d", "e"});
  if (failed(contract.check("operand", "q", getQ().getType(),
                            {"B", "T", "n", "d"})) ||
      failed(contract.check("operand", "k", getK().getType(),
                            {"B", "S", "nk", "d"})) ||
      failed(contract.check("operand", "v", getV().getType(),
                            {"B", "S", "nk", "e"})) ||
      failed(contract.check("result", "o", getO().getType(),
                            {"B", "T", "n", "e"})))
    return failure();
  int64_t heads = contract.lookup("n"), keyHeads = contract.lookup("nk");
  if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(keyHeads))
    return emitOpError() << "the head counts n and nk must be static, but got "
                         << getQ().getType() << " and " << getK().getType();
  if (keyHeads < 1 || heads % keyHeads != 0)
    return emitOpError() << "the query heads (n = " << heads
                         << ") must be a multiple of the key heads (nk = "
                         << keyHeads << ")";
  int64_t tokens = contract.lookup("T"), keys = contract.lookup("S");
  if (!ShapedType::isDynamic(tokens) && !ShapedType::isDynamic(keys) &&
      tokens > keys)
    return emitOpError() << "the queries are the last T of the S positions, "
                            "so T <= S, but got T = "
                         << tokens << " and S = " << keys;
  float scale = getScale().convertToFloat();
  if (!std::isfinite(scale))
    return emitOpError() << "scale must be finite, but got " << scale;
  if (getBlock() < 1 || getBlock() > 1024)
    return emitOpError() << "block must be 1..1024, but got " << getBlock();
  return verifyF32(
      *this, {{"q", getQ()}, {"k", getK()}, {"v", getV()}, {"o", getO()}});
}

//===----------------------------------------------------------------------===//
// MlaOp
//===----------------------------------------------------------------------===//

LogicalResult MlaOp::verify() {
  int64_t n = static_cast<int64_t>(getNumHeads());
  int64_t qLora = static_cast<int64_t>(getQLoraRank());
  int64_t kvLora = static_cast<int64_t>(getKvLoraRank());
  int64_t nope = static_cast<int64_t>(getQkNopeHeadDim());
  int64_t rope = static_cast<int64_t>(getQkRopeHeadDim());
  int64_t vDim = static_cast<int64_t>(getVHeadDim());
  if (qLora < 0)
    return emitOpError() << "q_lora_rank must be >= 0, but got " << qLora;
  if (failed(verifyAttentionBlock(*this, getAttentionBlockAttr())))
    return failure();
  // A group's keys are one thread's serial sum: more only cost time.
  constexpr int64_t kMaxKeySplit = 1024;
  if (std::optional<uint64_t> split = getKeySplit();
      split && (*split < 1 || *split > kMaxKeySplit))
    return emitOpError() << "key_split must be 1.." << kMaxKeySplit
                         << ", but got " << static_cast<int64_t>(*split);
  if (failed(verifySizeAttrs(*this,
                             {{"num_heads", n},
                              {"q_lora_rank", qLora},
                              {"kv_lora_rank", kvLora},
                              {"qk_nope_head_dim", nope},
                              {"qk_rope_head_dim", rope},
                              {"v_head_dim", vDim}},
                             kMaxLayerDim)) ||
      failed(verifyPositiveFinite(*this, "rope_theta",
                                  getRopeTheta().convertToFloat())) ||
      failed(verifyPositiveFinite(*this, "eps", getEps().convertToFloat())))
    return failure();
  if (rope % 2 != 0)
    return emitOpError() << "qk_rope_head_dim must be even (rotate-half "
                            "RoPE), but got "
                         << rope;
  SmallVector<std::pair<StringRef, SmallVector<int64_t>>> expected;
  int64_t qk = nope + rope;
  auto type = dyn_cast<RankedTensorType>(getX().getType());
  if (!type || type.getRank() != 3 || type.isDynamicDim(2))
    return emitOpError() << "operand 'x' must be [B, T, d_model] with a "
                            "static d_model, but got "
                         << getX().getType();
  int64_t d = type.getDimSize(2);
  if (qLora == 0) {
    expected.push_back({"q_proj.weight", {n * qk, d}});
  } else {
    expected.push_back({"q_a_proj.weight", {qLora, d}});
    expected.push_back({"q_a_layernorm.weight", {qLora}});
    expected.push_back({"q_b_proj.weight", {n * qk, qLora}});
  }
  expected.push_back({"kv_a_proj_with_mqa.weight", {kvLora + rope, d}});
  expected.push_back({"kv_a_layernorm.weight", {kvLora}});
  expected.push_back({"kv_b_proj.weight", {n * (nope + vDim), kvLora}});
  expected.push_back({"o_proj.weight", {d, n * vDim}});
  if (getWeights().size() != expected.size())
    return emitOpError() << "expects " << expected.size()
                         << " weights for q_lora_rank = " << qLora
                         << ", but got " << getWeights().size();
  for (auto [weight, entry] : llvm::zip_equal(getWeights(), expected)) {
    auto weightType = cast<RankedTensorType>(weight.getType());
    bool elementOk = weightType.getElementType().isF32() ||
                     (entry.second.size() == 2 &&
                      isWeightMatrixElementType(weightType.getElementType()));
    if (weightType.getShape() != ArrayRef<int64_t>(entry.second) || !elementOk)
      return emitOpError() << "weight '" << entry.first << "' must be "
                           << RankedTensorType::get(
                                  entry.second, Float32Type::get(getContext()))
                           << ", but got " << weightType;
  }
  ShapeContract contract(*this, {});
  if (failed(
          contract.check("operand", "x", getX().getType(), {"B", "T", "d"})) ||
      failed(contract.check("result", "y", getY().getType(), {"B", "T", "d"})))
    return failure();
  if (static_cast<bool>(getPastLatent()) != static_cast<bool>(getPastKRope()))
    return emitOpError() << "expects both 'past_latent' and 'past_k_rope' "
                            "or neither";
  if (getInPlaceCache() && !getPastLatent())
    return emitOpError() << "in_place_cache needs the caches to write into: "
                            "cache(%latent, %k_rope)";
  // In place, the caches hold the P cached rows and room for the T new ones
  // ("S" = P + T rows), and the results are the whole caches.
  StringRef cacheRows = getInPlaceCache() ? "S" : "P";
  StringRef resultRows = getInPlaceCache() ? "S" : "T";
  if (getPastLatent() &&
      (failed(contract.check("operand", "past_latent",
                             getPastLatent().getType(),
                             {"B", cacheRows, "kv_lora_rank"})) ||
       failed(contract.check("operand", "past_k_rope", getPastKRope().getType(),
                             {"B", cacheRows, "qk_rope_head_dim"}))))
    return failure();
  if (failed(contract.check("result", "latent", getLatent().getType(),
                            {"B", resultRows, "kv_lora_rank"})) ||
      failed(contract.check("result", "k_rope", getKRope().getType(),
                            {"B", resultRows, "qk_rope_head_dim"})))
    return failure();
  if (failed(verifyRoomForNewRows(*this, contract)))
    return failure();
  auto lastDim = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape().back();
  };
  if (lastDim(getLatent()) != kvLora || lastDim(getKRope()) != rope)
    return emitOpError() << "results 'latent' and 'k_rope' must end in "
                            "kv_lora_rank = "
                         << kvLora << " and qk_rope_head_dim = " << rope;
  SmallVector<std::pair<StringRef, Value>> values = {{"x", getX()},
                                                     {"y", getY()}};
  if (getPastLatent())
    values.append(
        {{"past_latent", getPastLatent()}, {"past_k_rope", getPastKRope()}});
  return verifyF32(*this, values);
}
