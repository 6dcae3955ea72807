//===- QwenLayerOps.cpp - the layers of Qwen3.5 and Qwen3-Next ------------===//

#include "ShapeContract.h"
#include "gdn/Dialect/Gdn/IR/GdnOps.h"

using namespace mlir;
using namespace mlir::gdn;

/// Beyond any published model, far from overflow in the lowerings.
static constexpr int64_t kMaxQwenSize = int64_t(1) << 17;

/// Checks `weights` against `expected` (name, shape) one by one: exactly
/// that shape, f32 (or bf16 for matrices).
static LogicalResult
verifyWeights(Operation *op, ValueRange weights,
              ArrayRef<std::pair<StringRef, SmallVector<int64_t>>> expected) {
  if (weights.size() != expected.size())
    return op->emitOpError() << "expects " << expected.size()
                             << " weights, but got " << weights.size();
  Type f32 = Float32Type::get(op->getContext());
  for (auto [weight, entry] : llvm::zip_equal(weights, expected)) {
    auto type = cast<RankedTensorType>(weight.getType());
    bool elementOk = type.getElementType() == f32 ||
                     (entry.second.size() == 2 &&
                      isWeightMatrixElementType(type.getElementType()));
    if (type.getShape() != ArrayRef<int64_t>(entry.second) || !elementOk)
      return op->emitOpError() << "weight '" << entry.first << "' must be "
                               << RankedTensorType::get(entry.second, f32)
                               << ", but got " << type;
  }
  return success();
}

/// `x` must be [B, T, d] with a static d; returns d.
static FailureOr<int64_t> modelWidth(Operation *op, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() != 3 || type.isDynamicDim(2))
    return op->emitOpError() << "operand 'x' must be [B, T, d_model] with a "
                                "static d_model, but got "
                             << type;
  return type.getDimSize(2);
}

//===----------------------------------------------------------------------===//
// QwenGatedDeltaNetOp
//===----------------------------------------------------------------------===//

ArrayRef<StringRef> QwenGatedDeltaNetOp::weightNames(ProjectionLayout layout) {
  static const StringRef split[] = {"in_proj_qkv.weight",
                                    "in_proj_z.weight",
                                    "in_proj_b.weight",
                                    "in_proj_a.weight",
                                    "conv1d.weight",
                                    "dt_bias",
                                    "A_log",
                                    "norm.weight",
                                    "out_proj.weight"};
  static const StringRef grouped[] = {"in_proj_qkvz.weight",
                                      "in_proj_ba.weight",
                                      "conv1d.weight",
                                      "dt_bias",
                                      "A_log",
                                      "norm.weight",
                                      "out_proj.weight"};
  if (layout == ProjectionLayout::split)
    return split;
  return grouped;
}

int64_t QwenGatedDeltaNetOp::getConvChannels() {
  return 2 * static_cast<int64_t>(getNumKeyHeads() * getKeyHeadDim()) +
         static_cast<int64_t>(getNumValueHeads() * getValueHeadDim());
}

LogicalResult QwenGatedDeltaNetOp::verify() {
  int64_t hk = getNumKeyHeads(), hv = getNumValueHeads();
  int64_t dk = getKeyHeadDim(), dv = getValueHeadDim();
  if (failed(verifySizeAttrs(*this,
                             {{"num_key_heads", hk},
                              {"num_value_heads", hv},
                              {"key_head_dim", dk},
                              {"value_head_dim", dv}},
                             kMaxQwenSize)) ||
      failed(verifyPositiveFinite(*this, "eps", getEps().convertToFloat())))
    return failure();
  if (hv % hk != 0)
    return emitOpError() << "num_value_heads = " << hv
                         << " must be a multiple of num_key_heads = " << hk;
  FailureOr<int64_t> width = modelWidth(*this, getX());
  if (failed(width))
    return failure();
  int64_t d = *width, channels = getConvChannels();
  ArrayRef<StringRef> names = weightNames(getLayout());
  size_t convIndex = llvm::find(names, "conv1d.weight") - names.begin();
  auto convType =
      convIndex < getWeights().size()
          ? dyn_cast<RankedTensorType>(getWeights()[convIndex].getType())
          : RankedTensorType();
  if (!convType || convType.getRank() != 3 || convType.isDynamicDim(2) ||
      convType.getDimSize(2) < 1)
    return emitOpError() << "expects the weights "
                         << llvm::join(weightNames(getLayout()), ", ")
                         << " with conv1d.weight [" << channels
                         << ", 1, kernel]";
  int64_t kernel = convType.getDimSize(2);
  SmallVector<std::pair<StringRef, SmallVector<int64_t>>> expected;
  if (getLayout() == ProjectionLayout::split)
    expected = {{names[0], {2 * hk * dk + hv * dv, d}},
                {names[1], {hv * dv, d}},
                {names[2], {hv, d}},
                {names[3], {hv, d}}};
  else
    expected = {{names[0], {2 * hk * dk + 2 * hv * dv, d}},
                {names[1], {2 * hv, d}}};
  expected.append({{"conv1d.weight", {channels, 1, kernel}},
                   {"dt_bias", {hv}},
                   {"A_log", {hv}},
                   {"norm.weight", {dv}},
                   {"out_proj.weight", {d, hv * dv}}});
  if (failed(verifyWeights(*this, getWeights(), expected)))
    return failure();

  ShapeContract contract(*this, {});
  if (failed(contract.check("operand", "x", getX().getType(),
                            {"B", "T", "d_model"})) ||
      failed(contract.check("result", "y", getY().getType(),
                            {"B", "T", "d_model"})))
    return failure();
  if (static_cast<bool>(getConvState()) != static_cast<bool>(getInitialState()))
    return emitOpError() << "expects both 'conv_state' and 'initial_state' "
                            "or neither";
  // The states' sizes derive from the attributes.
  int64_t batch = contract.lookup("B");
  auto checkState = [&](StringRef what, Value value,
                        ArrayRef<int64_t> inner) -> LogicalResult {
    auto type = cast<RankedTensorType>(value.getType());
    bool ok = type.getRank() == static_cast<int64_t>(inner.size()) + 1 &&
              type.getShape().drop_front() == inner &&
              type.getElementType().isF32();
    if (ok && !type.isDynamicDim(0) && !ShapedType::isDynamic(batch))
      ok = type.getDimSize(0) == batch;
    if (ok)
      return success();
    std::string shape;
    llvm::raw_string_ostream os(shape);
    os << "[B";
    for (int64_t size : inner)
      os << ", " << size;
    os << "]";
    return emitOpError() << what << " must be " << shape << " (f32), but got "
                         << type;
  };
  SmallVector<int64_t> stateShape = {hv, dk, dv};
  SmallVector<int64_t> convShape = {kernel - 1, channels};
  if (failed(checkState("result 'final_state'", getFinalState(), stateShape)) ||
      failed(checkState("result 'final_conv_state'", getFinalConvState(),
                        convShape)))
    return failure();
  if (getInitialState() &&
      (failed(checkState("operand 'initial_state'", getInitialState(),
                         stateShape)) ||
       failed(checkState("operand 'conv_state'", getConvState(), convShape))))
    return failure();
  return verifyF32(*this, {{"x", getX()}, {"y", getY()}});
}

//===----------------------------------------------------------------------===//
// GatedAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult GatedAttentionOp::verify() {
  int64_t h = getNumHeads(), hkv = getNumKvHeads(), dim = getHeadDim();
  int64_t rotary = getRotaryDim();
  if (failed(verifySizeAttrs(
          *this, {{"num_heads", h}, {"num_kv_heads", hkv}, {"head_dim", dim}},
          kMaxQwenSize)) ||
      failed(verifyPositiveFinite(*this, "rope_theta",
                                  getRopeTheta().convertToFloat())) ||
      failed(verifyPositiveFinite(*this, "eps", getEps().convertToFloat())) ||
      failed(verifyAttentionBlock(*this, getAttentionBlockAttr())))
    return failure();
  if (h % hkv != 0)
    return emitOpError() << "num_heads = " << h
                         << " must be a multiple of num_kv_heads = " << hkv;
  if (rotary > dim || rotary % 2 != 0)
    return emitOpError() << "rotary_dim must be even and at most head_dim = "
                         << dim << ", but got " << rotary;
  FailureOr<int64_t> width = modelWidth(*this, getX());
  if (failed(width))
    return failure();
  int64_t d = *width;
  if (failed(verifyWeights(*this, getWeights(),
                           {{"q_proj.weight", {2 * h * dim, d}},
                            {"k_proj.weight", {hkv * dim, d}},
                            {"v_proj.weight", {hkv * dim, d}},
                            {"o_proj.weight", {d, h * dim}},
                            {"q_norm.weight", {dim}},
                            {"k_norm.weight", {dim}}})))
    return failure();
  ShapeContract contract(*this, {"Hkv", "D"});
  if (failed(contract.check("operand", "x", getX().getType(),
                            {"B", "T", "d_model"})) ||
      failed(contract.check("result", "y", getY().getType(),
                            {"B", "T", "d_model"})))
    return failure();
  if (static_cast<bool>(getPastKeys()) != static_cast<bool>(getPastValues()))
    return emitOpError() << "expects both 'past_keys' and 'past_values' or "
                            "neither";
  if (getInPlaceCache() && !getPastKeys())
    return emitOpError() << "in_place_cache needs the caches to write into: "
                            "cache(%keys, %values)";
  // In place, the caches hold the P cached rows and room for the T new ones
  // ("S" = P + T rows), and the results are the whole caches.
  StringRef cacheRows = getInPlaceCache() ? "S" : "P";
  StringRef resultRows = getInPlaceCache() ? "S" : "T";
  if (failed(contract.check("result", "keys", getKeys().getType(),
                            {"B", resultRows, "Hkv", "D"})) ||
      failed(contract.check("result", "values", getValues().getType(),
                            {"B", resultRows, "Hkv", "D"})))
    return failure();
  if (contract.lookup("Hkv") != hkv || contract.lookup("D") != dim)
    return emitOpError() << "results 'keys' and 'values' must be [B, "
                         << resultRows << ", " << hkv << ", " << dim
                         << "] (num_kv_heads, head_dim), but got "
                         << getKeys().getType();
  SmallVector<std::pair<StringRef, Value>> values = {{"x", getX()},
                                                     {"y", getY()},
                                                     {"keys", getKeys()},
                                                     {"values", getValues()}};
  if (getPastKeys()) {
    if (failed(contract.check("operand", "past_keys", getPastKeys().getType(),
                              {"B", cacheRows, "Hkv", "D"})) ||
        failed(contract.check("operand", "past_values",
                              getPastValues().getType(),
                              {"B", cacheRows, "Hkv", "D"})) ||
        failed(verifyRoomForNewRows(*this, contract)))
      return failure();
    values.append(
        {{"past_keys", getPastKeys()}, {"past_values", getPastValues()}});
  }
  return verifyF32(*this, values);
}
